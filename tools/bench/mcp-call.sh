#!/usr/bin/env bash
# tools/bench/mcp-call.sh — an MCP tool call through corral vs the same call
# direct to the server, in one invocation. Loopback only; root (corral run).
#
# The server is tests/mcp_e2e/test_server.mjs (the official SDK's Streamable
# HTTP transport) over TLS on 127.0.0.1 with --tools 100 (so tools/list
# answers 108 tools). The client is tools/bench/mcp-call-client.py: one
# session on one keep-alive connection, --calls timed tools/call of `echo`
# and --lists timed tools/list.
#   direct   the client on the host, TLS to the server
#   corral   the client in a `corral run --rootfs host` box, plain HTTP to
#            the box's MCP listener (127.0.0.1:3129/mcp/bench); corral's
#            embedded gateway reads, decides (rules allow echo and tool_*),
#            records, forwards over TLS with the server's credential injected,
#            scrubs, filters and pins the tools/list answer.
# Rounds alternate the two; each round's p50 and p99 are computed, and the
# medians over rounds reported with corral's added time (corral - direct).
# Targets (issue 29): added p50 ≤ 0.2 ms and p99 ≤ 1 ms for a call,
# tools/list of 100 tools filtered and pinned ≤ 0.5 ms added.
# RSS: --sessions K sessions held open through corral (each its own
# connection, initialized); corral's supervisor RSS (the embedded gateway is
# in it) with K held minus with 1 held, over K-1: bytes per open MCP session.
# CPU (--cpu N, N > 0): corral's own CPU time per message, which the load of
# a shared machine disturbs far less than the latencies: one run of N
# tools/list, one of 5N tools/call, one of neither (the session only), each
# read as the sum of corral's threads' run time (/proc/PID/task/*/schedstat)
# once the client is done and before the run ends; (run - empty) / messages.
#
# Usage: tools/bench/mcp-call.sh [--rounds N] [--calls N] [--lists N] [--sessions K] [--cpu N] [--corral PATH]
#   defaults: --rounds 5 --calls 400 --lists 50 --sessions 64 --cpu 0; corral = $CORRAL_BIN or build-test/tools/corral
# Not a test: figures depend on the machine and its load.
set -euo pipefail

rounds=5
calls=400
lists=50
sessions=64
cpu=0
corral=${CORRAL_BIN:-}
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --calls) calls=$2; shift 2 ;;
    --lists) lists=$2; shift 2 ;;
    --sessions) sessions=$2; shift 2 ;;
    --cpu) cpu=$2; shift 2 ;;
    --corral) corral=$2; shift 2 ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) echo "mcp-call.sh: unknown argument '$1' (accepted: --rounds N, --calls N, --lists N, --sessions K, --cpu N, --corral PATH)" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
if [ -z "$corral" ]; then corral=$repo/build-test/tools/corral; fi
[ "$(id -u)" -eq 0 ] || { echo "mcp-call.sh: must run as root (corral run creates namespaces)" >&2; exit 2; }
[ -x "$corral" ] || { echo "mcp-call.sh: corral binary not found at $corral (build it, or pass --corral PATH)" >&2; exit 2; }
for p in node python3 openssl; do
  command -v $p >/dev/null || { echo "mcp-call.sh: $p is missing (tools/install-deps.sh)" >&2; exit 2; }
done
[ -d "$repo/node_modules/@modelcontextprotocol/sdk" ] ||
  { echo "mcp-call.sh: the MCP SDK is missing: run tools/install-npm-deps.sh" >&2; exit 2; }

work=$(mktemp -d /tmp/corral-mcp-call-XXXXXX)
chmod 0711 "$work"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

echo "# test CA and the server's certificate (mcp.bench.invalid and 127.0.0.1)" >&2
# shellcheck source=tools/bench/standin.sh
. "$here/standin.sh"
make_test_ca "$work" "corral MCP bench CA"
make_leaf "$work" srv mcp.bench.invalid "DNS:mcp.bench.invalid,IP:127.0.0.1"

