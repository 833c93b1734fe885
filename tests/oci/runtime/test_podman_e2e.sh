#!/usr/bin/env bash
# tests/oci/runtime/test_podman_e2e.sh — Debian's podman (and its conmon)
# running containers with corral-oci as the runtime (`podman --runtime`),
# on an image made here and imported from an OCI archive (`podman load`:
# no registry). podman's storage is this test's own. The cases:
#   run --rm: stdout, stderr and the exit status reach podman's caller;
#   run -d, logs, stop: the grace's SIGTERM reaches the process (its trap
#     runs, exit 0); one that ignores it is killed after `stop -t 1` (137);
#   --memory and --pids-limit are the run's cgroup limits (run.json);
#   --network host is replaced: the box has only its loopback;
#   a worker chosen by annotation: its grant reaches a stand-in on the
#     host's loopback through the gateway, an ungranted port is refused;
#     an organisation directory the node does not allow is refused;
#     a container without annotations is the node's --default-worker's;
#     with --gateway unix:PATH its egress goes through the node's daemon;
#   an inject grant: curl over TLS (proxied, and captured with no proxy)
#     reaches a TLS stand-in with the real key added by the gateway; the
#     box sent a sentinel, cannot reach the stand-in's port itself, and
#     never sees the key;
#   podman exec: the process's output and status; exec -t and -it (a pty);
#   run -t and -it: the process's stdio a pty of the box, conmon's through
#     the console socket, the window size the caller's terminal's;
#   after podman rm: no record, no process of the box's UID.
# Root only; exits 77 with the reason when root, podman, umoci or busybox
# is missing (tools/install-deps.sh installs them).
set -uo pipefail

OCI=${CORRAL_OCI_BIN:?CORRAL_OCI_BIN (the corral-oci binary) must be set}
UID_RANGE=1900101130-1900101159

SUPPORT=$(cd "$(dirname "$0")/../../support" && pwd)
. "$(dirname "$0")/engine_helpers.sh"
. "$(dirname "$0")/../../support/http_standin.sh"
. "$(dirname "$0")/../../support/test_pki.sh"
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (podman and corral-oci build real boxes)" >&2; exit 77; fi
skip_without podman conmon umoci busybox python3 curl openssl

TMP=$(mktemp -d /tmp/corral-podman.XXXXXX) || exit 1
UPSTREAM_PID=
API_PID=
GW_PID=

STATE="$TMP/state"; mkdir -m 0700 "$STATE"
ORG="$TMP/org"
# The runtime as a node installs it: a wrapper with the node's settings.
printf '#!/bin/sh\nexec "%s" --root "%s" --state-dir "%s" --uid-range %s --allow-config "%s" "$@"\n' \
  "$OCI" "$TMP/oci-root" "$STATE" "$UID_RANGE" "$ORG" > "$TMP/corral-oci"
chmod 0755 "$TMP/corral-oci"
PODMAN=(podman --root "$TMP/storage" --runroot "$TMP/runroot" --runtime "$TMP/corral-oci" --cgroup-manager cgroupfs
        --events-backend none --log-level error)
