#!/usr/bin/env bash
# tools/bench/gateway.sh — egress gateway benchmark. Loopback only.
#
# Each comparison runs in this one invocation, configurations alternating per
# round, and reports medians:
#  (a) CONNECT tunnel bulk throughput (one TCP stream of --bulk-bytes):
#      direct vs corral (tunnel grant) vs tinyproxy, and haproxy as a bare TCP
#      relay (no CONNECT; what one more hop costs on this machine).
#                                                            targets: corral ≥ 0.8× direct, ≥ 2× tinyproxy
#  (b) inject mode: keep-alive HTTPS GETs (x-api-key rewritten to the real key),
#      requests/s with --conns connections and p50/p99 latency with one connection,
#      direct TLS vs corral vs mitmproxy (mitmdump with an addon doing the same
#      header rewrite, verifying the upstream against the test CA) vs nginx and
#      haproxy as reverse proxies doing the same work: TLS terminated with a
#      certificate of the test CA, the box's auth headers replaced by the real
#      x-api-key, re-encrypted to the upstream over kept-alive connections that
#      verify it against the test CA (nginx: 2 worker processes; haproxy:
#      nbthread 2, http-reuse always; own configs in the work dir, 127.0.0.1
#      only, no access log). One GET /key-check through each before the rounds
#      shows whether the upstream got the real key. A peer that is not installed
#      is skipped and the report says so.
#                                                            targets: corral ≥ 50× mitmproxy req/s, p50 added ≤ 0.3 ms,
#                                                            corral ≥ 0.9× nginx and haproxy req/s (goal ≥ 1.0×)
#  (c) corral gateway RSS idle and with 256 open CONNECT tunnels.  target ≤ 32 MiB
#  (d) response scrubbing (the injected key masked in what comes back): corral as
#      shipped vs the same binary with CORRAL_GATEWAY_UNSAFE_NO_SCRUB=1 (scrubbing
#      off; an environment variable for this comparison only), for (b)'s req/s and
#      for one SSE stream of --sse-bytes of model-like events (MB/s).
#                                                            target: on/off ≥ 0.95× for both
#  (e) metering and the model policy: one more corral gateway whose inject grant has a
#      [grants.policy] (models, server_tools = false, url_sources = false), so a
#      POST to /v1/messages is metered and its body checked, while a POST to
#      /v1/unmetered on the same grant is neither; the upstream answers both alike.
#      (e1) req/s with --conns connections, a small Messages body answered by a
#           JSON message with usage.                        target: metered/unmetered ≥ 0.95×
#      (e2) an Anthropic-shaped SSE stream of --events events, each its own chunk:
#           median time to the first event and per event (stream time / events),
#           20 streams per round and path, the paths' streams alternating on two
#           connections.                                     target: added ≤ 0.05 ms each
#      (e3) RSS per open stream: --held-streams model streams held open (first
#           event read), gateway RSS minus idle RSS over their count, metered vs not
#           (each on a fresh gateway of the same config).
#  (f) the signed journal: corral as shipped (every decision a signed, chained
#      journal record before its ledger line, group-committed) vs the same binary
#      with [gateway] journal = false, for (b)'s req/s.        target: on/off ≥ 0.9×
# The upstream and the load generator are tools/bench/gateway-load.cpp (Boost.Beast,
# thread per connection), built here with g++.
#
# Usage: tools/bench/gateway.sh [--rounds N] [--seconds S] [--conns C] [--bulk-bytes N] [--sse-bytes N]
#                                [--corral PATH] [--baseline PATH] [--gateway-threads N]
#                                [--events N] [--held-streams K] [--only SECTIONS]
#   defaults: --rounds 5 --seconds 3 --conns 4 --bulk-bytes 1073741824 --sse-bytes 268435456,
#   --events 200 --held-streams 128,
#   corral = $CORRAL_BIN or build-test/tools/corral
#   --baseline PATH: a second corral binary (e.g. an older commit) run as one more
#     configuration in (a), (b), (c) and (e1), same config, same rounds: before/after in
#     one run. In (e1) the baseline's grant omits `routes` when that binary predates it.
#   --only SECTIONS: run only these of a b c d e f (e.g. --only e); default all.
#   --gateway-threads N: pass --threads N to every corral gateway (default: corral's own default).
# Not a test: figures depend on the machine and its load.
set -euo pipefail

