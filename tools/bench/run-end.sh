#!/usr/bin/env bash
# tools/bench/run-end.sh — how long a run takes to end after its command does,
# embedded and through a `corral gateway` daemon, when the box still holds an
# idle TLS connection to an inject grant (as an agent CLI's keep-alive pool
# does when it exits).
#
# Each run is `corral run --rootfs host -- sh -c 'openssl s_client ... & sleep
# HOLD'`: the TLS handshake with the gateway's leaf completes, the connection
# stays idle, the command ends after HOLD seconds and the teardown kills the
# client. Nothing is dialled upstream (no request is sent; the grant's
# connect_to names 127.0.0.1 anyway). The figure is the run's wall time minus
# HOLD: the time from the command's end to corral's exit, plus the start.
#   embedded   corral run --config ORG --worker w
#   daemon     the same with --gateway unix:SOCK (one daemon for all runs)
#   baseline-* the same two with --baseline PATH (e.g. an older commit's binary)
# Runs alternate between the configurations; medians and p10/p90 are printed,
# and daemon/embedded ratios.
#
# Usage (root): tools/bench/run-end.sh [--runs N] [--hold S] [--corral PATH] [--baseline PATH]
#   default: --runs 10 --hold 0.5 --corral $CORRAL_BIN or build-test/tools/corral
# Not a test: figures depend on the machine; compare within one invocation.
set -euo pipefail

runs=10
hold=0.5
corral=${CORRAL_BIN:-}
baseline=
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --hold) hold=$2; shift 2 ;;
    --corral) corral=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "run-end.sh: unknown argument '$1' (accepted: --runs N, --hold S, --corral PATH, --baseline PATH)" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
if [ -z "$corral" ]; then corral=$repo/build-test/tools/corral; fi
[ "$(id -u)" -eq 0 ] || { echo "run-end.sh: must run as root (corral run creates namespaces)" >&2; exit 2; }
[ -x "$corral" ] || { echo "run-end.sh: corral binary not found at $corral (build it, or pass --corral PATH)" >&2; exit 2; }
[ -z "$baseline" ] || [ -x "$baseline" ] || { echo "run-end.sh: --baseline $baseline is not an executable" >&2; exit 2; }
command -v openssl >/dev/null || { echo "run-end.sh: openssl is missing (tools/install-deps.sh)" >&2; exit 2; }

work=$(mktemp -d /tmp/corral-run-end-XXXXXX)
chmod 0711 "$work"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# One organisation and one stand-alone gateway file per binary: the same grant.
setup() {
  local name=$1 d=$work/$1
  mkdir -p "$d/org/workers/w" "$d/state"
  chmod 0700 "$d/state"
  echo "sk-bench-not-a-real-key" > "$d/key"
  chmod 0600 "$d/key"
  cat > "$d/sections.toml" <<TOML
[gateway]
listen_unix = "$d/gw.sock"
ledger = "$d/ledger.jsonl"
state_dir = "$d/state"
[credentials.k]
kind = "api_key"
file = "$d/key"
[[grants]]
host = "api.bench.test"
mode = "inject"
credential = "k"
routes = ["GET /"]
connect_to = "127.0.0.1:9"
allow_private = true
TOML
  cp "$d/sections.toml" "$d/org/org.toml"
  echo 'description = "run-end bench"' > "$d/org/workers/w/worker.toml"
}
start_daemon() {
  local name=$1 bin=$2 d=$work/$1
  "$bin" gateway --config "$d/sections.toml" --threads 1 > "$d/daemon.out" 2> "$d/daemon.err" &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$d/daemon.out" 2>/dev/null && break; sleep 0.1; done
  grep -q listening "$d/daemon.out" || { echo "run-end.sh: the $name daemon did not start: $(cat "$d/daemon.err")" >&2; exit 1; }
}
box="(sleep 60 | openssl s_client -quiet -proxy 127.0.0.1:3128 -connect api.bench.test:443 -servername api.bench.test >/dev/null 2>&1 &); sleep $hold"

configs=(embedded daemon)
setup corral
start_daemon corral "$corral"
if [ -n "$baseline" ]; then
  setup baseline
  start_daemon baseline "$baseline"
  configs+=(baseline-embedded baseline-daemon)
fi
# run_one CONFIG: prints the run's wall time minus the hold, in ms.
run_one() {
  local cfg=$1 bin=$corral set=corral extra=() start end
  case "$cfg" in baseline-*) bin=$baseline set=baseline ;; esac
  case "$cfg" in *daemon) extra=(--gateway "unix:$work/$set/gw.sock") ;; esac
  start=$(date +%s%N)
  "$bin" run --config "$work/$set/org" --worker w --rootfs host --state-dir "$work/$set/state" "${extra[@]}" \
    -- sh -c "$box" > /dev/null 2> "$work/last.err" || { echo "run-end.sh: $cfg run failed: $(head -c 300 "$work/last.err")" >&2; exit 1; }
  end=$(date +%s%N)
  awk -v s="$start" -v e="$end" -v h="$hold" 'BEGIN { printf "%.1f\n", (e - s) / 1e6 - h * 1000 }'
}
echo "machine: $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "corral: $corral${baseline:+, baseline: $baseline}; $runs runs per configuration, hold ${hold}s"
for cfg in "${configs[@]}"; do run_one "$cfg" > /dev/null; done  # warm-up
for ((r = 0; r < runs; r++)); do
  n=${#configs[@]}
  for ((k = 0; k < n; k++)); do
    cfg=${configs[$(((r + k) % n))]}
    run_one "$cfg" >> "$work/$cfg.ms"
  done
done
stats() { sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.1f %.1f %.1f\n", v[int((NR + 1) / 2)], v[int(NR * 0.1) + 1], v[int(NR * 0.9 + 0.5)] }'; }
printf "%-20s %10s %10s %10s\n" config "median ms" "p10" "p90"
for cfg in "${configs[@]}"; do
  read -r med p10 p90 < <(stats "$work/$cfg.ms")
  printf "%-20s %10s %10s %10s\n" "$cfg" "$med" "$p10" "$p90"
  eval "median_${cfg//-/_}=$med"
done
awk -v d="$median_daemon" -v e="$median_embedded" 'BEGIN { printf "daemon/embedded: %.2f (corral)\n", d / e }'
if [ -n "$baseline" ]; then
  awk -v d="$median_baseline_daemon" -v e="$median_baseline_embedded" 'BEGIN { printf "daemon/embedded: %.2f (baseline)\n", d / e }'
fi
