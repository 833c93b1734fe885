#!/bin/sh
# tools/bench/image-startup.sh — `corral run` start-up on an image of N layers
# (default 5) against the same tree as a plain directory (docs/benchmarks.md,
# "Images: start-up from layers").
#
#   tools/bench/image-startup.sh [-n RUNS] [-l LAYERS] [-w WORK_DIR] [CORRAL]
#
# Makes an OCI layout with tests/image/make_deep_layout.py (busybox, then one
# file per layer, the top layer deleting one of them), imports it, and
# unpacks the same image with umoci into a directory. Then hyperfine runs
# `corral run --rootfs image:NAME -- sh -c true` and `corral run --rootfs DIR
# -- sh -c true` alternately in one session (-N, 3 warm-ups, RUNS runs each,
# default 30) and prints both medians and the ratio image / directory
# (1.0 = as fast). Root only (corral run builds sandboxes).
set -eu

runs=30 layers=5 work=/var/tmp/corral-bench-image-startup
while getopts n:l:w: o; do
    case $o in
        n) runs=$OPTARG ;;
        l) layers=$OPTARG ;;
        w) work=$OPTARG ;;
        *) echo "usage: $0 [-n RUNS] [-l LAYERS] [-w WORK_DIR] [CORRAL]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
corral=${1:-build/tools/corral}
here=$(cd "$(dirname "$0")/../.." && pwd)
case $runs in ''|*[!0-9]*|0) echo "$0: -n $runs: expected a positive number of runs" >&2; exit 2 ;; esac
case $layers in ''|*[!0-9]*|0|1) echo "$0: -l $layers: expected 2 or more layers" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "$0: run as root (corral run builds sandboxes)" >&2; exit 2; }
[ -x "$corral" ] || { echo "$0: $corral: not an executable; give the corral binary" >&2; exit 2; }
for tool in hyperfine umoci jq python3; do
    command -v "$tool" >/dev/null || { echo "$0: needs $tool (tools/install-deps.sh installs it)" >&2; exit 2; }
done
corral=$(cd "$(dirname "$corral")" && pwd)/$(basename "$corral")

rm -rf "$work"
mkdir -p "$work"
chmod 0755 "$work"
state=$work/state
python3 "$here/tests/image/make_deep_layout.py" "$work/layout" "$layers"
"$corral" image import "$work/layout" --name bench-layers --state-dir "$state" >/dev/null
umoci unpack --image "$work/layout:deep" "$work/bundle" >/dev/null 2>&1
chmod 0755 "$work/bundle/rootfs"
# The same tree both ways (what the box sees of it): a sanity check, not timed.
a=$("$corral" run --state-dir "$state" --rootfs image:bench-layers -- sh -c 'ls /l' 2>/dev/null)
b=$("$corral" run --state-dir "$state" --rootfs "$work/bundle/rootfs" -- sh -c 'ls /l' 2>/dev/null)
[ "$a" = "$b" ] || { echo "$0: the image and the directory differ: /l is '$a' against '$b'" >&2; exit 1; }

echo "image of $layers layers against $work/bundle/rootfs; $runs runs each, load $(cut -d' ' -f1-3 /proc/loadavg)"
hyperfine -N --warmup 3 --runs "$runs" --export-json "$work/h.json" \
    -n image "$corral run --state-dir $state --rootfs image:bench-layers -- sh -c true" \
    -n directory "$corral run --state-dir $state --rootfs $work/bundle/rootfs -- sh -c true" >/dev/null
median() { jq -r ".results[] | select(.command == \"$1\") | .median * 1000" "$work/h.json"; }
spread() { jq -r ".results[] | select(.command == \"$1\") | [(.times | min), (.times | max)] | map(. * 1000 | floor) | join(\"-\")" "$work/h.json"; }
mi=$(median image) md=$(median directory)
printf 'image:     median %.2f ms (min-max %s ms)\n' "$mi" "$(spread image)"
printf 'directory: median %.2f ms (min-max %s ms)\n' "$md" "$(spread directory)"
echo "ratio image / directory: $(echo "scale=3; $mi / $md" | bc)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$corral" image rm bench-layers --state-dir "$state" >/dev/null
rm -rf "$work"
