#!/usr/bin/env bash
# tools/bench/startup.sh — sandbox startup benchmark and leak check.
#
# 1. Startup: median wall time of start → exit → teardown of /bin/true, in one
#    invocation, alternating order (round r starts at config r mod the number of configs), for
#      corral   corral run --rootfs R -- /bin/true        (its teardown is verified
#                                                      by corral before it exits)
#      bwrap    bwrap --unshare-all --die-with-parent --ro-bind R / --proc /proc --dev /dev /bin/true
#      unshare  unshare --pid --mount --net --ipc --uts --cgroup --fork --mount-proc=R/proc chroot R /bin/true
#      floor    startup-floor R/bin/true  (static; clone3 with the same namespaces,
#               execve, exit, reap, nothing else: the kernel's lower bound for
#               any launcher that starts as a fresh process)
#      load     corral --version  (loading and exiting the corral binary, no
#               sandbox: what any run pays before its first step)
#      exec     R/bin/true, no namespaces (starting and exiting a small static
#               program: the part of floor that corral's own start replaces)
#      sexec    corral exec SESSION -- /bin/true, into a session started once
#               before the timing (corral session start --rootfs R): a new
#               PID and mount namespace in the live sandbox, the command, its
#               status back over the session's socket
#      cexec    corral-exec SESSION -- /bin/true: the same exec through the
#               small client beside corral (tools/exec_main.cpp), when built
#    on the same busybox-static rootfs R. Prints medians (p10/p90/min/max too),
#    the corral/bwrap ratio (issue 33: target ≤ 2.0, goal 1.5), the exec
#    ratios (target ≤ 0.5, goal 0.3) and floor + load - exec, the least
#    a fresh corral process per run could take before doing any sandbox work.
# 2. Leaks: 200 sequential corral runs; counts of mounts, network namespaces,
#    corral cgroups, corral locks/scratch dirs, processes of the bench's UID
#    range, corral processes and corral-related open fds, before and after;
#    PASS iff all are equal.
#
# Usage (root): tools/bench/startup.sh [--runs N] [--leak-runs N] [--corral PATH] [--baseline PATH]
#   default: --runs 30 --leak-runs 200 --corral $CORRAL_BIN or build-test/tools/corral
#   --baseline PATH: a second corral binary (e.g. main's) timed as one more
#   config, "baseline", alternating with the others (corral run and --version).
# Not a test: figures depend on the machine; compare configs within one invocation.
set -euo pipefail

runs=30
leak_runs=200
corral=${CORRAL_BIN:-}
baseline=
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --leak-runs) leak_runs=$2; shift 2 ;;
    --corral) corral=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) echo "startup.sh: unknown argument '$1' (accepted: --runs N, --leak-runs N, --corral PATH, --baseline PATH)" >&2; exit 2 ;;
  esac
done

here=$(cd "$(dirname "$0")" && pwd)
. "$here/host_counts.sh"
repo=$(cd "$here/../.." && pwd)
if [ -z "$corral" ]; then corral=$repo/build-test/tools/corral; fi
[ "$(id -u)" -eq 0 ] || { echo "startup.sh: must run as root (corral run, bwrap and unshare create namespaces)" >&2; exit 2; }
[ -x "$corral" ] || { echo "startup.sh: corral binary not found at $corral (build it, or pass --corral PATH)" >&2; exit 2; }
[ -z "$baseline" ] || [ -x "$baseline" ] || { echo "startup.sh: --baseline $baseline: not an executable" >&2; exit 2; }
for p in bwrap unshare chroot cc /bin/busybox; do
  command -v "$p" >/dev/null || { echo "startup.sh: $p is missing (tools/install-deps.sh)" >&2; exit 2; }
done

