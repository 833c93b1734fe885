#!/usr/bin/env bash
# tools/bench/capture.sh — transparent capture (docs/capture.md, issue 32)
# against the proxy variables, in one `corral run`. Loopback and the box's own
# namespace only. In one invocation, on the same work, --rounds corral runs
# (one per round: a run's journal is bounded, docs/journal.md), each doing:
#  (a) keep-alive HTTPS GETs from a client in the box to a granted name
#      (api.capbench.test, an inject grant whose connect_to is a local TLS
#      stand-in, gateway-load serve, its certificate from a test CA), two ways
#      alternating per round (the first of each round alternates too):
#        proxied:  CONNECT through the bridge named by the box's HTTPS_PROXY;
#        captured: the same client with every *_proxy variable removed: the
#                  name resolves through the box's DNS stub to a synthetic
#                  address and the connection is captured.
#      Requests/s with --conns connections and p50/p99 latency with one.
#                                     targets: captured ≥ 0.95× proxied req/s, p50 added ≤ 0.05 ms
#      For scale, direct TLS from the host to the stand-in (before the runs,
#      not alternated).
#  (b) getaddrinfo of the granted name in the box (AF_UNSPEC: A and AAAA from
#      the stub), --lookups calls, one every 2.5 ms (800 queries a second: the
#      stub drops queries past 1000 a second), median and p99; and of
#      localhost (the box's /etc/hosts, no DNS), paced alike, as the floor.
#                                     target: granted median ≤ 0.2 ms
# The client is tools/bench/gateway-load.cpp (rps mode: without --proxy it
# resolves the name with getaddrinfo), the lookups tools/bench/capture-gai.c;
# both are built here into the box's /workspace (the box's rootfs is "host").
# The ledger's inject lines with the credential, captured and not, show that
# both paths were the inject grant's.
#
# Usage: tools/bench/capture.sh [--rounds N] [--seconds S] [--conns C] [--lookups N] [--corral PATH]
#   defaults: --rounds 5 --seconds 2 --conns 4 --lookups 1000,
#   corral = $CORRAL_BIN or build-test/tools/corral
# Not a test: figures depend on the machine and its load (the report says the load).
set -euo pipefail

rounds=5
seconds=2
conns=4
lookups=1000
corral=${CORRAL_BIN:-}
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --conns) conns=$2; shift 2 ;;
    --lookups) lookups=$2; shift 2 ;;
    --corral) corral=$2; shift 2 ;;
    -h|--help) sed -n '2,/^# Not a test/p' "$0"; exit 0 ;;
    *) echo "capture.sh: unknown argument '$1' (accepted: --rounds N, --seconds S, --conns C, --lookups N, --corral PATH)" >&2; exit 2 ;;
  esac
