#!/usr/bin/env bash
# tools/bench/scale.sh — N boxes at once through ONE `corral gateway` daemon,
# each streaming model requests through an inject grant with metering, a model
# policy and a budget, to a local TLS stand-in (tools/bench/gateway-load.cpp
# serve, 127.0.0.1 only).
#
# Each box is `corral run --rootfs host --gateway unix:SOCK --stdin -- sh -c
# BOX` (curl from the host's /usr, HTTPS_PROXY to the box's bridge); all N
# share one FIFO as stdin, which is how the script holds them at barriers:
#   1. start: N runs launched at once; each box prints "ready" (start wall =
#      launch to the last "ready");
#   2. requests: released together, each box makes R streamed POSTs to
#      /v1/messages (--events E events each) on one keep-alive connection
#      (one curl, as an agent CLI's client pool does), checks every answer
#      (200, the stream's message_stop) and prints "done K";
#   3. held: each box opens one more model stream and holds it (first event
#      read): PSS of corral's processes of every box is taken now, while all
#      N are alive with a live model stream each;
#   4. end: released, each box drops its stream and makes one request past
#      its budget ([budget] requests = R + 1), which must be refused (400,
#      X-Corral-Reason: model_budget); the box exits 0 only if all of this held.
# Before the boxes, the same R requests are made by N host processes at once
# directly to the stand-in (same curl, flags and body; no proxy): the
# baseline of the latency figures.
# Reported: start wall; successes (exit 0, every request answered, budget
# refusal seen, teardown verdict clean); the daemon's CPU (utime+stime) per
# request over phase 2, and the bridges' (the runs' supervisors); p50/p99
# per-request latency in the box and direct, and their difference (all
# requests; the first on each connection and the later ones apart); PSS per
# box (supervisor with its bridge, init, reaper: every process of corral's
# binary under each run) and the daemon's PSS / N; host counts
# (tools/bench/host_counts.sh) before and after, which must be equal.
# Exit 1 with the failures named if any box, check or count fails.
#
# Usage (root): tools/bench/scale.sh [--boxes N] [--requests R] [--events E]
#                                    [--gateway-threads T] [--corral PATH]
#   defaults: --boxes 256 --requests 4 --events 20, the daemon's own default
#   threads, corral = $CORRAL_BIN or build-test/tools/corral.
# Its own state dir, UIDs 1900500000-1900500999 and no capacity.toml (no
# max_boxes). Not a test: figures depend on the machine and its load; they go
# to docs/benchmarks.md ("Scale: N boxes through one daemon").
set -euo pipefail

boxes=256
requests=4
events=20
gw_threads=()
corral=${CORRAL_BIN:-}
while [ $# -gt 0 ]; do
  case "$1" in
    --boxes) boxes=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --events) events=$2; shift 2 ;;
    --gateway-threads) gw_threads=(--threads "$2"); shift 2 ;;
    --corral) corral=$2; shift 2 ;;
    -h|--help) sed -n '2,42p' "$0"; exit 0 ;;
    *) echo "scale.sh: unknown argument '$1' (accepted: --boxes N, --requests R, --events E, --gateway-threads T, --corral PATH)" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/host_counts.sh"
[ -n "$corral" ] || corral=$repo/build-test/tools/corral
[ "$(id -u)" -eq 0 ] || { echo "scale.sh: must run as root (corral run creates namespaces)" >&2; exit 2; }
[ -x "$corral" ] || { echo "scale.sh: corral binary not found at $corral (build it, or pass --corral PATH)" >&2; exit 2; }
for v in boxes requests events; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "scale.sh: --$v '${!v}': give a positive integer" >&2; exit 2; }
done
[ "$boxes" -le 1000 ] || { echo "scale.sh: --boxes $boxes: at most 1000 (the bench's UID range)" >&2; exit 2; }
[ "$events" -ge 6 ] || { echo "scale.sh: --events $events: at least 6 (the stand-in's smallest stream)" >&2; exit 2; }
for p in g++ openssl curl jq; do
  command -v "$p" >/dev/null || { echo "scale.sh: $p is missing (tools/install-deps.sh)" >&2; exit 2; }
done

