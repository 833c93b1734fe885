#!/bin/sh
# tools/bench/image-import.sh — `corral image import` of one uncompressed
# layer against `tar -x` of the same tar (docs/benchmarks.md, "Images:
# import throughput").
#
#   tools/bench/image-import.sh [-n RUNS] [-s SRC_DIR] [-w WORK_DIR] [-f] [CORRAL]
#
# Builds the input on this machine (tar -C SRC_DIR -cf layer.tar ., default
# /usr/share), reads it once so the page cache holds it, then runs the two
# commands alternately RUNS times (default 5), each into a fresh directory on
# WORK_DIR's file system and each ending in `sync`, so both pay for writing
# the tree back and a load that comes and goes hits both alike. Prints each
# run's wall time (the command and its sync) and CPU time (user + sys of the
# command: less at the mercy of other load on the disk), the medians and the
# ratios tar/corral (1.0 = as fast as tar). Root only (the import writes
# owners, as tar -x does as root).
#
# -f: each command writes into a fresh ext4 file system, made (mkfs.ext4) on a
# loop device over a file in WORK_DIR and unmounted after its sync. Without
# it, both write into WORK_DIR's own file system, where the tree the run
# before removed makes ext4's allocator slower for whoever comes next (run to
# run spread of 3-5x was seen on this machine's disk); with it, every command
# starts from the same empty file system, on WORK_DIR's disk (or memory, for
# a WORK_DIR on tmpfs).
set -eu

runs=5 src=/usr/share work=/var/tmp/corral-bench-import fresh=
while getopts n:s:w:f o; do
    case $o in
        n) runs=$OPTARG ;;
        s) src=$OPTARG ;;
        w) work=$OPTARG ;;
        f) fresh=1 ;;
        *) echo "usage: $0 [-n RUNS] [-s SRC_DIR] [-w WORK_DIR] [-f] [CORRAL]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
corral=${1:-build/tools/corral}
case $runs in ''|*[!0-9]*|0) echo "$0: -n $runs: expected a positive number of runs" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "$0: run as root (tar -x and the import both keep owners)" >&2; exit 2; }
[ -x "$corral" ] || { echo "$0: $corral: not an executable; give the corral binary" >&2; exit 2; }
[ -d "$src" ] || { echo "$0: -s $src: not a directory" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "$0: needs /usr/bin/time (Debian: time)" >&2; exit 2; }

mkdir -p "$work"
layer=$work/layer.tar
if [ ! -s "$layer" ]; then
    tar -C "$src" -cf "$layer.tmp" . 2>/dev/null || [ -s "$layer.tmp" ]
    mv "$layer.tmp" "$layer"
fi
cat "$layer" >/dev/null
echo "input: $layer, $(du -m "$layer" | cut -f1) MiB, $(tar -tf "$layer" | wc -l) entries, $(tar -tvf "$layer" | grep -c '^d') directories"

now() { date +%s.%N; }
# out: where the command writes (a fresh ext4 with -f, else WORK_DIR itself).
out=$work
if [ -n "$fresh" ]; then
    command -v mkfs.ext4 >/dev/null || { echo "$0: -f needs mkfs.ext4 (Debian: e2fsprogs)" >&2; exit 2; }
    out=$work/mnt
    mkdir -p "$out"
fi
clean() {
    if [ -n "$fresh" ]; then
        mountpoint -q "$out" && umount "$out"
        rm -f "$work/fs.img"
        truncate -s "$(( $(stat -c %s "$layer") * 3 ))" "$work/fs.img"
        mkfs.ext4 -q -F "$work/fs.img"
        mount -o loop "$work/fs.img" "$out"
    else
        rm -rf "$work/x" "$work/st"
    fi
    sync
}
# timed CMD...: runs CMD then sync; sets wall (both) and cpu (CMD's user + sys).
timed() {
    t0=$(now)
    /usr/bin/time -f '%U %S' -o "$work/cpu" "$@" >/dev/null
    sync
    t1=$(now)
    wall=$(echo "$t1 - $t0" | bc)
    cpu=$(awk '{print $1 + $2}' "$work/cpu")
}
tar_wall= tar_cpu= corral_wall= corral_cpu=
i=1
while [ "$i" -le "$runs" ]; do
    clean
    mkdir "$out/x"
    timed tar -C "$out/x" -xf "$layer"
    tw=$wall tc=$cpu
    clean
    timed "$corral" image import "$layer" --name bench --state-dir "$out/st"
    echo "run $i: tar -x ${tw} s (cpu ${tc} s), corral image import ${wall} s (cpu ${cpu} s), load $(cut -d' ' -f1-3 /proc/loadavg)"
    tar_wall="$tar_wall $tw" tar_cpu="$tar_cpu $tc" corral_wall="$corral_wall $wall" corral_cpu="$corral_cpu $cpu"
    i=$((i + 1))
done
if [ -n "$fresh" ]; then
    umount "$out"
    rm -f "$work/fs.img"
else
    clean
fi
rm -f "$work/cpu"

median() { printf '%s\n' $1 | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
mt=$(median "$tar_wall") mc=$(median "$corral_wall") ct=$(median "$tar_cpu") cc=$(median "$corral_cpu")
echo "median of $runs: tar -x $mt s (cpu $ct s), corral image import $mc s (cpu $cc s)"
echo "throughput ratio, wall (tar / import): $(echo "scale=2; $mt / $mc" | bc); cpu: $(echo "scale=2; $ct / $cc" | bc)"
