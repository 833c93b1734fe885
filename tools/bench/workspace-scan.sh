#!/bin/sh
# tools/bench/workspace-scan.sh — what a large workspace adds to every run
# (issue 33; docs/benchmarks.md, "The workspace's hazard scan"): `corral run
# --rootfs host --workspace W -- /bin/true` on a workspace of FILES files
# (default 173 000, 100 per directory, owned by an unprivileged user, page
# cache warm) against the same run on an empty workspace, for CORRAL and, if
# given, BASELINE, all four alternating in one hyperfine session (-N, 3
# warm-ups, RUNS runs each, default 15). Prints hyperfine's table, then per
# binary the median added time and the time per file, and (with a baseline)
# the ratio. Root only.
#
#   tools/bench/workspace-scan.sh [-n RUNS] [-f FILES] [-w WORK_DIR] CORRAL [BASELINE]
set -eu

runs=15 files=173000 work=/var/tmp/corral-bench-workspace-scan
while getopts n:f:w: o; do
    case $o in
        n) runs=$OPTARG ;;
        f) files=$OPTARG ;;
        w) work=$OPTARG ;;
        *) echo "usage: $0 [-n RUNS] [-f FILES] [-w WORK_DIR] CORRAL [BASELINE]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-n RUNS] [-f FILES] [-w WORK_DIR] CORRAL [BASELINE]" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "$0: run as root (corral run builds sandboxes)" >&2; exit 2; }
for tool in hyperfine jq python3; do
    command -v "$tool" >/dev/null || { echo "$0: needs $tool" >&2; exit 2; }
done
for bin in "$@"; do
    [ -x "$bin" ] || { echo "$0: $bin: not an executable; give corral binaries" >&2; exit 2; }
done

rm -rf "$work"
mkdir -p "$work/state" "$work/empty"
chmod 0755 "$work"
python3 - "$work/ws" "$files" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, f"d{i // 100:05d}")
    if i % 100 == 0:
        os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i % 100:02d}.txt"), "w") as f:
        f.write("x\n")
PY
chown -R 41201:41202 "$work/ws" "$work/empty"
find "$work/ws" > /dev/null  # the page cache warm, as on a workstation

corral=$1 baseline=${2:-}
run() { echo "$1 run --rootfs host --state-dir $work/state --workspace $work/$2 -- /bin/true"; }
echo "## Workspace scan ($(nproc) CPUs, $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)): $files files, $runs runs each"
if [ -n "$baseline" ]; then
    names="corral baseline"
    hyperfine -N --warmup 3 --runs "$runs" --export-json "$work/result.json" \
        -n corral-empty "$(run "$corral" empty)" -n corral-files "$(run "$corral" ws)" \
        -n baseline-empty "$(run "$baseline" empty)" -n baseline-files "$(run "$baseline" ws)"
else
    names="corral"
    hyperfine -N --warmup 3 --runs "$runs" --export-json "$work/result.json" \
        -n corral-empty "$(run "$corral" empty)" -n corral-files "$(run "$corral" ws)"
fi
echo
for name in $names; do
    jq -r --arg n "$name" --argjson files "$files" '
      [.results[] | select(.command == ($n + "-empty")) | .median][0] as $e |
      [.results[] | select(.command == ($n + "-files")) | .median][0] as $f |
      "\($n): empty \($e * 1000 | floor) ms, \($files) files \($f * 1000 | floor) ms: added \((($f - $e) * 1000) | floor) ms, \((($f - $e) * 1e6 / $files) * 100 | floor / 100) µs per file"' \
      "$work/result.json"
done
if [ "$names" = "corral baseline" ]; then
    jq -r '
      def m(c): [.results[] | select(.command == c) | .median][0];
      "added time, corral / baseline = \(((m("corral-files") - m("corral-empty")) / (m("baseline-files") - m("baseline-empty"))) * 100 | floor / 100)"' \
      "$work/result.json"
fi
rm -rf "$work"
