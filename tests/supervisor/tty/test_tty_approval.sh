#!/usr/bin/env bash
# tests/supervisor/tty/test_tty_approval.sh — `corral run --tty` asks the
# operator at the run's own terminal when the box's request waits for a
# person's approval (docs/approvals.md, "At the run's terminal (--tty)"),
# driven as a person would, through tmux (a real pty pair on the host):
# send-keys types, capture-pane reads the screen.
#
# The box's curl asks through a grant with `approval = true` for a plain
# http:// request to a stand-in upstream on the host's loopback (python3's
# http.server: traffic to loopback only). The cases:
#   yes:       the question shows what is asked; the box's output written
#              while it is up waits (not on the screen, not lost); 'y'
#              approves, curl gets the upstream's body;
#   no:        'n' denies, curl gets the 403 with who denied;
#   elsewhere: `corral approve` from another process while the question is
#              up: the question gives way to a notice, and the key pressed
#              after it is the notice's;
#   vi:        a full-screen program redraws its screen over the question
#              after the answer (the window nudge);
# each time the box's next `read` gets only the line typed after the
# answer (no y or n reached the box), and ledger.jsonl and run.json record
# the decision and who made it ("root (uid 0) at the run's terminal").
# Root only; exits 77 with the reason when root or tmux is missing.
set -uo pipefail

CORRAL=${CORRAL_BIN:?CORRAL_BIN (the corral binary) must be set}
UID_RANGE=1900100600-1900100649

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (corral run builds real sandboxes)" >&2; exit 77; fi
if ! command -v tmux >/dev/null; then echo "SKIP: tmux is not installed (tools/install-deps.sh installs it)" >&2; exit 77; fi
# python3 is one of corral's test dependencies (tools/install-deps.sh): its absence is a failure, not a skip.
if ! command -v python3 >/dev/null; then echo "FAIL: python3 (the stand-in upstream) is not installed" >&2; exit 1; fi