node "$repo/tests/mcp_e2e/test_server.mjs" --http 0 --tls-cert "$work/srv.crt" --tls-key "$work/srv.key" --tools 100 \
  > "$work/server.out" 2> "$work/server.err" &
pids+=($!)
wait_for "$work/server.out" '^ready' 10 || true
port=$(sed -n 's/^ready {"port":\([0-9]*\)}.*/\1/p' "$work/server.out")
[ -n "$port" ] || { echo "mcp-call.sh: the test server did not start: $(cat "$work/server.err")" >&2; exit 1; }

mkdir -p "$work/org/workers/w" "$work/state" "$work/ws"
chmod 0700 "$work/state"
echo "mcp-bench-secret-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$work/mcp.secret"
chmod 0600 "$work/mcp.secret"
cat > "$work/org/org.toml" <<TOML
[gateway]
state_dir = "$work/state"
[credentials.mcpkey]
kind = "oauth_token"
file = "$work/mcp.secret"
TOML
cat > "$work/org/workers/w/worker.toml" <<TOML
agent = "none"
[mcp.servers.bench]
url = "https://mcp.bench.invalid/mcp"
credential = "mcpkey"
connect_to = "127.0.0.1:$port"
upstream_ca_file = "$work/ca.crt"
[[mcp.rules]]
server = "bench"
tool = "echo"
action = "allow"
[[mcp.rules]]
server = "bench"
tool = "tool_*"
action = "allow"
TOML

client=(python3 /opt/bench/mcp-call-client.py)
box_run() {
  "$corral" run --config "$work/org" --worker w --rootfs host --workspace "$work/ws" --state-dir "$work/state" \
    --ro-bind "$here:/opt/bench" --timeout 600s -- "$@"
}
run_direct() {
  python3 "$here/mcp-call-client.py" --url "https://127.0.0.1:$port/mcp" --cafile "$work/ca.crt" \
    --calls "$calls" --lists "$lists" > "$work/direct.json"
}
run_corral() {
  box_run "${client[@]}" --url http://127.0.0.1:3129/mcp/bench --calls "$calls" --lists "$lists" \
    > "$work/corral.json" 2> "$work/corral.err" ||
    { echo "mcp-call.sh: the corral run failed: $(tail -c 600 "$work/corral.err")" >&2; exit 1; }
}

# p50 and p99 of one round's samples, in ms: "P50 P99".
percentiles() {
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))[sys.argv[2]]
d.sort()
pick = lambda q: d[min(len(d) - 1, int(q * len(d)))] / 1000
print(f"{pick(0.50):.3f} {pick(0.99):.3f}")' "$1" "$2"
}
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) printf "%.3f", a[(NR + 1) / 2]; else printf "%.3f", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "machine: $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "corral: $corral ($(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')); $rounds rounds, $calls calls and $lists lists per round and path"
run_direct; run_corral  # warm-up
listed_direct=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["listed"])' "$work/direct.json")
listed_corral=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["listed"])' "$work/corral.json")
: > "$work/rounds"
for ((r = 0; r < rounds; r++)); do
  run_direct; run_corral
  echo "$(percentiles "$work/direct.json" call_us) $(percentiles "$work/corral.json" call_us)" \
       "$(percentiles "$work/direct.json" list_us) $(percentiles "$work/corral.json" list_us)" >> "$work/rounds"