rounds=5
seconds=3
conns=4
bulk_bytes=1073741824
sse_bytes=268435456
events=200
held_streams=128
corral=${CORRAL_BIN:-}
baseline=
gw_threads=()
only=abcdef
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --conns) conns=$2; shift 2 ;;
    --bulk-bytes) bulk_bytes=$2; shift 2 ;;
    --sse-bytes) sse_bytes=$2; shift 2 ;;
    --corral) corral=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --gateway-threads) gw_threads=(--threads "$2"); shift 2 ;;
    --events) events=$2; shift 2 ;;
    --held-streams) held_streams=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '2,/^# Not a test/p' "$0"; exit 0 ;;
    *) echo "gateway.sh: unknown argument '$1' (accepted: --rounds N, --seconds S, --conns C, --bulk-bytes N, --sse-bytes N, --corral PATH, --baseline PATH, --gateway-threads N, --events N, --held-streams K, --only SECTIONS)" >&2; exit 2 ;;
  esac
done

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tools/bench/gateway-peers.sh
. "$here/gateway-peers.sh"
repo=$(cd "$here/../.." && pwd)
[ -n "$corral" ] || corral=$repo/build-test/tools/corral
[ -x "$corral" ] || { echo "gateway.sh: corral binary not found at $corral (build it, or pass --corral PATH)" >&2; exit 2; }
[[ $only =~ ^[a-f]+$ ]] || { echo "gateway.sh: --only '$only': give letters among a b c d e f, e.g. --only e" >&2; exit 2; }
want() { [[ $only == *$1* ]]; }
[ -z "$baseline" ] || [ -x "$baseline" ] || { echo "gateway.sh: --baseline $baseline is not an executable" >&2; exit 2; }
# The load generator connects to listen_tcp, which serves root's sockets only.
[ "$(id -u)" = 0 ] || { echo "gateway.sh: run as root (corral gateway's listen_tcp serves root's connections only)" >&2; exit 2; }
for p in g++ openssl tinyproxy mitmdump python3; do
  command -v "$p" >/dev/null || { echo "gateway.sh: $p is missing (tools/install-deps.sh)" >&2; exit 2; }
done

