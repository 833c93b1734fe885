# tools/bench/host_counts.sh — sourced by startup.sh and soak.sh: a busybox
# rootfs for benchmark runs, and counters of everything a corral run creates
# on the host (a run that leaks leaves one of them higher).
# The counters read: $corral (the binary), $uid_range (LO-HI, the bench's own
# UIDs), $state (the runs' state dir), $R (the rootfs).

# make_busybox_rootfs DIR: busybox-static and its applets, /etc/passwd, /tmp.
make_busybox_rootfs() {
  local R=$1 a
  mkdir -p "$R"/{bin,etc,proc,dev,tmp,workspace,root}
  chmod 1777 "$R/tmp"
  cp /bin/busybox "$R/bin/busybox"
  for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "$R/bin/$a"; done
  echo 'root:x:0:0:root:/root:/bin/sh' > "$R/etc/passwd"
  echo 'root:x:0:' > "$R/etc/group"
}

count_mounts() { wc -l < /proc/self/mountinfo; }
count_netns() { for f in /proc/[0-9]*/ns/net; do readlink "$f" 2>/dev/null; done | sort -u | wc -l; }
cgroup_mounts() { awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i+1) ~ /^cgroup2?$/) print $5; break } }' /proc/self/mountinfo; }
count_cgroups() {
  local n=0 mp
  for mp in $(cgroup_mounts); do
    [ -d "$mp/corral" ] && n=$((n + $(find "$mp/corral" -mindepth 1 -maxdepth 1 -type d | wc -l)))
  done
  echo $n
}
count_dir() { if [ -d "$1" ]; then find "$1" -mindepth 1 -maxdepth 1 | wc -l; else echo 0; fi; }
count_uid_procs() {   # processes whose real/effective/saved/fs uid is in the bench's range
  local lo=${uid_range%-*} hi=${uid_range#*-}
  awk -v lo="$lo" -v hi="$hi" '/^Uid:/ { for (i = 2; i <= 5; i++) if ($i >= lo && $i <= hi) { n++; break } } END { print n+0 }' \
    /proc/[0-9]*/status 2>/dev/null
}
count_corral_procs() { local n=0 p; for p in /proc/[0-9]*/exe; do [ "$(readlink "$p" 2>/dev/null)" = "$(readlink -f "$corral")" ] && n=$((n+1)); done; echo $n; }
count_corral_fds() {  # fds anywhere on the host that point at corral's state, scratch, locks or cgroups
  find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 -printf '%l\n' 2>/dev/null |
    grep -c -e '/run/corral' -e '/corral/' -e "$state" -e "$R" || true
}
snapshot() {
  echo "mounts=$(count_mounts) netns=$(count_netns) corral_cgroups=$(count_cgroups)" \
       "locks=$(count_dir /run/corral/uids) scratch=$(count_dir /run/corral/scratch)" \
       "uid_procs=$(count_uid_procs) corral_procs=$(count_corral_procs) corral_fds=$(count_corral_fds) own_fds=$(ls /proc/$$/fd | wc -l)"
}