work=$(mktemp -d /tmp/corral-scale-XXXXXX)
chmod 0711 "$work"
upstream_pid='' daemon_pid=''
run_pids=() client_pids=()
cleanup() {
  exec 8>&- 2>/dev/null || true
  for p in "${run_pids[@]}" "${client_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  # Never a bare `wait` (both lists empty): it would wait for the daemon and the stand-in too.
  for p in "${run_pids[@]}" "${client_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  [ -z "$daemon_pid" ] || { kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; }
  [ -z "$upstream_pid" ] || { kill "$upstream_pid" 2>/dev/null || true; wait "$upstream_pid" 2>/dev/null || true; }
  rm -rf "$work"
}
trap cleanup EXIT
die() { echo "scale.sh: $*" >&2; exit 1; }

# What host_counts.sh counts: the bench's UIDs, state dir and run dirs.
uid_range=1900500000-1900500999
state=$work/state
R=$work/runs
mkdir -p "$state" "$R" "$work/out" "$work/direct"
chmod 0700 "$state"

echo "# building the stand-in upstream (tools/bench/gateway-load.cpp)" >&2
g++ -O2 -std=c++20 -o "$work/gateway-load" "$here/gateway-load.cpp" -lssl -lcrypto -pthread
host=model.scale.test
(
  cd "$work"
  ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.crt -days 2 -subj "/CN=corral scale bench CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
  openssl req -new "${ec[@]}" -keyout up.key -out up.csr -subj "/CN=$host" 2>/dev/null
  printf 'subjectAltName=DNS:%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$host" > up.ext
  openssl x509 -req -in up.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out up.crt -days 2 -extfile up.ext 2>/dev/null
)
"$work/gateway-load" serve --cert "$work/up.crt" --key "$work/up.key" > "$work/serve.out" &
upstream_pid=$!
for _ in $(seq 100); do grep -q '^bulk ' "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
https_port=$(awk '/^https/ { print $2 }' "$work/serve.out")
[ -n "$https_port" ] || die "the stand-in upstream did not start"

# The daemon: one inject grant for the stand-in (dialled at 127.0.0.1 by
# connect_to, never resolved), a model policy (every request body read) and a
# per-run budget of R + 1 requests (R measured + the held stream), priced (a
# cost on every ledger line). No token or USD limit: the held stream, dropped
# by the box, has no usage, which would exhaust such an account (fail closed,
# docs/budgets.md) before the requests limit is reached.
install -m 0600 /dev/null "$work/model.key"
echo "sk-ant-api03-scale-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$work/model.key"
socket=$work/gw.sock
ledger=$work/daemon-ledger.jsonl
cat > "$work/gateway.toml" <<TOML
[gateway]
listen_unix = "$socket"
ledger = "$ledger"
state_dir = "$state"
upstream_ca_file = "$work/ca.crt"
[credentials.model]
kind = "api_key"
file = "$work/model.key"
[[grants]]
host = "$host"
mode = "inject"
credential = "model"
routes = ["POST /v1/messages"]
connect_to = "127.0.0.1:$https_port"
allow_private = true
[grants.policy]
models = ["claude-bench-*"]
server_tools = false
url_sources = false
[budget]
requests = $((requests + 1))
[prices."claude-bench-1"]
input = 3.0
output = 15.0
cache_write = 3.75
cache_read = 0.30
source = "tools/bench/scale.sh stand-in"
date = "2026-12-07"
TOML
# At the priority the shipped unit gives it (Nice=-10 in
# tools/systemd/corral-gateway.service.in): every box's traffic waits on it.
nice -n -10 "$corral" gateway --config "$work/gateway.toml" "${gw_threads[@]}" > "$work/daemon.out" 2> "$work/daemon.err" &
daemon_pid=$!
for _ in $(seq 100); do grep -q listening "$work/daemon.out" 2>/dev/null && break; sleep 0.1; done
grep -q listening "$work/daemon.out" || die "the daemon did not start: $(cat "$work/daemon.err")"