work=$(mktemp -d /tmp/corral-gwbench-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# shellcheck source=tools/bench/standin.sh
. "$here/standin.sh"

echo "# building the load generator" >&2
g++ -O2 -std=c++20 -o "$work/gateway-load" "$here/gateway-load.cpp" -lssl -lcrypto -pthread
load=$work/gateway-load

echo "# test CA, upstream and front (nginx, haproxy) certificates (IP:127.0.0.1, P-256 like corral's leaves)" >&2
make_test_ca "$work" "corral bench CA"
for n in up front; do make_leaf "$work" $n 127.0.0.1 IP:127.0.0.1; done
cat "$work/front.crt" "$work/front.key" > "$work/front.pem"

start_api_standin "$load" sk-ant-api03-bench

echo "# corral gateway" >&2
start_gateway() {  # name binary [VAR=value...]: config, ledger, state and CA under $work/<name>; sets <name>_port, <name>_pid
  # (grant_extra, when set: more TOML for the inject grant)
  local name=$1 bin=$2 dir=$work/$1 port
  shift 2
  mkdir -p "$dir"
  port=$(free_port)
  cat > "$dir/gateway.toml" <<TOML
[gateway]
listen_tcp = "127.0.0.1:$port"
tcp_identity = "bench/run-0"
ledger = "$dir/ledger.jsonl"
${gateway_extra:-}
state_dir = "$dir/state"
upstream_ca_file = "$work/ca.crt"
[gateway.limits]
max_connections = 4096
[credentials.bench]
kind = "api_key"
file = "$work/key"
[[grants]]
host = "127.0.0.1"
port = $bulk_port
mode = "tunnel"
allow_private = true
[[grants]]
host = "127.0.0.1"
port = $https_port
mode = "inject"
credential = "bench"
allow_private = true
${grant_extra:-}
TOML
  env "$@" "$bin" gateway --config "$dir/gateway.toml" "${gw_threads[@]}" > "$dir/gw.out" 2> "$dir/gw.err" &
  pids+=($!)
  printf -v "${name}_pid" %s $!
  printf -v "${name}_port" %s "$port"
  wait_for "$dir/gw.out" 'listening tcp:' 10
  cat "$dir/state/ca/ca.crt" > "$dir/ca.pem"
}
start_gateway corral "$corral"
gateways=(corral)
if [ -n "$baseline" ]; then start_gateway baseline "$baseline"; gateways+=(baseline); fi
# (d): the same binary with response scrubbing off.
start_gateway noscrub "$corral" CORRAL_GATEWAY_UNSAFE_NO_SCRUB=1
# (f): the same binary without its journal.
gateway_extra='journal = false'
start_gateway nojournal "$corral"
unset gateway_extra
# (e): a model policy that reads the body of every model request. Under a
# policy a request that could spend passes only on a model route or a route
# the grant declares (docs/budgets.md): /v1/unmetered is declared.
grant_extra='routes = ["POST /v1/messages", "POST /v1/unmetered"]
[grants.policy]
models = ["claude-bench-*"]
server_tools = false
url_sources = false'
start_gateway meter "$corral"
if [ -n "$baseline" ]; then start_gateway meter_baseline "$baseline"; fi
# (e3) holds its streams on two fresh gateways of that config, one per path, so that
# neither's idle RSS includes what the other's streams left in the heap.
start_gateway hold_metered "$corral"
start_gateway hold_unmetered "$corral"
unset grant_extra

if want a; then start_tinyproxy; start_tcp_relay; fi
if want b || want d || want f; then start_mitmproxy; fi
peers=()  # (b)'s reverse-proxy peers that are installed and running
if want b; then start_nginx; start_haproxy; fi

# ---- (a) bulk throughput ------------------------------------------------------
if want a; then
echo "# (a) tunnel bulk throughput, $rounds rounds of $bulk_bytes bytes" >&2
a_cfgs=(direct "${gateways[@]}" tinyproxy)
[ -z "$relay_port" ] || a_cfgs+=(relay)
for c in "${a_cfgs[@]}"; do : > "$work/a.$c"; done
for r in $(seq 1 "$rounds"); do
  for i in $(seq 0 $(( ${#a_cfgs[@]} - 1 ))); do
    cfg=${a_cfgs[$(( (i + r) % ${#a_cfgs[@]} ))]}
    case $cfg in
      direct) "$load" bulk --target "$bulk_port" --bytes "$bulk_bytes" ;;
      corral|baseline) port_var=${cfg}_port; "$load" bulk --target "$bulk_port" --bytes "$bulk_bytes" --proxy "${!port_var}" ;;
      tinyproxy) "$load" bulk --target "$bulk_port" --bytes "$bulk_bytes" --proxy "$tp_port" ;;
      relay) "$load" bulk --target "$relay_port" --bytes "$bulk_bytes" ;;
    esac | awk '{print $2}' >> "$work/a.$cfg"
  done
done
a_direct=$(median < "$work/a.direct"); a_corral=$(median < "$work/a.corral"); a_tp=$(median < "$work/a.tinyproxy")
a_relay=; [ -z "$relay_port" ] || a_relay=$(median < "$work/a.relay")
fi

# ---- (b) inject mode --------------------------------------------------------------
# (d) and (f) compare against (b)'s req/s, so (b) runs for any of them.
if want b || want d || want f; then
echo "# (b) inject: $rounds rounds x ${seconds}s, $conns connections for req/s, 1 for latency" >&2
b_cfgs=(direct "${gateways[@]}" noscrub nojournal mitmproxy "${peers[@]}")
for f in rps lat; do for c in "${b_cfgs[@]}"; do : > "$work/b.$f.$c"; done; done
run_b() {  # cfg conns
  case $1 in
    direct) "$load" rps --target "127.0.0.1:$https_port" --ca "$work/ca.crt" --conns "$2" --seconds "$seconds" ;;
    corral|baseline|noscrub|nojournal) port_var=${1}_port; "$load" rps --target "127.0.0.1:$https_port" --ca "$work/$1/ca.pem" --proxy "${!port_var}" --conns "$2" --seconds "$seconds" ;;
    mitmproxy) "$load" rps --target "127.0.0.1:$https_port" --ca "$work/mitm/mitmproxy-ca-cert.pem" --proxy "$mp_port" --conns "$2" --seconds "$seconds" ;;
    nginx|haproxy) port_var=${1}_port; "$load" rps --target "127.0.0.1:${!port_var}" --ca "$work/ca.crt" --conns "$2" --seconds "$seconds" ;;
  esac
}
for r in $(seq 1 "$rounds"); do
  for i in $(seq 0 $(( ${#b_cfgs[@]} - 1 ))); do
    cfg=${b_cfgs[$(( (i + r) % ${#b_cfgs[@]} ))]}
    run_b "$cfg" "$conns" | awk '{print $4}' >> "$work/b.rps.$cfg"
    run_b "$cfg" 1 >> "$work/b.lat.$cfg"
  done
done
b_rps() { median < "$work/b.rps.$1"; }
b_p50() { awk '{print $6}' "$work/b.lat.$1" | median; }
b_p99() { awk '{print $8}' "$work/b.lat.$1" | median; }

# the upstream really got the injected key (one direct request through corral)
inject_ok=no
grep -q '"credential":"bench"' "$work/corral/ledger.jsonl" && inject_ok=yes
fi

# ---- (d) SSE stream, scrubbing on vs off ------------------------------------------
if want d; then
echo "# (d) SSE: $rounds rounds of one $sse_bytes-byte event stream, scrubbing on vs off" >&2
d_cfgs=(direct corral noscrub)
for c in "${d_cfgs[@]}"; do : > "$work/d.$c"; done
for r in $(seq 1 "$rounds"); do
  for i in $(seq 0 $(( ${#d_cfgs[@]} - 1 ))); do
    cfg=${d_cfgs[$(( (i + r) % ${#d_cfgs[@]} ))]}
    case $cfg in
      direct) "$load" sse --target "127.0.0.1:$https_port" --ca "$work/ca.crt" --bytes "$sse_bytes" ;;
      *) port_var=${cfg}_port; "$load" sse --target "127.0.0.1:$https_port" --ca "$work/$cfg/ca.pem" --proxy "${!port_var}" --bytes "$sse_bytes" ;;
    esac | awk '{print $2}' >> "$work/d.$cfg"
  done
done
fi
d_mbps() { median < "$work/d.$1"; }

# ---- (e) metering and policy ------------------------------------------------------
e_path() { case $1 in metered|baseline_metered) echo /v1/messages ;; *) echo /v1/unmetered ;; esac; }
if want e; then
echo "# (e) metering: $rounds rounds, /v1/messages (metered, policy) vs /v1/unmetered, same grant" >&2
e_cfgs=(metered unmetered)
# (e1) with --baseline: the same two paths on the baseline binary's gateway of the same config.
[ -z "$baseline" ] || e_cfgs+=(baseline_metered baseline_unmetered)
for f in rps ev; do for c in "${e_cfgs[@]}"; do : > "$work/e.$f.$c"; done; done
for r in $(seq 1 "$rounds"); do
  for i in $(seq 0 $(( ${#e_cfgs[@]} - 1 ))); do
    cfg=${e_cfgs[$(( (i + r) % ${#e_cfgs[@]} ))]}
    gw=meter; [[ $cfg == baseline_* ]] && gw=meter_baseline
    port_var=${gw}_port
    "$load" rps --target "127.0.0.1:$https_port" --ca "$work/$gw/ca.pem" --proxy "${!port_var}" --conns "$conns" \
      --seconds "$seconds" --post "$(e_path "$cfg")" | awk '{print $4}' >> "$work/e.rps.$cfg"
  done
  # (e2): the two paths' streams alternate within one invocation (same load for both)
  "$load" events --target "127.0.0.1:$https_port" --ca "$work/meter/ca.pem" --proxy "$meter_port" \
    --post /v1/messages --post2 /v1/unmetered --events "$events" --streams 20 > "$work/e.ev.pair"
  cut -d' ' -f1-4 "$work/e.ev.pair" >> "$work/e.ev.metered"
  cut -d' ' -f5-8 "$work/e.ev.pair" >> "$work/e.ev.unmetered"
done
e_rps() { median < "$work/e.rps.$1"; }
e_ttfb() { awk '{print $2}' "$work/e.ev.$1" | median; }
e_event() { awk '{print $4}' "$work/e.ev.$1" | median; }
# metered means metered: ledger lines for /v1/messages carry "metering", /v1/unmetered's do not
e_metered_lines=$(grep '"/v1/messages' "$work/meter/ledger.jsonl" | grep -c '"metering"' || true)
e_unmetered_lines=$(grep '"/v1/unmetered' "$work/meter/ledger.jsonl" | grep -c '"metering"' || true)
fi

# ---- (c) RSS with 256 tunnels ----------------------------------------------------
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
mkfifo "$work/hold.in"
if want c; then
for g in "${gateways[@]}"; do
  pid_var=${g}_pid port_var=${g}_port
  printf -v "${g}_rss_idle" %s "$(rss "${!pid_var}")"
  "$load" hold --target "127.0.0.1:$bulk_port" --proxy "${!port_var}" --count 256 < "$work/hold.in" > "$work/hold.out" &
  hold_pid=$!
  pids+=($hold_pid)
  exec 9> "$work/hold.in"
  wait_for "$work/hold.out" '^held 256' 30
  sleep 0.5
  printf -v "${g}_rss_256" %s "$(rss "${!pid_var}")"
  exec 9>&-
  wait "$hold_pid" 2>/dev/null || true
done
fi
# (e3): held model streams on the metering gateway, metered vs unmetered path
if want e; then
for cfg in metered unmetered; do
  pid_var=hold_${cfg}_pid port_var=hold_${cfg}_port
  printf -v "e_rss_idle_$cfg" %s "$(rss "${!pid_var}")"
  "$load" hold --target "127.0.0.1:$https_port" --proxy "${!port_var}" --ca "$work/hold_$cfg/ca.pem" \
    --post "$(e_path "$cfg")" --count "$held_streams" < "$work/hold.in" > "$work/hold.out" &
  hold_pid=$!
  pids+=($hold_pid)
  exec 9> "$work/hold.in"
  wait_for "$work/hold.out" "^held $held_streams" 60
  sleep 0.5
  printf -v "e_rss_held_$cfg" %s "$(rss "${!pid_var}")"
  exec 9>&-
  wait "$hold_pid" 2>/dev/null || true
done
fi

# ---- report ---------------------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "nan"; else printf "%.2f", a / b }'; }
added() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (a - b) / 1000 }'; }
label() {
  case $1 in
    corral) echo "corral" ;;
    baseline) echo "corral baseline ($baseline)" ;;
    noscrub) echo "corral, scrubbing off" ;;
    nojournal) echo "corral, journal off" ;;
    nginx) echo "nginx $(nginx -v 2>&1 | sed 's|.*/||') reverse proxy" ;;
    haproxy) echo "haproxy $(haproxy -v | awk 'NR == 1 {print $3}') reverse proxy" ;;
  esac
}
relay_row() {
  if [ -n "$a_relay" ]; then echo "| haproxy $(haproxy -v | awk 'NR == 1 {print $3}') TCP relay (no CONNECT, splice) | $a_relay | $(ratio "$a_relay" "$a_direct") |"
  else echo "| haproxy TCP relay | not installed | |"; fi
}
a_rows() { for g in "${gateways[@]}"; do v=$(median < "$work/a.$g"); echo "| $(label "$g") (tunnel grant) | $v | $(ratio "$v" "$a_direct") |"; done; }
b_rows() {
  for g in "${gateways[@]}"; do
    echo "| $(label "$g") inject | $(b_rps "$g") | $(b_p50 "$g") | $(b_p99 "$g") | $(added "$(b_p50 "$g")" "$(b_p50 direct)") |"
  done
  echo "| $(label noscrub) inject | $(b_rps noscrub) | $(b_p50 noscrub) | $(b_p99 noscrub) | $(added "$(b_p50 noscrub)" "$(b_p50 direct)") |"
  echo "| $(label nojournal) inject | $(b_rps nojournal) | $(b_p50 nojournal) | $(b_p99 nojournal) | $(added "$(b_p50 nojournal)" "$(b_p50 direct)") |"
}
peer_rows() {  # mitmproxy's, then the reverse proxies'
  echo "| mitmproxy 8 (mitmdump + addon) | $(b_rps mitmproxy) | $(b_p50 mitmproxy) | $(b_p99 mitmproxy) | $(added "$(b_p50 mitmproxy)" "$(b_p50 direct)") |"
  for p in "${peers[@]}"; do
    c=${p}_key_check
    echo "| $(label "$p") (upstream: ${!c}) | $(b_rps "$p") | $(b_p50 "$p") | $(b_p99 "$p") | $(added "$(b_p50 "$p")" "$(b_p50 direct)") |"
  done
}
peer_lines() {
  for p in nginx haproxy; do
    if [[ " ${peers[*]} " == *" $p "* ]]; then
      echo "corral / $p req/s = $(ratio "$(b_rps corral)" "$(b_rps "$p")") (target ≥ 0.9, goal ≥ 1.0); p50 added: corral $(added "$(b_p50 corral)" "$(b_p50 direct)") ms, $p $(added "$(b_p50 "$p")" "$(b_p50 direct)") ms."
    else
      echo "$p: not installed, skipped (tools/install-deps.sh)."
    fi
  done
}
per_round() {  # prefix cfg...
  local p=$1; shift
  for c in "$@"; do printf '%s %s; ' "$c" "$(paste -sd' ' "$work/$p.$c")"; done
}
rss_line() {
  for g in "${gateways[@]}"; do
    i=${g}_rss_idle t=${g}_rss_256
    echo "(c) $(label "$g") gateway RSS: idle $((${!i} / 1024)) MiB (${!i} KiB), with 256 open tunnels $((${!t} / 1024)) MiB (${!t} KiB) (target ≤ 32 MiB)"
  done
}
only_arg=; [ "$only" = abcdef ] || only_arg=" --only $only"
e1_baseline_line() {
  [ -n "$baseline" ] || return 0
  echo "(e1) baseline ($baseline), same config: metered $(e_rps baseline_metered) req/s, unmetered $(e_rps baseline_unmetered) req/s, metered / unmetered = $(ratio "$(e_rps baseline_metered)" "$(e_rps baseline_unmetered)"); this binary / baseline: metered $(ratio "$(e_rps metered)" "$(e_rps baseline_metered)"), unmetered $(ratio "$(e_rps unmetered)" "$(e_rps baseline_unmetered)")."
}
cat <<REPORT
## Gateway (tools/bench/gateway.sh --rounds $rounds --seconds $seconds --conns $conns --bulk-bytes $bulk_bytes --sse-bytes $sse_bytes --events $events --held-streams $held_streams${baseline:+ --baseline $baseline}${gw_threads[*]:+ --gateway-threads ${gw_threads[1]}}$only_arg)

Machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d). Medians of $rounds rounds, configurations alternating.

REPORT
if want a; then
cat <<REPORT
(a) CONNECT tunnel, one stream of $bulk_bytes bytes on loopback

| path | MB/s | vs direct |
|---|---:|---:|
| direct | $a_direct | 1.00 |
$(a_rows)
| tinyproxy | $a_tp | $(ratio "$a_tp" "$a_direct") |
$(relay_row)

corral / tinyproxy = $(ratio "$a_corral" "$a_tp") (target ≥ 2); corral / direct = $(ratio "$a_corral" "$a_direct") (target ≥ 0.8)${a_relay:+; corral / the bare haproxy relay = $(ratio "$a_corral" "$a_relay")}.
Per round, MB/s: $(per_round a "${a_cfgs[@]}")

REPORT
fi
if want b; then
cat <<REPORT
(b) inject mode, keep-alive HTTPS GET, x-api-key rewritten to the real key (injected: $inject_ok)

| path | req/s ($conns conns) | p50 µs (1 conn) | p99 µs (1 conn) | p50 added ms |
|---|---:|---:|---:|---:|
| direct TLS | $(b_rps direct) | $(b_p50 direct) | $(b_p99 direct) | — |
$(b_rows)
$(peer_rows)

corral / mitmproxy req/s = $(ratio "$(b_rps corral)" "$(b_rps mitmproxy)") (target ≥ 50); corral p50 added target ≤ 0.3 ms.
$(peer_lines)
Per round, req/s: $(per_round b.rps "${b_cfgs[@]}")

REPORT
fi
if want d; then
cat <<REPORT
(d) response scrubbing on vs off (CORRAL_GATEWAY_UNSAFE_NO_SCRUB=1), same binary

| path | inject req/s ($conns conns) | SSE MB/s (one stream of $sse_bytes bytes) |
|---|---:|---:|
| direct TLS | $(b_rps direct) | $(d_mbps direct) |
| corral (scrubbing on) | $(b_rps corral) | $(d_mbps corral) |
| corral, scrubbing off | $(b_rps noscrub) | $(d_mbps noscrub) |

on / off: req/s $(ratio "$(b_rps corral)" "$(b_rps noscrub)"), SSE MB/s $(ratio "$(d_mbps corral)" "$(d_mbps noscrub)") (target ≥ 0.95 each).
Per round, SSE MB/s: $(per_round d "${d_cfgs[@]}")

REPORT
fi
if want c; then
cat <<REPORT
$(rss_line)

REPORT
fi
if want f; then
cat <<REPORT
(f) the signed journal on vs off ([gateway] journal = false), same binary: inject req/s on / off = $(ratio "$(b_rps corral)" "$(b_rps nojournal)") (target ≥ 0.9); p50 added by the journal $(added "$(b_p50 corral)" "$(b_p50 nojournal)") ms.
Journal records written by corral's gateway: $(cat "$work"/corral/state/journal/gateway/*.jsonl 2>/dev/null | grep -c '"type":"decision"') decisions; its ledger: $(wc -l < "$work/corral/ledger.jsonl") lines.

REPORT
fi
if want e; then
cat <<REPORT
(e) metering and the model policy, one gateway, one inject grant with [grants.policy] (models, server_tools = false, url_sources = false):
POST /v1/messages (metered, body checked) vs POST /v1/unmetered (neither), the same body and the same answer.
Ledger lines with "metering": /v1/messages $e_metered_lines, /v1/unmetered $e_unmetered_lines.

| path | req/s ($conns conns, JSON message) | TTFB µs (first event) | per event µs ($events events) |
|---|---:|---:|---:|
| /v1/messages (metered) | $(e_rps metered) | $(e_ttfb metered) | $(e_event metered) |
| /v1/unmetered | $(e_rps unmetered) | $(e_ttfb unmetered) | $(e_event unmetered) |

(e1) metered / unmetered req/s = $(ratio "$(e_rps metered)" "$(e_rps unmetered)") (target ≥ 0.95).
$(e1_baseline_line)
(e2) added by metering: TTFB $(added "$(e_ttfb metered)" "$(e_ttfb unmetered)") ms, per event $(added "$(e_event metered)" "$(e_event unmetered)") ms (target ≤ 0.05 ms each).
Per round, req/s: $(per_round e.rps "${e_cfgs[@]}")
Per round, TTFB µs / per event µs: metered $(awk '{printf "%s/%s ", $2, $4}' "$work/e.ev.metered"); unmetered $(awk '{printf "%s/%s ", $2, $4}' "$work/e.ev.unmetered")
(e3) $held_streams held model streams, each on a fresh gateway of the same config: metered idle ${e_rss_idle_metered} KiB, held ${e_rss_held_metered} KiB, $(awk -v a="$e_rss_held_metered" -v b="$e_rss_idle_metered" -v k="$held_streams" 'BEGIN {printf "%.1f", (a - b) / k}') KiB per stream; unmetered idle ${e_rss_idle_unmetered} KiB, held ${e_rss_held_unmetered} KiB, $(awk -v a="$e_rss_held_unmetered" -v b="$e_rss_idle_unmetered" -v k="$held_streams" 'BEGIN {printf "%.1f", (a - b) / k}') KiB per stream
REPORT
fi