TMP=$(mktemp -d /tmp/corral-tty-approval.XXXXXX)
SOCK="$TMP/tmux.sock"
. "$(dirname "$0")/tmux_helpers.sh"
UPSTREAM_PID=
cleanup() {
  tm kill-server 2>/dev/null
  [ -n "$UPSTREAM_PID" ] && kill "$UPSTREAM_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

# wait_file PATH: until it exists (hang guard 60 s).
wait_file() {
  local i
  for ((i = 0; i < 600; i++)); do [ -e "$1" ] && return 0; sleep 0.1; done
  return 1
}

# The stand-in upstream: the host's loopback, a port the kernel picks.
mkdir -p "$TMP/www"
echo "hello-from-upstream" > "$TMP/www/hello.txt"
. "$(dirname "$0")/../../support/http_standin.sh"
start_http_standin "$TMP/www" "$TMP/upstream.log"
if [ -z "$PORT" ]; then echo "FAIL: the stand-in upstream did not start: $(cat "$TMP/upstream.log")" >&2; exit 1; fi

# Worker "ask": the stand-in only once a person approves (10 min to decide:
# a loaded machine must not turn a question into a timeout).
ORG="$TMP/org"
mkdir -p "$ORG/workers/ask"
: > "$ORG/org.toml"
cat > "$ORG/workers/ask/worker.toml" <<EOF
agent = "none"
[[grants]]
host = "127.0.0.1"
port = $PORT
mode = "tunnel"
allow_private = true
approval = true
approval_timeout = "10m"
EOF
STATE="$TMP/state"

# The box: a writer that prints while the question is up (once the test
# says so through the workspace, and says it has printed), curl through the
# proxy, then a `read` of the next line typed: what the box got as input.
mkdir -p "$TMP/ws"
cat > "$TMP/ws/box.sh" <<EOF
(while [ ! -e /workspace/go ]; do sleep 0.1; done; echo written-while-asked; touch /workspace/wrote) &
curl -sS --noproxy '' -x http://127.0.0.1:3128 -w '\nstatus=%{http_code}\n' http://127.0.0.1:$PORT/hello.txt
echo curl-exit=\$?
wait
echo type-a-line
read -r line
echo "box-read=[\$line]"
EOF
# root's, so bound as is (not ID-mapped): the box's UID writes its marker
# because anyone may.
chmod 0777 "$TMP/ws"
# A full-screen program: vi draws first, then (the test says when) a
# request asks; the question is drawn over vi's screen.
cat > "$TMP/ws/vi.sh" <<EOF
(while [ ! -e /workspace/go ]; do sleep 0.1; done; curl -sS --noproxy '' -x http://127.0.0.1:3128 -o /dev/null http://127.0.0.1:$PORT/hello.txt) &
exec vi /tmp/new-file
EOF
chmod 0644 "$TMP/ws/box.sh" "$TMP/ws/vi.sh"

# start_case SESSION [SCRIPT]: corral run --tty of the box (box.sh) in a
# host shell of a 120x40 tmux window; the shell prints corral's exit status after it.
start_case() {
  local s=$1 script=${2:-box.sh}
  mkdir -p "$TMP/$s"
  rm -f "$TMP/ws/go" "$TMP/ws/wrote"
  tm new-session -d -s "$s" -x 120 -y 40 "env -i PATH=/usr/bin:/bin TERM=tmux-256color PS1='host\$ ' bash --norc --noprofile -i"
  wait_for "$s" 'host\$' 60 || return 1
  type_line "$s" "$CORRAL run --tty --config $ORG --worker ask --rootfs host --state-dir $STATE --uid-range $UID_RANGE --run-dir $TMP/$s/run --workspace $TMP/ws --timeout 120s -- /bin/sh /workspace/$script; echo corral-exit=\$?"
}

# The question is up and says what is asked; the box's output written
# meanwhile waits. Sets ID.
ID=
question_is_up() {
  local s=$1
  if ! wait_for $s 'approve this one request\? \[y/n\]' 60; then fail "$s: no question at the run's terminal"; return 1; fi
  pass "$s: the question is asked at the run's terminal"
  screen $s | grep -q "GET 127.0.0.1:$PORT/hello.txt" && pass "$s: it says what is asked (GET 127.0.0.1:$PORT/hello.txt)" ||
    fail "$s: the question does not say GET 127.0.0.1:$PORT/hello.txt"
  ID=$(screen $s | sed -n 's/.*approval \(ap-[0-9]*-[0-9a-f]*\) for .*/\1/p' | head -1)
  [ -n "$ID" ] && screen $s | grep -q "expires in [0-9]* s" && pass "$s: it names the approval ($ID) and when it expires" ||
    fail "$s: the question lacks the id or the expiry"
  touch "$TMP/ws/go"
  if wait_file "$TMP/ws/wrote"; then
    screen $s | grep -q '^written-while-asked' && fail "$s: the box's output reached the screen while the question was up" ||
      pass "$s: the box's output written while the question is up waits"
  else
    fail "$s: the box's writer did not run"
  fi
}

# After the answer: the box's paused output came, the box read only the
# line typed after the answer, corral exited 0.
box_untouched() {
  local s=$1
  wait_for $s '^written-while-asked' 60 && pass "$s: the box's paused output is shown after the answer" ||
    fail "$s: the box's output written during the question was lost"
  if wait_for $s '^type-a-line' 60; then
    type_line $s 'after-answer'
    wait_for $s '^box-read=' 60
    screen $s | grep -q '^box-read=\[after-answer\]$' && pass "$s: the answer key never reached the box (it read only 'after-answer')" ||
      fail "$s: the box's input: $(screen $s | grep '^box-read=')"
  else
    fail "$s: the box did not go on after curl"
  fi
  wait_for $s '^corral-exit=' 60
  screen $s | grep -q '^corral-exit=0$' && pass "$s: corral exited 0" || fail "$s: $(screen $s | grep '^corral-exit=')"
}

# recorded SESSION STATE DECIDER: the ledger's decided line and run.json's counts.
recorded() {
  local s=$1 state=$2 decider=$3
  python3 - "$TMP/$s/run" "$state" "$decider" <<'EOF' && pass "$s: ledger and run.json record $state by $decider" || fail "$s: the records do not say $state by $decider"
import json, sys
run, state, decider = sys.argv[1:]
lines = [json.loads(l) for l in open(run + "/ledger.jsonl") if l.strip()]
decided = [l["approval"] for l in lines if l.get("approval", {}).get("phase") == "decided"]
assert len(decided) == 1, decided
assert decided[0]["state"] == state and decided[0]["decided_by"] == decider, decided
counts = json.load(open(run + "/run.json"))["gateway"]["approvals"]
assert counts["requested"] == 1 and counts[state] == 1, counts
EOF
}

# ---- 1. y approves: curl gets the upstream's body.
s=yes
start_case $s
if question_is_up $s; then
  tm send-keys -t $s y
  wait_for $s "$ID: approved by root \(uid 0\) at the run's terminal" 60 && pass "$s: 'y' approves, and says so" || fail "$s: no approval line"
  wait_for $s '^status=200' 60 && screen $s | grep -q '^hello-from-upstream$' && pass "$s: curl got the upstream's body" ||
    fail "$s: curl did not get through"
  box_untouched $s
  recorded $s approved "root (uid 0) at the run's terminal"
fi

# ---- 2. n denies: curl gets the refusal with who denied.
s=no
start_case $s
if question_is_up $s; then
  tm send-keys -t $s n
  wait_for $s "$ID: denied by root \(uid 0\) at the run's terminal" 60 && pass "$s: 'n' denies, and says so" || fail "$s: no denial line"
  wait_for $s '^status=403' 60 && screen $s | grep -q "was denied by root (uid 0) at the run's terminal (denied at the run's terminal); do not retry" &&
    pass "$s: curl got the 403 naming who denied" || fail "$s: curl did not get the refusal"
  box_untouched $s
  recorded $s denied "root (uid 0) at the run's terminal"
fi

# ---- 3. decided elsewhere while the question is up: a notice takes the next key.
s=elsewhere
start_case $s
if question_is_up $s; then
  out=$("$CORRAL" approve "$ID" --state-dir "$STATE" 2>&1) || fail "$s: corral approve failed: $out"
  wait_for $s "$ID: approved by root \(uid 0\)\$" 60 && wait_for $s 'press any key to go back to the box' 60 &&
    pass "$s: the question gives way to a notice saying who decided" || fail "$s: no notice after corral approve"
  screen $s | grep -q '^status=200' && fail "$s: the box's output came through under the notice" ||
    pass "$s: the box's output still waits under the notice"
  tm send-keys -t $s y
  wait_for $s '^status=200' 60 && pass "$s: after the key, curl's answer is shown (it was approved)" || fail "$s: curl's answer did not come"
  box_untouched $s
  recorded $s approved "root (uid 0)"
fi

# ---- 4. a full-screen program redraws after the answer: the window nudge.
if command -v vi >/dev/null; then
  s=vi
  start_case $s vi.sh
  if wait_for $s '"/tmp/new-file"' 60; then
    touch "$TMP/ws/go"
    if wait_for $s 'approve this one request\? \[y/n\]' 60; then
      tm send-keys -t $s y
      # vi redraws on the SIGWINCH: its ~ lines fill the window again and no
      # line of the question is left (bounded: a hang guard, not a timing claim).
      for ((i = 0; i < 600; i++)); do
        [ "$(count $s '^corral: ')" -eq 0 ] && [ "$(count $s '^~ *$')" -ge 36 ] && break
        sleep 0.1
      done
      [ "$(count $s '^corral: ')" -eq 0 ] && [ "$(count $s '^~ *$')" -ge 36 ] &&
        pass "$s: after the answer vi redrew its screen over the question" || { fail "$s: vi's screen was not redrawn:"; screen $s >&2; }
    else
      fail "$s: no question over vi"
    fi
    type_line $s ':q!'
    wait_for $s '^corral-exit=' 60
    screen $s | grep -q '^corral-exit=0$' && pass "$s: vi's :q! ends the run, exit 0" || fail "$s: $(screen $s | grep '^corral-exit=')"
  else
    fail "$s: vi did not start"
  fi
else
  echo "SKIP (counted): no vi in the host rootfs"
fi

echo "$passes passed, $failures failed"
[ $failures -eq 0 ]