# ask N URL [CURL OPTIONS...]: N streamed requests on one keep-alive
# connection, a "lat CODE TOTAL_S TTFB_S CONNECTS" line each on stdout, the
# bodies in $dir/b1..bN. Shared by the box and the direct clients.
ask_sh=$(cat <<'SH'
body='{"model":"claude-bench-1","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"Say hello to the benchmark."}]}'
ask() {
  n=$1 u=$2
  shift 2
  i=0
  while [ $i -lt "$n" ]; do i=$((i + 1)); set -- "$@" -o "$dir/b$i" "$u"; done
  curl -sS -N --http1.1 -H 'x-api-key: sk-ant-placeholder' -H 'anthropic-version: 2023-06-01' \
    -H 'content-type: application/json' -d "$body" \
    -w 'lat %{http_code} %{time_total} %{time_starttransfer} %{num_connects}\n' "$@" < /dev/null
}
# answered N: how many of ask's N requests got 200 and a whole stream; prints "done K".
answered() {
  ok=0 i=0
  while [ $i -lt "$1" ]; do
    i=$((i + 1))
    grep -q '"message_stop"' "$dir/b$i" 2> /dev/null && ok=$((ok + 1))
  done
  codes=$(grep -c '^lat 200 ' "$dir/lat")
  [ "$codes" -lt "$ok" ] && ok=$codes
  echo "done $ok"
  [ "$ok" -eq "$1" ] || echo "error: $(head -c 300 "$dir/curl.err" | tr '\n' ' ')"
}
SH
)
# The box: $1 = R, $2 = events. Exits 0 only if everything was as expected.
box_sh=$ask_sh$(cat <<'SH'

dir=/tmp url=https://model.scale.test/v1/messages
echo ready
read -r _ || exit 3
ask "$1" "$url?events=$2" > "$dir/lat" 2> "$dir/curl.err"
cat "$dir/lat"
answered "$1"
fine=$ok
curl -sS -N --http1.1 -H 'x-api-key: sk-ant-placeholder' -H 'content-type: application/json' -d "$body" \
  -o "$dir/held" "$url?hold=1" < /dev/null 2> "$dir/held.err" &
held=$!
k=0
while ! grep -q message_start "$dir/held" 2> /dev/null && kill -0 $held 2> /dev/null && [ $k -lt 1200 ]; do
  k=$((k + 1)); sleep 0.05
done
if grep -q message_start "$dir/held" 2> /dev/null; then echo held; else echo "held-failed $(head -c 300 "$dir/held.err")"; fine=-1; fi
read -r _ || exit 3
kill $held 2> /dev/null; wait $held 2> /dev/null
over=$(curl -sS --http1.1 -H 'x-api-key: sk-ant-placeholder' -H 'content-type: application/json' -d "$body" \
  -D "$dir/over.head" -o /dev/null -w '%{http_code}' "$url?events=$2" < /dev/null 2>&1)
reason=$(tr -d '\r' < "$dir/over.head" | awk 'tolower($1) == "x-corral-reason:" { print $2 }')
echo "budget $over $reason"
[ "$fine" -eq "$1" ] && [ "$over" = 400 ] && [ "$reason" = model_budget ]
SH
)
# A direct client: $1 = R, $2 = URL, $3 = its dir, then curl's options.
direct_sh=$ask_sh$(cat <<'SH'

n=$1 u=$2 dir=$3
shift 3
echo ready
read -r _ || exit 3
ask "$n" "$u" "$@" > "$dir/lat" 2> "$dir/curl.err"
cat "$dir/lat"
answered "$n"
SH
)

# count_lines PATTERN FILES...: how many of FILES have a line matching PATTERN.
count_lines() { local p=$1; shift; { grep -l -e "$p" "$@" 2>/dev/null || true; } | wc -l; }
# await PATTERN COUNT SECONDS WHAT: until COUNT of the watched outputs have
# the line, or fail naming a watched process that ended early.
# watch_pids[i] writes watch_outs[i] (stdout) and watch_errs[i] (stderr).
watch_pids=() watch_outs=() watch_errs=()
await() {
  local p=$1 want=$2 secs=$3 what=$4 got=0 t i
  for ((t = 0; t < secs * 10; t++)); do
    got=$(count_lines "$p" "${watch_outs[@]}")
    [ "$got" -ge "$want" ] && return 0
    for i in "${!watch_pids[@]}"; do
      kill -0 "${watch_pids[$i]}" 2>/dev/null ||
        die "$what: ${watch_outs[$i]##*/} ended early; $got of $want so far; its output: $(tail -c 400 "${watch_outs[$i]}" "${watch_errs[$i]}" | tr '\n' ' ')"
    done
    sleep 0.1
  done
  die "$what: $got of $want within ${secs}s"
}
# release: one line per box (each reads exactly one line at each barrier).
release() { printf '%*s' "$1" '' | tr ' ' '\n' >&8; }
# cpu_ticks PID...: their utime + stime, in clock ticks.
cpu_ticks() { (cd /proc && printf '%s/stat\n' "$@" | xargs awk '{ sub(/^.*\) /, ""); t += $12 + $13 } END { print t + 0 }'); }
percentile() { sort -g | awk -v q="$1" '{ v[NR] = $1 } END { if (NR == 0) { print "nan"; exit } i = int(q * NR); if (i < q * NR) i++; if (i < 1) i = 1; print v[i] }'; }
# lat_ms FILTER FILES...: the latencies (ms) of the lat lines FILTER (awk) picks.
lat_ms() { local f=$1; shift; cat "$@" | awk "\$1 == \"lat\" && ($f) { printf \"%.3f\\n\", \$3 * 1000 }"; }
tck=$(getconf CLK_TCK)
mkfifo "$work/go"

