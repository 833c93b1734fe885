#!/usr/bin/env bash
# tools/bench/soak.sh — many runs, embedded and through one daemon, and what
# they leave behind.
#
# Each run is `corral run --rootfs R -- sh -c 'wget http://soak.test/'` on the
# busybox rootfs R: one request through the bridge to a gateway with no
# grants (403, never dialled), so every run exercises the box, the bridge, the
# gateway and the counts, and its run.json must say requests=1 refusals=1.
#   1. N sequential runs with the embedded gateway;
#   2. N sequential runs through one `corral gateway` daemon (--gateway unix:);
#   3. C concurrent runs, embedded;  4. C concurrent runs through the daemon.
# Before and after all of it: mounts, network namespaces, corral cgroups, UID
# locks, scratch dirs, processes of the bench's UIDs, corral processes (the
# daemon included) and fds pointing at corral's state; the daemon's RSS after
# a warm-up and at the end. PASS iff every count is equal, every run exited 0
# with a clean teardown verdict and honest counts.
#
# Usage (root): tools/bench/soak.sh [--runs N] [--concurrent C] [--corral PATH]
#   default: --runs 1000 --concurrent 64 --corral $CORRAL_BIN or build-test/tools/corral
# Not a test (minutes of runs); figures go to docs/benchmarks.md.
set -euo pipefail

runs=1000
concurrent=64
corral=${CORRAL_BIN:-}
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --concurrent) concurrent=$2; shift 2 ;;
    --corral) corral=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "soak.sh: unknown argument '$1' (accepted: --runs N, --concurrent C, --corral PATH)" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/host_counts.sh"
if [ -z "$corral" ]; then corral=$repo/build-test/tools/corral; fi
[ "$(id -u)" -eq 0 ] || { echo "soak.sh: must run as root (corral run creates namespaces)" >&2; exit 2; }
[ -x "$corral" ] || { echo "soak.sh: corral binary not found at $corral (build it, or pass --corral PATH)" >&2; exit 2; }
for p in /bin/busybox jq; do
  command -v "$p" >/dev/null || { echo "soak.sh: $p is missing (tools/install-deps.sh)" >&2; exit 2; }
done

work=$(mktemp -d /tmp/corral-soak-XXXXXX)
chmod 0700 "$work"
daemon_pid=
cleanup() { [ -z "$daemon_pid" ] || kill "$daemon_pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
uid_range=1900300000-1900300999
R=$work/rootfs
make_busybox_rootfs "$R"
state=$work/state
mkdir -p "$state"
chmod 0700 "$state"
socket=$work/gw.sock
cat > "$work/gateway.toml" <<TOML
[gateway]
listen_unix = "$socket"
ledger = "$work/daemon-ledger.jsonl"
state_dir = "$state"
TOML
box=(sh -c 'wget -q -O /dev/null http://soak.test/ 2>/dev/null; true')
embedded=("$corral" run --rootfs "$R" --state-dir "$state" --uid-range "$uid_range")
daemon=("${embedded[@]}" --gateway "unix:$socket")

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# run_one LABEL I ARGV...: one run with its own run dir; a failure is noted.
run_one() {
  local label=$1 i=$2
  shift 2
  "$@" --run-dir "$work/runs/$label-$i" -- "${box[@]}" >/dev/null 2>"$work/runs/$label-$i.err" ||
    echo "$label $i: exit $?: $(head -c 300 "$work/runs/$label-$i.err")" >> "$work/failures"
}
mkdir -p "$work/runs"
: > "$work/failures"

"$corral" gateway --config "$work/gateway.toml" --threads 2 > "$work/daemon.out" 2> "$work/daemon.err" &
daemon_pid=$!
for _ in $(seq 100); do grep -q listening "$work/daemon.out" 2>/dev/null && break; sleep 0.1; done
grep -q listening "$work/daemon.out" || { echo "soak.sh: the daemon did not start: $(cat "$work/daemon.err")" >&2; exit 1; }
# Warm-up (CA loaded, allocator pools filled), then the baseline.
for i in 1 2 3 4 5; do run_one warm "$i" "${daemon[@]}"; run_one warmembedded "$i" "${embedded[@]}"; done
rss_before=$(rss_kib "$daemon_pid")
before=$(snapshot)
echo "machine: $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"

phase() {
  local name=$1 start end
  shift
  start=$(date +%s.%N)
  "$@"
  end=$(date +%s.%N)
  awk -v n="$name" -v s="$start" -v e="$end" 'BEGIN { printf "%-28s %8.1f s\n", n, e - s }'
}
sequential() { local label=$1 i; shift; for ((i = 0; i < runs; i++)); do run_one "$label" "$i" "$@"; done; }
parallel() {
  local label=$1 i pids=()
  shift
  for ((i = 0; i < concurrent; i++)); do
    run_one "$label" "$i" "$@" &
    pids+=($!)
  done
  wait "${pids[@]}"
}
phase "$runs sequential, embedded" sequential seq-embedded "${embedded[@]}"
phase "$runs sequential, daemon" sequential seq-daemon "${daemon[@]}"
phase "$concurrent concurrent, embedded" parallel par-embedded "${embedded[@]}"
phase "$concurrent concurrent, daemon" parallel par-daemon "${daemon[@]}"

after=$(snapshot)
rss_after=$(rss_kib "$daemon_pid")
total=$(find "$work/runs" -name run.json | wc -l)
unclean=$(grep -L '"verdict": *"clean"' "$work"/runs/*/run.json | wc -l)
dishonest=$(for f in "$work"/runs/{seq,par}-*/run.json; do
  jq -r 'select(.gateway.requests != 1 or .gateway.refusals != 1) | input_filename' "$f"
done | wc -l)
failures=$(wc -l < "$work/failures")
echo "before: $before"
echo "after:  $after"
echo "daemon RSS: $rss_before KiB after warm-up, $rss_after KiB at the end"
echo "runs measured: $((2 * runs + 2 * concurrent)) (+ 10 warm-up), run records: $total, failed: $failures," \
     "teardown not clean: $unclean, counts not requests=1 refusals=1: $dishonest"
head -5 "$work/failures"
if [ "$before" = "$after" ] && [ "$failures" -eq 0 ] && [ "$unclean" -eq 0 ] && [ "$dishonest" -eq 0 ]; then
  echo "soak: PASS"
else
  echo "soak: FAIL"
  exit 1
fi
