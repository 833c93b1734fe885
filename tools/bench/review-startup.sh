#!/bin/sh
# tools/bench/review-startup.sh — what --review costs (docs/benchmarks.md,
# "Reviewed workspace"): `corral run --workspace W -- true` with and without
# --review on a workspace of N files (default 50 000, in 500 directories,
# owned by an unprivileged user), alternately in one hyperfine session (-N,
# 3 warm-ups, RUNS runs each, default 20); then one review run that changes
# 100 files and `corral diff` of it (median of 5); then APPLIES (default 7)
# review runs that change 100 files each, and for each, `cp --parents` of
# those 100 files out of its upper layer and `corral apply` of it (journal
# record included): both medians and their ratio. Root only.
#
#   tools/bench/review-startup.sh [-n RUNS] [-f FILES] [-a APPLIES] [-w WORK_DIR] [CORRAL]
set -eu

runs=20 files=50000 applies=7 work=/var/tmp/corral-bench-review
while getopts n:f:a:w: o; do
    case $o in
        n) runs=$OPTARG ;;
        f) files=$OPTARG ;;
        a) applies=$OPTARG ;;
        w) work=$OPTARG ;;
        *) echo "usage: $0 [-n RUNS] [-f FILES] [-a APPLIES] [-w WORK_DIR] [CORRAL]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
corral=${1:-build/tools/corral}
[ "$(id -u)" = 0 ] || { echo "$0: run as root (corral run builds sandboxes)" >&2; exit 2; }
[ -x "$corral" ] || { echo "$0: $corral: not an executable; give the corral binary" >&2; exit 2; }
for tool in hyperfine jq python3; do
    command -v "$tool" >/dev/null || { echo "$0: needs $tool" >&2; exit 2; }
done
corral=$(cd "$(dirname "$corral")" && pwd)/$(basename "$corral")
owner=41201:41202

rm -rf "$work"
mkdir -p "$work/state"
chmod 0755 "$work"
python3 - "$work/ws" "$files" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "d%03d" % (i % 500))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d.txt" % i), "w") as f:
        f.write("line %d\n" % i)
PY
chown -R "$owner" "$work/ws"
state=$work/state
echo "workspace of $files files; $runs runs each, load $(cut -d' ' -f1-3 /proc/loadavg)"
hyperfine -N -i --warmup 3 --runs "$runs" --export-json "$work/h.json" \
    -n bound "$corral run --state-dir $state --workspace $work/ws -- true" \
    -n review "$corral run --state-dir $state --workspace $work/ws --review -- true" >/dev/null
median() { jq -r ".results[] | select(.command == \"$1\") | .median * 1000" "$work/h.json"; }
mb=$(median bound) mr=$(median review)
printf 'bound:  median %.2f ms\nreview: median %.2f ms\nadded by --review: %.2f ms\n' "$mb" "$mr" \
    "$(echo "$mr - $mb" | bc)"

ms() { python3 -c 'import sys,time,subprocess; t=[];
for _ in range(5):
    s=time.perf_counter(); subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); t.append(time.perf_counter()-s)
print("%.1f" % (sorted(t)[2]*1000))' "$@"; }
"$corral" run --quiet --state-dir "$state" --run-dir "$work/run" --workspace "$work/ws" --review -- \
    sh -c 'for i in $(seq 0 99); do echo changed >> d$(printf %03d $i)/f$(printf %05d $i).txt; done' 2>/dev/null
echo "diff of 100 changed files: $(ms "$corral" diff "$work/run") ms (median of 5)"
echo "diff --stat of them: $(ms "$corral" diff --stat "$work/run") ms (median of 5)"
# apply against cp of the same 100 files, alternately, APPLIES times: each
# apply needs a review run of its own (a file changed on the host since its
# run's fence, as the last apply's are, is a conflict), and each cp copies
# that run's 100 files out of its upper layer into a fresh directory.
python3 - "$corral" "$state" "$work" "$applies" <<'PY'
import os, statistics, subprocess, sys, time
corral, state, work, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
change = 'for i in $(seq 0 99); do echo changed >> d$(printf %03d $i)/f$(printf %05d $i).txt; done'
applies, cps = [], []
def timed(argv, **kw):
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, **kw)
    return (time.perf_counter() - start) * 1000
for n in range(k):
    run = "%s/apply-run%d" % (work, n)
    time.sleep(0.05)  # the last apply's writes well before this run's fence (workspace/change.hpp's margin)
    subprocess.run([corral, "run", "--quiet", "--state-dir", state, "--run-dir", run, "--workspace", work + "/ws",
                    "--review", "--", "sh", "-c", change], check=True, stderr=subprocess.DEVNULL)
    upper = run + "/workspace/upper"
    files = sorted(os.path.relpath(os.path.join(d, f), upper) for d, _, fs in os.walk(upper) for f in fs)
    assert len(files) == 100, len(files)
    dest = "%s/cp%d" % (work, n)
    os.mkdir(dest)
    cps.append(timed(["cp", "--parents"] + files + [dest], cwd=upper))
    applies.append(timed([corral, "apply", "--state-dir", state, run]))
a, c = statistics.median(applies), statistics.median(cps)
print("apply of 100 changed files: median %.1f ms (%s)" % (a, " ".join("%.1f" % x for x in applies)))
print("cp of the same 100 files:   median %.1f ms (%s)" % (c, " ".join("%.1f" % x for x in cps)))
print("apply / cp: %.2fx (issue 31's target: at most 1.5x); load %s" % (a / c, " ".join(open("/proc/loadavg").read().split()[:3])))
PY