# ---- warm-up: one box through the daemon (its CA, the grant's leaf) -----------
exec 8<> "$work/go"
"$corral" run --rootfs host --state-dir "$state" --uid-range "$uid_range" --gateway "unix:$socket" \
  --run-dir "$R/warm" --stdin --quiet -- /bin/sh -c "$box_sh" box "$requests" "$events" \
  < "$work/go" > "$work/out/warm" 2> "$work/out/warm.err" &
run_pids=($!) watch_pids=($!) watch_outs=("$work/out/warm") watch_errs=("$work/out/warm.err")
await '^ready' 1 120 "warm-up box"; release 1
await '^held' 1 120 "warm-up box"; release 1
wait "${run_pids[0]}" || die "the warm-up box failed (exit $?): $(tail -c 600 "$work/out/warm" "$work/out/warm.err")"
run_pids=()
exec 8>&-

# ---- direct: N host clients at once, straight to the stand-in -------------------
exec 8<> "$work/go"
for ((i = 0; i < boxes; i++)); do
  mkdir -p "$work/direct/$i"
  sh -c "$direct_sh" direct "$requests" "https://$host:$https_port/v1/messages?events=$events" "$work/direct/$i" \
    --noproxy '*' --cacert "$work/ca.crt" --resolve "$host:$https_port:127.0.0.1" \
    < "$work/go" > "$work/direct/$i.out" 2>&1 &
  client_pids+=($!)