pm() { "${PODMAN[@]}" "$@"; }
cleanup() {
  pm rm -a -f >/dev/null 2>&1
  pm rmi -a -f >/dev/null 2>&1
  [ -n "$UPSTREAM_PID" ] && kill "$UPSTREAM_PID" 2>/dev/null
  [ -n "$API_PID" ] && kill "$API_PID" 2>/dev/null
  [ -n "$GW_PID" ] && kill "$GW_PID" 2>/dev/null
  umount -R "$TMP/storage/overlay" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

# ---- the image: busybox, as an OCI layout (umoci), archived, podman load.
make_busybox_archive "$TMP" /usr/bin/curl ||
  { echo "FAIL: the image could not be made: $(cat "$TMP/image.log")" >&2; exit 1; }
IMG=$(pm load -q -i "$TMP/img.tar" 2>&1 | sed -n 's/^Loaded image: //p' | tail -1)
if [ -z "$IMG" ]; then echo "FAIL: podman load: $(pm load -i "$TMP/img.tar" 2>&1)" >&2; exit 1; fi
pass "podman load of an OCI archive: $IMG"

# The newest run's run.json, one field (a Python subscript: "['exit_code']").
run_field() {
  python3 -c "import json,sys; r=json.load(open(sys.argv[1]+'/run.json')); print(eval('r'+sys.argv[2]))" \
    "$(ls -d "$STATE"/runs/* 2>/dev/null | tail -1)" "$1"
}
logs_have() { pm logs "$1" 2>/dev/null | grep -qx "$2"; }
wait_logs() { local i; for ((i = 0; i < 600; i++)); do logs_have "$1" "$2" && return 0; sleep 0.1; done; return 1; }

# ---- run --rm: output and status.
out=$(pm run --rm --network none "$IMG" sh -c 'echo out-$((6*7)) $(id -u); echo err-line >&2; exit 3' 2>"$TMP/err")
rc=$?
check "run --rm: exit status 3 reaches podman's caller (got $rc)" [ $rc -eq 3 ]
check "run --rm: stdout (got \"$out\")" [ "${out%% *}" = out-42 ]
check "run --rm: the process is not root (got \"${out##* }\")" [ "${out##* }" != 0 ]
check "run --rm: stderr" grep -qx err-line "$TMP/err"
check "run --rm: run.json says exit code 3" [ "$(run_field "['exit_code']")" = 3 ]

# ---- run -d, logs, stop (grace), stop of one that ignores SIGTERM.
c=$(pm run -d --network none --memory 256m --pids-limit 100 "$IMG" \
      sh -c 'echo started; trap "echo got-term; exit 0" TERM; while :; do sleep 0.1; done')
check "run -d + logs: the process's output" wait_logs "$c" started
check "--memory 256m is the run's memory limit" [ "$(run_field "['limits']['memory_bytes']")" = 268435456 ]
check "--pids-limit 100 is the run's pids limit" [ "$(run_field "['limits']['pids']")" = 100 ]
uid=$(run_field "['uid']")
pm stop -t 10 "$c" >/dev/null
check "stop: the SIGTERM's trap ran" logs_have "$c" got-term
check "stop: exit code 0" [ "$(pm inspect -f '{{.State.ExitCode}}' "$c")" = 0 ]
pm rm "$c" >/dev/null
c=$(pm run -d --network none "$IMG" sh -c 'trap "" TERM; echo ignoring; while :; do sleep 0.1; done')
wait_logs "$c" ignoring
pm stop -t 1 "$c" >/dev/null
check "stop -t 1 of a process that ignores SIGTERM: killed (137)" [ "$(pm inspect -f '{{.State.ExitCode}}' "$c")" = 137 ]
pm rm "$c" >/dev/null
check "after podman rm: no record under the runtime's root" [ -z "$(ls -A "$TMP/oci-root")" ]
check "after podman rm: no process of the box's UID ($uid)" [ -z "$(ps -o pid= -u "$uid")" ]

# ---- the shipped runtime entry (tools/oci-node/podman-corral.conf), the
# wrapper path pointed at this test's: `--runtime corral` by name.
sed "s|/usr/local/sbin/corral-oci-node|$TMP/corral-oci|" "$SUPPORT/../../tools/oci-node/podman-corral.conf" \
  > "$TMP/containers.conf"
got=$(CONTAINERS_CONF="$TMP/containers.conf" podman --root "$TMP/storage" --runroot "$TMP/runroot" --runtime corral \
        --cgroup-manager cgroupfs --events-backend none --log-level error run --rm --network none "$IMG" echo by-name 2>>"$TMP/stderr.log")
check "containers.conf's [engine.runtimes] corral (tools/oci-node): --runtime corral runs (got \"$got\")" \
  [ "$got" = by-name ]

# ---- the engine's network replaced by the box's loopback.
ifs=$(pm run --rm --network host "$IMG" sh -c 'grep : /proc/net/dev | cut -d: -f1' | tr -d ' ' | tr '\n' ' ')
check "--network host: the box has only its loopback (got \"$ifs\")" [ "$ifs" = "lo " ]

# ---- a worker by annotation: its grant through the gateway.
mkdir -p "$TMP/www" "$ORG/workers/w"
echo hello-from-upstream > "$TMP/www/hello.txt"
start_http_standin "$TMP/www" "$TMP/upstream.log" ||
  { echo "FAIL: the stand-in upstream did not start: $(cat "$TMP/upstream.log")" >&2; exit 1; }
: > "$ORG/org.toml"
printf 'agent = "none"\n[[grants]]\nhost = "127.0.0.1"\nport = %s\nmode = "tunnel"\nallow_private = true\n' "$PORT" \
  > "$ORG/workers/w/worker.toml"
W=(--network none --annotation io.corral.worker=w --annotation "io.corral.config=$ORG" -e http_proxy=http://127.0.0.1:3128)
got=$(pm run --rm "${W[@]}" "$IMG" wget -q -O - "http://127.0.0.1:$PORT/hello.txt" 2>>"$TMP/stderr.log")
check "a granted host through the gateway (got \"$got\")" [ "$got" = hello-from-upstream ]
check "run.json names the worker" [ "$(run_field "['worker']")" = w ]
other=$((PORT == 65535 ? 1 : PORT + 1))
pm run --rm "${W[@]}" "$IMG" wget -q -O - "http://127.0.0.1:$other/x" > "$TMP/refused" 2>&1
rc=$?
check "an ungranted port is refused (wget exit $rc)" [ $rc -ne 0 ]
err=$(pm run --rm --network none --annotation io.corral.worker=w --annotation io.corral.config=/etc "$IMG" true 2>&1)
check "an organisation directory the node does not allow is refused" grep -q 'not allowed on this node' <<<"$err"
# The node's default worker: a container without annotations is its run.
printf '#!/bin/sh\nexec "%s" --default-config "%s" --default-worker w "$@"\n' "$TMP/corral-oci" "$ORG" \
  > "$TMP/corral-oci-default"
chmod 0755 "$TMP/corral-oci-default"
got=$("${PODMAN[@]}" --runtime "$TMP/corral-oci-default" run --rm --network none -e http_proxy=http://127.0.0.1:3128 \
        "$IMG" wget -q -O - "http://127.0.0.1:$PORT/hello.txt" 2>>"$TMP/stderr.log")
check "no annotation, the node's --default-worker: its grant through the gateway (got \"$got\")" \
  [ "$got" = hello-from-upstream ]
check "the default worker's run.json names it" [ "$(run_field "['worker']")" = w ]

# ---- the node's gateway daemon (corral-oci --gateway unix:PATH): the
# box's egress through `corral gateway`, under the identity worker/run.
ORGD="$TMP/org-daemon"
mkdir -p "$ORGD/workers/w" "$TMP/gw-state"
printf '[gateway]\nlisten_unix = "%s"\nstate_dir = "%s"\nledger = "%s"\n' "$TMP/gw.sock" "$TMP/gw-state" \
  "$TMP/gw-ledger.jsonl" > "$ORGD/org.toml"
cp "$ORG/workers/w/worker.toml" "$ORGD/workers/w/worker.toml"
"${CORRAL_BIN:?CORRAL_BIN (the corral binary) must be set}" gateway --org "$ORGD" > "$TMP/gw.log" 2>&1 &
GW_PID=$!
for ((i = 0; i < 600; i++)); do [ -S "$TMP/gw.sock" ] && break; sleep 0.1; done
printf '#!/bin/sh\nexec "%s" --gateway "unix:%s" --default-config "%s" --default-worker w "$@"\n' "$TMP/corral-oci" \
  "$TMP/gw.sock" "$ORGD" > "$TMP/corral-oci-daemon"
chmod 0755 "$TMP/corral-oci-daemon"
got=$("${PODMAN[@]}" --runtime "$TMP/corral-oci-daemon" run --rm --network none -e http_proxy=http://127.0.0.1:3128 \
        "$IMG" wget -q -O - "http://127.0.0.1:$PORT/hello.txt" 2>>"$TMP/stderr.log")
run_id=$(basename "$(ls -d "$STATE"/runs/* | tail -1)")
check "--gateway unix:PATH: the grant through the node's daemon (got \"$got\")" [ "$got" = hello-from-upstream ]
check "the daemon's ledger has the connection as w/$run_id" grep -q "\"w/$run_id\"" "$TMP/gw-ledger.jsonl"
kill "$GW_PID" 2>/dev/null
wait "$GW_PID" 2>/dev/null
[ -s "$TMP/gw-ledger.jsonl" ] || echo "the daemon's log: $(tail -5 "$TMP/gw.log")" >&2

# ---- an inject grant: curl over TLS through the gateway, the real key
# added in transit; the box holds only the sentinel it sends.
mkdir -p "$TMP/pki" "$ORG/workers/wi"
make_test_ca "$TMP/pki" "corral-oci test CA" && make_leaf "$TMP/pki" api api.oci.test "DNS:api.oci.test" ||
  { echo "FAIL: the test CA could not be made" >&2; exit 1; }
SECRET="sk-oci-real-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
install -m 0600 /dev/null "$TMP/real.key" && echo "$SECRET" > "$TMP/real.key"
python3 -u "$(dirname "$0")/../../support/https_key_standin.py" --cert "$TMP/pki/api.crt" --key "$TMP/pki/api.key" \
  --secret-file "$TMP/real.key" > "$TMP/api.out" 2> "$TMP/api.log" &
API_PID=$!
for ((i = 0; i < 600; i++)); do grep -q '^port ' "$TMP/api.out" 2>/dev/null && break; sleep 0.1; done
API_PORT=$(sed -n 's/^port //p' "$TMP/api.out")
[ -n "$API_PORT" ] || { echo "FAIL: the TLS stand-in did not start: $(cat "$TMP/api.log")" >&2; exit 1; }
printf '[credentials.real]\nkind = "api_key"\nfile = "%s"\n' "$TMP/real.key" > "$ORG/org.toml"
cat > "$ORG/workers/wi/worker.toml" <<TOML
agent = "none"
[[grants]]
host = "api.oci.test"
mode = "inject"
credential = "real"
allow_private = true
connect_to = "127.0.0.1:$API_PORT"
upstream_ca_file = "$TMP/pki/ca.crt"
TOML
out=$(pm run --rm --network none --annotation io.corral.worker=wi --annotation "io.corral.config=$ORG" \
       -e "API_PORT=$API_PORT" "$IMG" sh -c '
  c="/usr/bin/curl -sS --max-time 20 -H x-api-key:sk-oci-sentinel"
  echo "proxied=$($c https://api.oci.test/v1/models)"
  echo "captured=$($c --noproxy "*" https://api.oci.test/v1/captured)"
  $c --noproxy "*" -k https://127.0.0.1:$API_PORT/v1/direct 2>&1; echo curl-rc=$?
  env' 2>>"$TMP/stderr.log")
kill "$API_PID" 2>/dev/null
lacks() { ! grep -qF -- "$1" <<<"$2"; }
check "inject: curl over TLS (HTTPS_PROXY) reaches the stand-in with the real key" grep -qx 'proxied=authorized' <<<"$out"
check "inject: curl with no proxy is captured and reaches it the same way" grep -qx 'captured=authorized' <<<"$out"
check "inject: the stand-in saw two requests, both with the real key" \
  [ "$(grep -c ' authorized$' "$TMP/api.log")/$(wc -l < "$TMP/api.log")" = 2/2 ]
check "inject: the stand-in's own port is not reachable from the box" grep -q 'curl-rc=7' <<<"$out"
check "inject: the box's environment names corral's CA" grep -q '^SSL_CERT_FILE=' <<<"$out"
check "inject: the real key is nowhere in what the box printed" lacks "$SECRET" "$out"
[ "$(grep -c '=authorized$' <<<"$out")" = 2 ] || echo "the box's output: $out; the stand-in's log: $(cat "$TMP/api.log")" >&2
: > "$ORG/org.toml"

# ---- exec: into the running container, and --detach's status.
c=$(pm run -d --network none "$IMG" sleep 1000)
out=$(pm exec -e WHO=podman-exec "$c" sh -c 'echo "$WHO $(id -u)"; exit 4')
rc=$?
check "podman exec: its exit status 4 (got $rc)" [ $rc -eq 4 ]
check "podman exec: its output and env (got \"$out\")" [ "${out%% *}" = podman-exec ]
check "podman exec: not root (got \"${out##* }\")" [ "${out##* }" != 0 ]
out=$(pm exec -t "$c" sh -c 'tty; exit 6' 2>&1 | tr -d '\r')
check "podman exec -t: a pty of the box (got \"$out\")" grep -q '^/dev/pts/[0-9]' <<<"$out"
out=$(python3 "$SUPPORT/pty_run.py" 30 100 '$ ' 'stty size; exit 3\n' "${PODMAN[@]}" exec -it "$c" sh | tr -d '\r')
rc=${PIPESTATUS[0]}
check "podman exec -it from a terminal: typed input runs, the window is the terminal's (got \"$(tail -c 80 <<<"$out")\")" \
  grep -q '^30 100$' <<<"$out"
check "podman exec -it: exit status 3 (got $rc)" [ $rc -eq 3 ]
pm rm -f "$c" >/dev/null

# ---- a terminal: the process's 0/1/2 are a pty of the box's devpts whose
# master goes to conmon's console socket (--console-socket) before create
# returns; conmon relays it and sets its size.
out=$(pm run --rm -t --network none "$IMG" sh -c 'tty; exit 5' 2>&1 | tr -d '\r')
rc=${PIPESTATUS[0]}
check "run -t: the process's stdio is a pty of the box (got \"$out\")" grep -q '^/dev/pts/[0-9]' <<<"$out"
check "run -t: exit status 5 (got $rc)" [ $rc -eq 5 ]
out=$(python3 "$SUPPORT/pty_run.py" 40 120 '$ ' 'stty size; exit 7\n' "${PODMAN[@]}" run --rm -it --network none "$IMG" sh |
        tr -d '\r')
rc=${PIPESTATUS[0]}
check "run -it from a terminal: typed input runs, the window is the terminal's (got \"$(tail -c 80 <<<"$out")\")" \
  grep -q '^40 120$' <<<"$out"
check "run -it: exit status 7 (got $rc)" [ $rc -eq 7 ]

echo "$passes passed, $failures failed"
[ $failures -eq 0 ]