work=$(mktemp -d /tmp/corral-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
uid_range=1900200000-1900200999   # the bench's own UIDs, so its process count is exact

R=$work/rootfs
make_busybox_rootfs "$R"

cc -O2 -o "$work/timer" "$here/startup-timer.c"
cc -O2 -static -o "$work/startup-floor" "$here/startup-floor.c"
state=$work/state
printf '%s\0' "$corral" run --rootfs "$R" --state-dir "$state" --uid-range "$uid_range" -- /bin/true > "$work/corral.argv"
printf '%s\0' "$(command -v bwrap)" --unshare-all --die-with-parent --ro-bind "$R" / --proc /proc --dev /dev /bin/true > "$work/bwrap.argv"
printf '%s\0' "$(command -v unshare)" --pid --mount --net --ipc --uts --cgroup --fork --mount-proc="$R/proc" \
  "$(command -v chroot)" "$R" /bin/true > "$work/unshare.argv"
printf '%s\0' "$work/startup-floor" "$R/bin/true" > "$work/floor.argv"
printf '%s\0' "$corral" --version > "$work/load.argv"
printf '%s\0' "$R/bin/true" > "$work/exec.argv"
session=$("$corral" session start --quiet --rootfs "$R" --state-dir "$state" --uid-range "$uid_range")
trap '"$corral" session stop --state-dir "$state" "$session" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
printf '%s\0' "$corral" exec --state-dir "$state" "$session" -- /bin/true > "$work/sexec.argv"
configs=(corral bwrap unshare floor load exec sexec)
# corral-exec, the exec client alone (tools/exec_main.cpp), beside corral.
corral_exec=$(dirname "$corral")/corral-exec
if [ -x "$corral_exec" ]; then
  printf '%s\0' "$corral_exec" --state-dir "$state" "$session" -- /bin/true > "$work/cexec.argv"
  configs+=(cexec)
fi
if [ -n "$baseline" ]; then
  printf '%s\0' "$baseline" run --rootfs "$R" --state-dir "$state" --uid-range "$uid_range" -- /bin/true > "$work/baseline.argv"
  printf '%s\0' "$baseline" --version > "$work/bload.argv"
  configs+=(baseline bload)
fi
timer_args=()
for c in "${configs[@]}"; do timer_args+=("$c" "$work/$c.argv"); done

echo "== startup: $runs runs each (+3 warm-up), alternating; wall ms from spawn to reaped exit"
for c in "${configs[@]}"; do tr '\0' ' ' < "$work/$c.argv"; echo; done
echo "machine: $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/timer" "$runs" 3 "${timer_args[@]}" > "$work/startup.txt"
printf '%-8s %5s %9s %9s %9s %9s %9s\n' config runs median p10 p90 min max
while read -r name n med p10 p90 min max; do
  printf '%-8s %5s %9s %9s %9s %9s %9s\n' "$name" "$n" "$med" "$p10" "$p90" "$min" "$max"
done < "$work/startup.txt"
awk '$1=="corral"{c=$3} $1=="bwrap"{b=$3} $1=="unshare"{u=$3} $1=="floor"{f=$3} $1=="load"{l=$3} $1=="exec"{e=$3} $1=="sexec"{x=$3} $1=="cexec"{y=$3}
     END{printf "corral/bwrap = %.2f (target <= 2.00, i.e. %.2f ms; goal 1.50)   corral/unshare = %.2f   floor/bwrap = %.2f\n", c/b, 2.0*b, c/u, f/b;
         printf "sexec/bwrap = %.2f (target <= 0.50, i.e. %.2f ms; goal 0.30): corral exec into a live session vs a fresh bwrap\n", x/b, 0.5*b;
         if (y > 0) printf "cexec/bwrap = %.2f   cexec/sexec = %.2f: corral-exec, the small client, into the same session\n", y/b, y/x;
         printf "floor + load - exec = %.2f ms = %.2f x bwrap: the namespaces plus loading corral, before any sandbox work\n", f+l-e, (f+l-e)/b}' "$work/startup.txt"
[ -z "$baseline" ] || awk '$1=="corral"{c=$3} $1=="baseline"{b=$3} $1=="load"{l=$3} $1=="bload"{bl=$3}
     END{printf "corral/baseline = %.2f (run)   %.2f (--version)\n", c/b, l/bl}' "$work/startup.txt"

"$corral" session stop --state-dir "$state" "$session" >/dev/null 2>&1 ||
  echo "startup.sh: stopping session $session failed" >&2

# --- leak check (counters: host_counts.sh) ---
echo
echo "== leak check: $leak_runs sequential runs of: $(tr '\0' ' ' < "$work/corral.argv")"
before=$(snapshot)
failures=0
for ((i = 0; i < leak_runs; i++)); do
  "$corral" run --rootfs "$R" --state-dir "$state" --uid-range "$uid_range" -- /bin/true >/dev/null 2>"$work/last.err" ||
    { failures=$((failures+1)); echo "run $i failed: $(head -c 300 "$work/last.err")"; }
done
after=$(snapshot)
echo "before: $before"
echo "after:  $after"
unclean=$(grep -L '"verdict": *"clean"' "$state"/runs/*/run.json 2>/dev/null | wc -l)
echo "runs: $leak_runs, failed: $failures, run records with a teardown verdict other than clean: $unclean"
if [ "$before" = "$after" ] && [ "$failures" -eq 0 ] && [ "$unclean" -eq 0 ]; then
  echo "leak check: PASS"
else
  echo "leak check: FAIL"
  exit 1
fi