done
watch_pids=("${client_pids[@]}") watch_outs=() watch_errs=()
for ((i = 0; i < boxes; i++)); do watch_outs+=("$work/direct/$i.out"); watch_errs+=(/dev/null); done
await '^ready' "$boxes" 60 "direct clients"
release "$boxes"
for p in "${client_pids[@]}"; do wait "$p" || true; done
client_pids=()
exec 8>&-
direct_ok=$(cat "$work"/direct/*.out | awk -v r="$requests" '$1 == "done" && $2 == r { n++ } END { print n + 0 }')

# ---- the boxes ---------------------------------------------------------------------
before=$(snapshot)
ledger_before=$(wc -l < "$ledger")
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)
exec 8<> "$work/go"
t0=$(date +%s.%N)
for ((i = 0; i < boxes; i++)); do
  "$corral" run --rootfs host --state-dir "$state" --uid-range "$uid_range" --gateway "unix:$socket" \
    --run-dir "$R/$i" --stdin --quiet --timeout 30m -- /bin/sh -c "$box_sh" box "$requests" "$events" \
    < "$work/go" > "$work/out/$i" 2> "$work/out/$i.err" &
  run_pids+=($!)
done
watch_pids=("${run_pids[@]}") watch_outs=() watch_errs=()
for ((i = 0; i < boxes; i++)); do watch_outs+=("$work/out/$i"); watch_errs+=("$work/out/$i.err"); done
outs=("${watch_outs[@]}")
await '^ready' "$boxes" 1800 "start"
t_ready=$(date +%s.%N)

daemon_cpu0=$(cpu_ticks "$daemon_pid")
bridge_cpu0=$(cpu_ticks "${run_pids[@]}")
t1=$(date +%s.%N)
release "$boxes"
await '^done' "$boxes" 1800 "requests"
t2=$(date +%s.%N)
daemon_cpu1=$(cpu_ticks "$daemon_pid")
bridge_cpu1=$(cpu_ticks "${run_pids[@]}")

await '^held' "$boxes" 600 "held streams"
# PSS now: every box alive with a live model stream. Corral's processes of a
# box are those under its `corral run` whose executable is corral's binary
# (the supervisor with its bridge thread, the init, the reaper); the rest
# (sh, curl) is the box's own command.
corral_id=$(stat -L -c '%d:%i' "$corral")
awk '{ pid = $1; sub(/^.*\) /, ""); print pid, $2 }' /proc/[0-9]*/stat 2>/dev/null > "$work/ppid"
printf '%s\n' "${run_pids[@]}" > "$work/roots"
awk 'NR == FNR { root[$1] = $1; next } { parent[$1] = $2 }
     END { for (p in parent) { q = p; while (q in parent && !(q in root)) q = parent[q]; if (q in root) print p } }' \
  "$work/roots" "$work/ppid" > "$work/tree"
(cd /proc && sed 's|$|/exe|' "$work/tree" | xargs -r stat -L -c '%n %d:%i' 2>/dev/null || true) | sed 's|/exe | |' > "$work/exe"
(cd /proc && sed 's|$|/smaps_rollup|' "$work/tree" | xargs -r awk '/^Pss:/ { split(FILENAME, f, "/"); print f[1], $2 }' 2>/dev/null || true) > "$work/pss"
read -r corral_procs corral_pss box_procs box_pss < <(awk -v id="$corral_id" 'NR == FNR { exe[$1] = $2; next }
  { if (exe[$1] == id) { cn++; cp += $2 } else { bn++; bp += $2 } } END { print cn + 0, cp + 0, bn + 0, bp + 0 }' \
  "$work/exe" "$work/pss")
daemon_pss=$(awk '/^Pss:/ { print $2 }' "/proc/$daemon_pid/smaps_rollup")
daemon_rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$daemon_pid/status")

release "$boxes"
exec 8>&-
failures=()
exits=()
for ((i = 0; i < boxes; i++)); do
  rc=0
  wait "${run_pids[$i]}" || rc=$?
  exits+=("$rc")
done
t_end=$(date +%s.%N)
run_pids=()
# A box succeeded iff it exited 0 (its own checks: every answer, the held
# stream, the budget refusal) and its record's teardown verdict is clean.
succeeded=0 unclean=0
for ((i = 0; i < boxes; i++)); do
  ok=yes
  if [ "${exits[$i]}" -ne 0 ]; then
    ok=no; failures+=("box $i: exit ${exits[$i]}: $(grep -v '^lat ' "$work/out/$i" | tail -c 300 | tr '\n' ' ') $(tail -c 300 "$work/out/$i.err" | tr '\n' ' ')")
  fi
  if ! grep -q '"verdict": *"clean"' "$R/$i/run.json" 2>/dev/null; then
    ok=no; unclean=$((unclean + 1))
    failures+=("box $i: teardown verdict not clean: $(jq -c '.teardown // .' "$R/$i/run.json" 2>/dev/null | head -c 300)")
  fi
  [ "$ok" = no ] || succeeded=$((succeeded + 1))
done
answered=$(cat "${outs[@]}" | awk -v r="$requests" '$1 == "done" && $2 == r { n++ } END { print n + 0 }')
refused=$(cat "${outs[@]}" | awk '$1 == "budget" && $2 == 400 && $3 == "model_budget" { n++ } END { print n + 0 }')
sleep 0.1  # the ledger's lines reach the file up to ~10 ms after their exchange
metered=$(tail -n +$((ledger_before + 1)) "$ledger" | grep '"path":"/v1/messages' | grep -c '"state":"reported"' || true)
after=$(snapshot)

# ---- report ------------------------------------------------------------------------
n_req=$((boxes * requests))
box_lat=("${outs[@]}")
direct_lat=("$work"/direct/*.out)
row() {  # label filter
  local b50 b99 d50 d99
  b50=$(lat_ms "$2" "${box_lat[@]}" | percentile 0.5); b99=$(lat_ms "$2" "${box_lat[@]}" | percentile 0.99)
  d50=$(lat_ms "$2" "${direct_lat[@]}" | percentile 0.5); d99=$(lat_ms "$2" "${direct_lat[@]}" | percentile 0.99)
  awk -v l="$1" -v n="$(lat_ms "$2" "${box_lat[@]}" | wc -l)" -v b50="$b50" -v b99="$b99" -v d50="$d50" -v d99="$d99" \
    'BEGIN { if (n == 0) printf "| %s | 0 | | | | | | |\n", l
             else printf "| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", l, n, b50, b99, d50, d99, b50 - d50, b99 - d99 }'
}
fmt() { awk "BEGIN { printf \"$1\", $2 }"; }
cat <<REPORT
## Scale: $boxes boxes through one daemon (tools/bench/scale.sh --boxes $boxes --requests $requests --events $events${gw_threads[*]:+ --gateway-threads ${gw_threads[1]}})

Machine: $(nproc) CPUs, $(uname -r), $(date -u '+%Y-%m-%d %H:%M UTC'); load at the boxes' start $load_at_start, at the end $(cut -d' ' -f1-3 /proc/loadavg).
corral: $corral; daemon threads: ${gw_threads[1]:-default}; $requests streamed requests per box of $events events each, one keep-alive connection per box.

| figure | value |
|---|---:|
| start wall ($boxes runs launched at once, until all printed "ready") | $(fmt '%.2f s' "$t_ready - $t0") |
| succeeded (exit 0: $requests/$requests answered, held stream, budget refusal; teardown clean) | $succeeded / $boxes ($unclean not clean) |
| requests answered (boxes with all $requests) | $answered / $boxes boxes, $n_req requests; direct clients: $direct_ok / $boxes |
| budget refusals seen by the boxes (400 model_budget) | $refused / $boxes |
| ledger lines of /v1/messages with usage "reported" | $metered (at least $n_req expected) |
| request phase wall ($n_req requests, all boxes at once) | $(fmt '%.2f s' "$t2 - $t1") |
| daemon CPU per request (utime+stime over the request phase) | $(fmt '%.3f ms' "($daemon_cpu1 - $daemon_cpu0) * 1000 / $tck / $n_req") ($((daemon_cpu1 - daemon_cpu0)) ticks) |
| bridges' CPU per request (the $boxes supervisors, same window) | $(fmt '%.3f ms' "($bridge_cpu1 - $bridge_cpu0) * 1000 / $tck / $n_req") |
| PSS per box, corral's processes ($corral_procs processes: $(fmt '%.1f' "$corral_procs / $boxes") per box) | $(fmt '%.2f MiB' "$corral_pss / 1024 / $boxes") |
| daemon PSS / $boxes (RSS $daemon_rss KiB) | $(fmt '%.2f MiB' "$daemon_pss / 1024 / $boxes") |
| corral per box, both | $(fmt '%.2f MiB' "($corral_pss + $daemon_pss) / 1024 / $boxes") |
| the box's own command per box (sh, the held curl: $box_procs processes; not corral's) | $(fmt '%.2f MiB' "$box_pss / 1024 / $boxes") |
| teardown wall (end released, all runs exited) | $(fmt '%.2f s' "$t_end - $t2") |

Latency per request, ms (curl's time_total of the whole stream; direct: $boxes host clients at once, same curl and body, no proxy):

| requests | n | box p50 | box p99 | direct p50 | direct p99 | added p50 | added p99 |
|---|---:|---:|---:|---:|---:|---:|---:|
$(row "all" 1)
$(row "first on its connection" '$5 > 0')
$(row "later (keep-alive)" '$5 == 0')

Host counts (tools/bench/host_counts.sh), daemon running both times:
  before: $before
  after:  $after
REPORT
if [ "$before" != "$after" ]; then failures+=("host counts differ before and after"); fi
if [ "$metered" -lt "$n_req" ]; then failures+=("only $metered metered ledger lines, expected at least $n_req"); fi
if [ "$direct_ok" -ne "$boxes" ]; then failures+=("only $direct_ok of $boxes direct clients had all answers: $(grep -h '^error' "$work"/direct/*.out | head -3)"); fi
kill "$daemon_pid"
rc=0; wait "$daemon_pid" || rc=$?
daemon_pid=
[ "$rc" -eq 0 ] || failures+=("the daemon exited $rc at SIGTERM: $(tail -c 300 "$work/daemon.err")")
if [ "${#failures[@]}" -eq 0 ]; then
  echo "scale: PASS"
else
  echo "scale: FAIL (${#failures[@]} problems)"
  printf '  %s\n' "${failures[@]:0:10}"
  exit 1
fi