done

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
[ -n "$corral" ] || corral=$repo/build-test/tools/corral
[ -x "$corral" ] || { echo "capture.sh: corral binary not found at $corral (build it, or pass --corral PATH)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "capture.sh: run as root (corral run builds a box)" >&2; exit 2; }
for p in g++ cc openssl python3; do
  command -v "$p" >/dev/null || { echo "capture.sh: $p is missing (tools/install-deps.sh)" >&2; exit 2; }
done
for n in rounds seconds conns lookups; do
  [[ ${!n} =~ ^[1-9][0-9]*$ ]] || { echo "capture.sh: --$n '${!n}': give a positive integer" >&2; exit 2; }
done

name=api.capbench.test
work=$(mktemp -d /tmp/corral-capbench-XXXXXX)
chmod 0711 "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# shellcheck source=tools/bench/standin.sh
. "$here/standin.sh"
load_now() { cut -d' ' -f1-3 /proc/loadavg; }
load_start=$(load_now)

# The box's programs: in the workspace, readable and runnable by the agent UID.
ws=$work/ws
mkdir -p "$ws"
chmod 0755 "$ws"
echo "# building the client (gateway-load) and the lookup timer (capture-gai)" >&2
g++ -O2 -std=c++20 -o "$ws/gateway-load" "$here/gateway-load.cpp" -lssl -lcrypto -pthread
gai_link=static
cc -O2 -static -o "$ws/capture-gai" "$here/capture-gai.c" 2>/dev/null || {
  gai_link=dynamic
  cc -O2 -o "$ws/capture-gai" "$here/capture-gai.c"
}
chmod 0755 "$ws/gateway-load" "$ws/capture-gai"

echo "# test CA and the stand-in's certificate (DNS:$name, IP:127.0.0.1)" >&2
make_test_ca "$work" "corral capture bench CA"
make_leaf "$work" up "$name" "DNS:$name,IP:127.0.0.1"
start_api_standin "$ws/gateway-load" sk-ant-api03-capbench

# The organisation: one worker, one inject grant for the name, dialled at the
# stand-in (connect_to) and verified against the test CA, so nothing leaves
# loopback; capture is the default for a run with grants.
org=$work/org
mkdir -p "$org/workers/bench"
cat > "$org/org.toml" <<TOML
[gateway]
state_dir = "$work/gw-state"
[credentials.bench]
kind = "api_key"
file = "$work/key"
[[grants]]
host = "$name"
mode = "inject"
credential = "bench"
allow_private = true
connect_to = "127.0.0.1:$https_port"
upstream_ca_file = "$work/ca.crt"
TOML
echo 'description = "capture benchmark worker"' > "$org/workers/bench/worker.toml"

# What the box runs, one round: both paths (the first alternating by round),
# req/s then latency; then the lookups, paced. Result lines "R PATH KIND ...".
cat > "$ws/box.sh" <<'SH'
#!/bin/sh
set -eu
r=$1 seconds=$2 conns=$3 lookups=$4 interval=$5 name=$6
load=/workspace/gateway-load
ca=${SSL_CERT_FILE:?no SSL_CERT_FILE in the box}
proxy=${HTTPS_PROXY:?no HTTPS_PROXY in the box}
port=${proxy##*:}
port=${port%%/*}
echo "env HTTPS_PROXY=$proxy SSL_CERT_FILE=$ca"
# The same client, the proxy variables gone: only DNS and capture can reach the name.
noproxy() {
  env -u HTTPS_PROXY -u https_proxy -u HTTP_PROXY -u http_proxy -u ALL_PROXY -u all_proxy \
      -u NO_PROXY -u no_proxy "$@"
}
rps() {  # path conns
  if [ "$1" = proxied ]; then
    "$load" rps --target "$name:443" --proxy "$port" --ca "$ca" --conns "$2" --seconds "$seconds"
  else
    noproxy "$load" rps --target "$name:443" --ca "$ca" --conns "$2" --seconds "$seconds"
  fi
}
if [ $((r % 2)) = 1 ]; then order="proxied captured"; else order="captured proxied"; fi
for p in $order; do
  echo "$r $p rps $(rps "$p" "$conns")"
  echo "$r $p lat $(rps "$p" 1)"
done
for n in "$name" localhost; do
  echo "$r lookup $(noproxy /workspace/capture-gai "$n" "$lookups" "$interval")"
done
SH
chmod 0755 "$ws/box.sh"

echo "# direct TLS from the host to the stand-in, $rounds rounds (scale only, not alternated)" >&2
: > "$work/results"
for r in $(seq 1 "$rounds"); do
  for c in "$conns:rps" "1:lat"; do
    echo "$r direct ${c#*:} $("$ws/gateway-load" rps --target "127.0.0.1:$https_port" --ca "$work/ca.crt" \
      --conns "${c%%:*}" --seconds "$seconds")" >> "$work/results"
  done
done

# One run per round: a run's journal holds about 200 000 decisions (64 MiB,
# docs/journal.md), then refuses every request; one round's four phases stay
# well under that.
run_round() {  # round
  local dir=$work/run-$1
  CORRAL_STATE_DIR=$work/runs-state "$corral" run --config "$org" --worker bench --rootfs host \
    --workspace "$ws" --run-dir "$dir" --state-dir "$work/runs-state" --timeout "$(( 4 * seconds + 120 ))s" \
    -- /bin/sh /workspace/box.sh "$1" "$seconds" "$conns" "$lookups" "$interval" "$name" > "$dir.out" 2> "$dir.err" || {
    echo "capture.sh: corral run of round $1 failed (exit $?); box stdout:" >&2; cat "$dir.out" >&2
    echo "stderr:" >&2; cat "$dir.err" >&2; return 1
  }
  cat "$dir.out" >> "$work/results"
}
# 2 queries (A, AAAA) per lookup every $interval µs: 800 a second, under the stub's 1000.
interval=2500
echo "# $rounds corral runs: ${seconds}s per path and phase, proxied vs captured; $lookups paced lookups per name" >&2
load_run=$(load_now)
for r in $(seq 1 "$rounds"); do run_round "$r"; done
load_end=$(load_now)

# ---- report ---------------------------------------------------------------------------
res=$work/results
field() { awk -v p="$1" -v k="$2" -v f="$3" '$2 == p && $3 == k { for (i = 4; i < NF; i++) if ($i == f) print $(i + 1) }' "$res"; }
rps_of() { field "$1" rps rps | median; }
p50_of() { field "$1" lat p50_us | median; }
p99_of() { field "$1" lat p99_us | median; }
gai() { awk -v n="$1" -v f="$2" '$2 == "lookup" && $4 == n { for (i = 5; i < NF; i++) if ($i == f) print $(i + 1) }' "$res"; }
gai_med() { gai "$1" "$2" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "nan"; else printf "%.2f", a / b }'; }
added() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (a - b) / 1000 }'; }
us_to_ms() { awk -v a="$1" 'BEGIN { printf "%.3f", a / 1000 }'; }
per_round() { for p in proxied captured; do printf '%s %s; ' "$p" "$(field "$p" rps rps | paste -sd' ')"; done; }
ledgers() { cat "$work"/run-*/ledger.jsonl; }
inject_ok() { ledgers | grep '"credential":"bench"' | grep '"status":200' | grep "$@" -c '"captured":true' || true; }
captured_ok=$(inject_ok)
proxied_ok=$(inject_ok -v)
refused=$(ledgers | grep -c '"decision":"refuse"' || true)
# a phase with a failed connection (gateway-load prints failed_conns N; nothing when all failed)
failed=$(awk '$3 == "rps" || $3 == "lat" { ok = 0; for (i = 4; i < NF; i++) if ($i == "failed_conns" && $(i + 1) == 0) ok = 1; if (!ok) n++ } END { print n + 0 }' "$res")
cat <<REPORT
## Transparent capture (tools/bench/capture.sh --rounds $rounds --seconds $seconds --conns $conns --lookups $lookups)

Machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d\ %H:%M) UTC. Load average (1, 5, 15 min): $load_start at start, $load_run before the runs, $load_end after them.
Medians of $rounds rounds, one corral run each; in each run proxied and captured alternate (which goes first alternates by round).
Box: $(grep -m1 '^env ' "$res" | cut -d' ' -f2-).

(a) keep-alive HTTPS GET to $name (inject grant, connect_to the local stand-in), x-api-key rewritten to the real key

| path | req/s ($conns conns) | p50 µs (1 conn) | p99 µs (1 conn) | p50 added ms vs proxied |
|---|---:|---:|---:|---:|
| direct TLS from the host (scale only, before the runs) | $(rps_of direct) | $(p50_of direct) | $(p99_of direct) | — |
| proxied: HTTPS_PROXY, CONNECT through the bridge | $(rps_of proxied) | $(p50_of proxied) | $(p99_of proxied) | — |
| captured: no proxy variables, stub + synthetic address | $(rps_of captured) | $(p50_of captured) | $(p99_of captured) | $(added "$(p50_of captured)" "$(p50_of proxied)") |

captured / proxied req/s = $(ratio "$(rps_of captured)" "$(rps_of proxied)") (target ≥ 0.95); p50 added by capture $(added "$(p50_of captured)" "$(p50_of proxied)") ms (target ≤ 0.05 ms).
Ledgers of the runs: $captured_ok inject lines with status 200 marked captured, $proxied_ok not (the proxied path); $refused refusals (dns_rate_limited included). Client phases with a failed connection: $failed.
Per round, req/s: $(per_round)

(b) getaddrinfo in the box (AF_UNSPEC, SOCK_STREAM; $lookups calls per round after 10 warm-up, one every ${interval} µs; capture-gai linked $gai_link)

| name | median µs | p99 µs | first address |
|---|---:|---:|---|
| $name (granted: the stub's A and AAAA) | $(gai_med "$name" median_us) | $(gai_med "$name" p99_us) | $(gai "$name" first | head -1) |
| localhost (the box's /etc/hosts, no DNS) | $(gai_med localhost median_us) | $(gai_med localhost p99_us) | $(gai localhost first | head -1) |

granted name median $(us_to_ms "$(gai_med "$name" median_us)") ms (target ≤ 0.2 ms); medians and p99s are medians over the rounds.
Per round, granted median µs: $(gai "$name" median_us | paste -sd' ')
REPORT