done
col() { awk -v c="$1" '{ print $c }' "$work/rounds" | median; }
dc50=$(col 1) dc99=$(col 2) cc50=$(col 3) cc99=$(col 4) dl50=$(col 5) dl99=$(col 6) cl50=$(col 7) cl99=$(col 8)
added() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.3f", a - b }'; }
printf '%-34s %10s %10s %12s\n' "median of rounds (ms)" direct corral "added"
printf '%-34s %10s %10s %12s\n' "tools/call p50" "$dc50" "$cc50" "$(added "$cc50" "$dc50")"
printf '%-34s %10s %10s %12s\n' "tools/call p99" "$dc99" "$cc99" "$(added "$cc99" "$dc99")"
printf '%-34s %10s %10s %12s\n' "tools/list p50 ($listed_direct → $listed_corral tools)" "$dl50" "$cl50" "$(added "$cl50" "$dl50")"
printf '%-34s %10s %10s %12s\n' "tools/list p99" "$dl99" "$cl99" "$(added "$cl99" "$dl99")"

# RSS per open MCP session: corral's supervisor with 1, then K sessions held.
rss_with() {
  local k=$1 pid rss
  rm -f "$work/ws/release"
  # Not through box_run: $! must be corral's own pid, not a subshell's.
  "$corral" run --config "$work/org" --worker w --rootfs host --workspace "$work/ws" --state-dir "$work/state" \
    --ro-bind "$here:/opt/bench" --timeout 600s -- \
    "${client[@]}" --url http://127.0.0.1:3129/mcp/bench --hold "$k" --release /workspace/release \
    > "$work/hold.out" 2> "$work/hold.err" &
  pid=$!
  for _ in $(seq 600); do grep -q '^held' "$work/hold.out" 2>/dev/null && break; sleep 0.1; done
  grep -q '^held' "$work/hold.out" || { echo "mcp-call.sh: holding $k sessions failed: $(tail -c 600 "$work/hold.err")" >&2; exit 1; }
  sleep 0.5
  rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status")
  touch "$work/ws/release"
  wait "$pid"
  echo "$rss"
}
rss1=$(rss_with 1)
rssk=$(rss_with "$sessions")
echo "corral run RSS: ${rss1} KiB with 1 MCP session, ${rssk} KiB with $sessions;" \
     "$(awk -v a="$rssk" -v b="$rss1" -v k="$sessions" 'BEGIN { printf "%.1f KiB", (a - b) / (k - 1) }') per added session"

# corral's CPU (µs, its threads' run time) over a run of C calls and L lists,
# read while the box waits to be released.
cpu_with() {
  local c=$1 l=$2 pid ns
  rm -f "$work/ws/release"
  # The box cannot write the (root's) workspace: it says it is done on stdout.
  "$corral" run --config "$work/org" --worker w --rootfs host --workspace "$work/ws" --state-dir "$work/state" \
    --ro-bind "$here:/opt/bench" --timeout 600s -- /bin/sh -c \
    "${client[*]} --url http://127.0.0.1:3129/mcp/bench --calls $c --lists $l > /dev/null && echo client-done;
     while [ ! -e /workspace/release ]; do sleep 0.05; done" > "$work/cpu.out" 2> "$work/cpu.err" &
  pid=$!
  for _ in $(seq 6000); do grep -q '^client-done' "$work/cpu.out" 2>/dev/null && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  grep -q '^client-done' "$work/cpu.out" || { echo "mcp-call.sh: the CPU run failed: $(tail -c 600 "$work/cpu.err")" >&2; exit 1; }
  ns=$(cat /proc/"$pid"/task/*/schedstat | awk '{ s += $1 } END { printf "%d", s }')
  touch "$work/ws/release"
  wait "$pid"
  echo $((ns / 1000))
}
if [ "$cpu" -gt 0 ]; then
  empty=$(cpu_with 0 0)
  lists_cpu=$(cpu_with 0 "$cpu")
  calls_cpu=$(cpu_with $((5 * cpu)) 0)
  echo "corral CPU: $(( (lists_cpu - empty) / cpu )) µs per tools/list ($cpu lists), $(( (calls_cpu - empty) / (5 * cpu) ))" \
       "µs per tools/call ($((5 * cpu)) calls); the session alone ${empty} µs; load $(cut -d' ' -f1-3 /proc/loadavg)"
fi
