#!/usr/bin/env bash
# tests/supervisor/tty/test_tty.sh — `corral run --tty` driven as a person
# would, through a real terminal: each case starts corral in a detached tmux
# session (a real pty pair on the host), types with send-keys and reads the
# screen with capture-pane. Root only (corral builds real sandboxes); exits
# 77 with the reason when root or tmux is missing.
#
# The cases: bash -i job control (Ctrl-Z, jobs, fg, Ctrl-C), Ctrl-C reaching
# the program (a trap runs, corral keeps running), vi full-screen, TIOCSTI
# and TIOCLINUX denied on the box's own pty, a resize seen by `stty size`,
# the caller's terminal restored after a normal end, a deadline, a signal to
# corral and a command that is not found; the output in stdout.log; the
# usage errors when corral's stdin or stdout is not a terminal; the
# terminal's answers to the box's queries not left in the caller's input. Then the
# same for `corral exec --tty` in a session, and the caller's terminal put
# back by the session when corral exec is killed.
set -uo pipefail

CORRAL=${CORRAL_BIN:?CORRAL_BIN (the corral binary) must be set}
UID_RANGE=1900100500-1900100549

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (corral run builds real sandboxes)" >&2; exit 77; fi
if ! command -v tmux >/dev/null; then echo "SKIP: tmux is not installed (tools/install-deps.sh installs it)" >&2; exit 77; fi

TMP=$(mktemp -d /tmp/corral-tty-test.XXXXXX)
SOCK="$TMP/tmux.sock"          # a tmux server of this test's own
. "$(dirname "$0")/tmux_helpers.sh"
cleanup() {
  tm kill-server 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
# resized_to SESSION "ROWS COLS": asks the box's `stty size` until it shows
# the new size (the resize travels tmux → corral → the box's pty: no fixed
# pause to guess how long that takes).
resized_to() {
  local s=$1 want=$2 i
  for ((i = 0; i < 60; i++)); do
    type_line $s 'clear; stty size'
    if wait_for $s "^$want\$" 1 2>/dev/null; then return 0; fi
  done
  return 1
}

# A host shell in a 120x40 tmux window; it records `stty -a` before and
# after running corral, and corral's exit status. $2: corral's options
# and command, as shell words.
start_case() {
  local s=$1 cmdline=$2
  mkdir -p "$TMP/$s"
  tm new-session -d -s "$s" -x 120 -y 40 "env -i PATH=/usr/bin:/bin TERM=tmux-256color PS1='host\$ ' bash --norc --noprofile -i"
  wait_for "$s" 'host\$' 60 || return 1
  type_line "$s" "stty -a > $TMP/$s/before; $CORRAL run --tty --uid-range $UID_RANGE --run-dir $TMP/$s/run $cmdline; echo corral-exit=\$?; stty -a > $TMP/$s/after; echo after-written"
}
# The host terminal's settings after corral exactly as before it.
check_restored() {
  local s=$1 what=$2
  if ! wait_for "$s" '^after-written' 60; then fail "$what: corral did not return to the host shell"; return; fi
  if cmp -s "$TMP/$s/before" "$TMP/$s/after"; then
    pass "$what: the host terminal's settings (stty -a) are as before"
  else
    fail "$what: stty -a differs after corral:"; diff "$TMP/$s/before" "$TMP/$s/after" >&2
  fi
}
exit_status_is() {
  local s=$1 want=$2 what=$3
  if screen "$s" | grep -q "^corral-exit=$want\$"; then pass "$what: corral exited $want"; else
    fail "$what: corral's exit status is not $want:"; screen "$s" | grep corral-exit >&2; fi
}

BOX_SHELL="--env PS1=box\\\$\\  --workspace $TMP/ws -- /bin/bash --norc --noprofile -i"
mkdir -p "$TMP/ws"
cat > "$TMP/ws/ioctl_probe.py" <<'EOF'
# Pushes a byte into its own terminal's input (TIOCSTI) and asks for the
# console selection paste (TIOCLINUX): both must be refused by corral's
# seccomp filter with EPERM, on the box's own pty.
import errno, fcntl, termios
for name, req, arg in (("TIOCSTI", termios.TIOCSTI, b"x"), ("TIOCLINUX", 0x541C, b"\x02")):
    try:
        fcntl.ioctl(0, req, arg)
        print(name + "-allowed")
    except OSError as e:
        print(name + "-errno-" + errno.errorcode.get(e.errno, str(e.errno)))
EOF
chmod 0644 "$TMP/ws/ioctl_probe.py"

# The box's terminal as its command sees it: a pty of the box's own devpts
# whose slave is the agent's with mode 600, and the caller's TERM; `stty
# size` is printed for the caller to check. $2: what the messages start
# with ("" for corral run).
check_pty_identity() {
  local s=$1 what=${2:+$2: }
  type_line $s 'tty; stat -c "%U %a" $(tty); echo "TERM=$TERM"; stty size'
  wait_for $s '^/dev/pts/[0-9]+$' && pass "${what}stdin is a pty of the box's own devpts" || fail "${what}tty does not name the box's pty"
  wait_for $s '^agent 600$' && pass "${what}the pty's slave is the agent's, mode 600" || fail "${what}the slave's owner/mode is not agent 600"
  wait_for $s '^TERM=tmux-256color$' && pass "${what}TERM is the caller's" || fail "${what}TERM is not the caller's"
}

# The job of check_job_control: a sleep no other test runs, so the host's
# ps can tell when the box's shell has started it and when fg resumed it.
JOB="sleep 4711"
# job_state WANT: until the box's job has a ps state starting with WANT (T
# stopped; S or R running), 60 s at most.
job_state() {
  local want=$1 i pid st
  for ((i = 0; i < 600; i++)); do
    pid=$(pgrep -x -f "$JOB" | head -n 1)
    st=${pid:+$(ps -o stat= -p "$pid" 2>/dev/null)}
    [[ $st == [$want]* ]] && return 0
    sleep 0.1
  done
  return 1
}

# check_job_control SESSION LABEL: in the box's bash -i, Ctrl-Z stops the
# foreground job, jobs lists it, fg resumes it, Ctrl-C ends it (130); a
# program's INT trap runs on Ctrl-C; the box survives.
check_job_control() {
  local s=$1 L=${2:+$2: }
  type_line $s "$JOB"
  # Ctrl-Z only once the job runs: a terminal's SUSP flushes the input the
  # shell has not read yet (no NOFLSH), so one sent early on a loaded machine
  # erased the typed line itself (seen in CI run 51).
  job_state SR || fail "${L}the shell did not start $JOB"
  local i stopped=no
  for ((i = 0; i < 60; i++)); do
    tm send-keys -t $s C-z
    if wait_for $s "Stopped +$JOB" 1 2>/dev/null; then stopped=yes; break; fi
  done
  if [ $stopped = yes ]; then pass "${L}Ctrl-Z stops the foreground job (Stopped)"; else
    fail "${L}Ctrl-Z did not stop $JOB"
    ps -eo pid,ppid,pgid,stat,args | grep -E 'corral|sleep|bash|tmux' | grep -v grep >&2 || true
    screen $s | grep -v '^$' | tail -n 20 >&2
  fi
  type_line $s 'jobs'
  # The Ctrl-Z's line and jobs' line: two on the screen.
  for ((i = 0; i < 600; i++)); do [ "$(count $s "^\[1\]\+ +Stopped +$JOB\$")" -ge 2 ] && break; sleep 0.1; done
  [ "$(count $s "^\[1\]\+ +Stopped +$JOB\$")" -ge 2 ] && pass "${L}jobs lists the stopped job" || fail "${L}jobs does not list the stopped sleep"
  type_line $s 'fg'
  wait_for $s "^$JOB\$" 60 || fail "${L}fg did not resume sleep"
  # Ctrl-C once the job runs again: before that it would reach the shell.
  job_state SR || fail "${L}fg did not set $JOB running"
  tm send-keys -t $s C-c
  type_line $s 'echo "after fg: $? done-$((40+2))"'
  wait_for $s '^after fg: 130 done-42$' && pass "${L}fg then Ctrl-C ends the job with SIGINT (status 130), the shell lives on" ||
    fail "${L}fg + Ctrl-C did not end the job with 130"

  # Ctrl-C reaches the program: its trap runs; corral keeps running.
  type_line $s "bash -c 'trap \"echo trapped-SIGINT; exit 0\" INT; echo ready-for-C-c; while :; do sleep 0.2; done'"
  wait_for $s '^ready-for-C-c$' 60
  tm send-keys -t $s C-c
  wait_for $s '^(\^C)?trapped-SIGINT$' && pass "${L}Ctrl-C is the program's SIGINT (its trap ran)" || fail "${L}the trap did not see Ctrl-C"
  type_line $s 'echo still-$((6*7))'
  wait_for $s '^still-42$' && pass "${L}corral and the box survive Ctrl-C" || fail "${L}the box did not survive Ctrl-C"
}

# ---- 1. an interactive shell: job control, Ctrl-C, vi, TIOCSTI; then exit.
s=shell
start_case $s "$BOX_SHELL"
if wait_for $s '^box\$' 60; then
  pass "bash -i starts on the box's pty"
  check_pty_identity $s ""

  # Job control: Ctrl-Z stops the foreground job, jobs lists it, fg resumes, Ctrl-C ends it.
  check_job_control $s ""

  # TIOCSTI / TIOCLINUX on the box's own pty.
  type_line $s 'python3 /workspace/ioctl_probe.py'
  if wait_for $s '^TIOCLINUX-' 60; then
    screen $s | grep -q '^TIOCSTI-errno-EPERM$' && pass "TIOCSTI on the box's pty: EPERM (seccomp)" || fail "TIOCSTI was not refused with EPERM: $(screen $s | grep TIOCSTI-)"
    screen $s | grep -q '^TIOCLINUX-errno-EPERM$' && pass "TIOCLINUX on the box's pty: EPERM (seccomp)" || fail "TIOCLINUX was not refused with EPERM: $(screen $s | grep TIOCLINUX-)"
  else
    fail "the ioctl probe printed nothing"
  fi

  # vi full-screen: no "not a terminal", its empty-buffer tildes, :q! leaves it.
  type_line $s 'clear'
  if wait_for $s '^box\$ $' 60 && type_line $s 'command -v vi >/dev/null && echo vi-found || echo vi-missing' && wait_for $s '^vi-(found|missing)$' 60 &&
     screen $s | grep -q '^vi-found$'; then
    type_line $s 'clear; vi /tmp/new-file'
    if wait_for $s '"/tmp/new-file"' 60 && [ "$(count $s '^~ *$')" -ge 30 ]; then
      if screen $s | grep -qi 'not a terminal\|not to a terminal'; then fail "vi says it is not on a terminal"; else
        pass "vi opens full-screen (its ~ lines fill the window)"; fi
    else
      fail "vi did not open full-screen"
    fi
    # vi is in normal mode (nothing was typed into it): no Escape, which vi
    # could read with the ':' after it as one key when they arrive together.
    type_line $s ':q!'
    # The next line only once vi is gone: vi puts the terminal back with
    # TCSAFLUSH, which drops input typed before it did (seen in CI run 39).
    for ((i = 0; i < 600; i++)); do [ "$(count $s '^~ *$')" -eq 0 ] && [ "$(count $s '^box\$ $')" -ge 1 ] && break; sleep 0.1; done
    type_line $s 'echo vi-exited'
    wait_for $s '^vi-exited$' && pass "vi's :q! returns to the shell" || fail "vi did not exit on :q!"
  else
    echo "SKIP (counted): no vi in the host rootfs"
  fi
  type_line $s 'echo logged-$((2*3*7)); exit 3'
  check_restored $s "normal end"
  exit_status_is $s 3 "exit 3"
  grep -q 'logged-42' "$TMP/$s/run/stdout.log" && pass "the pty's output is in the run dir's stdout.log" || fail "stdout.log lacks the output"
else
  fail "bash -i did not start in corral run --tty"
fi

# ---- 2. a resize of the caller's window reaches the box (SIGWINCH -> TIOCSWINSZ).
s=resize
start_case $s "$BOX_SHELL"
if wait_for $s '^box\$' 60; then
  type_line $s 'stty size'
  wait_for $s '^40 120$' && pass "the window size is copied at start (40 120)" || fail "stty size is not 40 120 at start"
  tm resize-window -t $s -x 100 -y 30
  resized_to $s '30 100' && pass "a resize reaches the box (30 100)" || fail "stty size did not follow the resize"
  type_line $s 'exit'
  wait_for $s '^after-written' 60 || fail "resize: corral did not return"
else
  fail "resize: bash -i did not start"
fi

# ---- 3. the terminal restored on the other exit paths.
s=deadline
start_case $s "--timeout 3s $BOX_SHELL"
wait_for $s '^box\$' 60 && type_line $s 'stty -echo; sleep 60'
check_restored $s "deadline (--timeout, the box changed its own settings)"
exit_status_is $s 124 "deadline"

s=signal
start_case $s "$BOX_SHELL"
if wait_for $s '^box\$' 60; then
  pid=$(pgrep -f -- "--run-dir $TMP/$s/run" | head -1)
  if [ -n "$pid" ]; then kill -TERM "$pid"; else fail "signal: no corral process found"; fi
fi
check_restored $s "SIGTERM to corral"
exit_status_is $s 143 "SIGTERM"

# SIGKILL: no handler of corral's runs; its guardian (corral-ttyguard) puts
# the settings back once corral is gone. The caller is dash here: bash puts
# back the settings it saved when a job dies of a signal, which would hide
# a raw terminal. The shell waits (at most 10 s) for the guardian to have
# exited and the settings to be back before it writes anything: the
# guardian runs once the kernel has closed corral's files, which under load
# can be after the shell saw corral die (its "Killed" line is written to
# the raw terminal: an empty line after the restore starts a fresh one).
s=sigkill
mkdir -p "$TMP/$s"
tm new-session -d -s "$s" -x 120 -y 40 "env -i PATH=/usr/bin:/bin TERM=tmux-256color PS1='host\$ ' dash -i"
if wait_for "$s" 'host\$' 60; then
  type_line "$s" "stty -a > $TMP/$s/before; stty -g > $TMP/$s/before.g; $CORRAL run --tty --uid-range $UID_RANGE --run-dir $TMP/$s/run $BOX_SHELL; rc=\$?; i=0; while { pgrep -x corral-ttyguard >/dev/null || [ \"\$(stty -g)\" != \"\$(cat $TMP/$s/before.g)\" ]; } && [ \$i -lt 100 ]; do sleep 0.1; i=\$((i+1)); done; echo; echo corral-exit=\$rc; stty -a > $TMP/$s/after; echo after-written"
  if wait_for $s '^box\$' 60; then
    pgrep -x corral-ttyguard >/dev/null && pass "SIGKILL: the terminal's guardian runs beside corral" || fail "SIGKILL: no corral-ttyguard process"
    pid=$(pgrep -f -- "--run-dir $TMP/$s/run" | head -1)
    if [ -n "$pid" ]; then kill -KILL "$pid"; else fail "sigkill: no corral process found"; fi
  fi
  check_restored $s "SIGKILL to corral"
  exit_status_is $s 137 "SIGKILL"
fi

s=notfound
start_case $s "-- /no/such/program"
check_restored $s "command not found"
exit_status_is $s 127 "command not found"

# The box asks the terminal for its cursor position and attributes (DSR,
# DA) and exits at once, after output that keeps tmux busy so the answers
# may come after the box is gone: they must not be left in the caller's
# input, where the host shell would read them as typed (`read` right after
# corral shows what is pending). Whether an answer is late here is up to
# tmux's timing (three runs give it more chances); the deterministic check
# of the same rule is tests/supervisor/test_terminal.cpp, on a pty pair.
s=answers
mkdir -p "$TMP/$s"
tm new-session -d -s "$s" -x 120 -y 40 "env -i PATH=/usr/bin:/bin TERM=tmux-256color PS1='host\$ ' bash --norc --noprofile -i"
if wait_for "$s" 'host\$' 60; then
  for i in 1 2 3; do
    type_line "$s" "clear; $CORRAL run --tty --uid-range $UID_RANGE --run-dir $TMP/$s/run$i -- /bin/sh -c 'head -c 300000 /dev/zero | tr \\\\0 x; printf \"\\033[6n\\033[c\"'; read -r -s -t 1 -n 64 left; printf 'left=%q\\n' \"\$left\"; echo left-written-$i"
    if ! wait_for "$s" "^left-written-$i\$" 60; then fail "answers: corral did not return (run $i)"; break; fi
    if screen "$s" | grep -q "^left=''\$"; then pass "answers: the terminal's answers to the box's queries are not left in the caller's input (run $i)"
    else fail "answers: the caller's input holds $(screen "$s" | grep -a '^left=') after run $i"; fi
  done
fi

# ---- 4. usage errors: --tty needs corral's stdin and stdout to be a terminal (exit 2).
out=$("$CORRAL" run --tty -- true </dev/null 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] && [[ $out == *"--tty: corral's stdin is not a terminal"* ]] && pass "--tty with stdin not a terminal: exit 2, says so" ||
  fail "--tty with /dev/null stdin: rc=$rc: $out"
s=usage
tm new-session -d -s $s -x 120 -y 40 "env -i PATH=/usr/bin:/bin PS1='host\$ ' bash --norc --noprofile -i"
wait_for $s 'host\$' 60
type_line $s "$CORRAL run --tty -- true | cat; echo rc=\${PIPESTATUS[0]}"
wait_for $s '^rc=' 60
screen $s | grep -q "^rc=2$" && screen $s | grep -q "corral's stdout is not a terminal" && pass "--tty with stdout a pipe: exit 2, says so" ||
  fail "--tty with stdout a pipe: $(screen $s | grep -v '^$')"

# ---- 5. corral exec --tty in a session: the same pty, from the session's init.
STATE="$TMP/state"
mkdir -p "$TMP/sws"
cp "$TMP/ws/ioctl_probe.py" "$TMP/sws/"
session=$("$CORRAL" session start --state-dir "$STATE" --uid-range $UID_RANGE --workspace "$TMP/sws" 2>"$TMP/session.err")
if [ -z "$session" ]; then
  fail "session start failed: $(cat "$TMP/session.err")"
else
  EXEC_SHELL="--env PS1=box\\\$\\  $session -- /bin/bash --norc --noprofile -i"
  # start_exec_case SESSION [CALLER-SHELL [WAIT]]: as start_case, with corral
  # exec --tty; WAIT runs before the caller's shell writes anything.
  start_exec_case() {
    local s=$1 shell=${2:-bash --norc --noprofile -i} wait=${3:-true}
    mkdir -p "$TMP/$s"
    tm new-session -d -s "$s" -x 120 -y 40 "env -i PATH=/usr/bin:/bin TERM=tmux-256color PS1='host\$ ' $shell"
    wait_for "$s" 'host\$' 60 || return 1
    type_line "$s" "stty -a > $TMP/$s/before; $CORRAL exec --tty --state-dir $STATE $EXEC_SHELL; rc=\$?; $wait; echo corral-exit=\$rc; stty -a > $TMP/$s/after; echo after-written"
  }
  s=exec-shell
  start_exec_case $s
  if wait_for $s '^box\$' 60; then
    pass "exec --tty: bash -i starts on a pty of the session's"
    check_pty_identity $s "exec --tty"
    wait_for $s '^40 120$' && pass "exec --tty: the window size is set before the command starts (40 120)" || fail "exec --tty: stty size is not 40 120"
    check_job_control $s "exec --tty"
    tm resize-window -t $s -x 100 -y 30
    resized_to $s '30 100' && pass "exec --tty: a resize of the caller's window reaches the box (30 100)" || fail "exec --tty: stty size did not follow the resize"
    type_line $s 'python3 /workspace/ioctl_probe.py'
    if wait_for $s '^TIOCLINUX-' 60; then
      screen $s | grep -q '^TIOCSTI-errno-EPERM$' && pass "exec --tty: TIOCSTI on the session's pty: EPERM" || fail "exec --tty: TIOCSTI was not refused"
    else
      fail "exec --tty: the ioctl probe printed nothing"
    fi
    type_line $s 'echo exec-logged-$((2*3*7)); exit 4'
    if wait_for $s '^after-written' 60; then
      # The resize is the one difference the caller made itself.
      if diff <(sed 's/rows [0-9]*; columns [0-9]*;//' "$TMP/$s/before") <(sed 's/rows [0-9]*; columns [0-9]*;//' "$TMP/$s/after") >/dev/null; then
        pass "exec --tty: the caller's terminal settings are as before"
      else
        fail "exec --tty: stty -a differs:"; diff "$TMP/$s/before" "$TMP/$s/after" >&2
      fi
    else
      fail "exec --tty: corral exec did not return"
    fi
    exit_status_is $s 4 "exec --tty, exit 4"
    log=$(ls -d "$STATE"/runs/"$session"/execs/* | tail -1)
    grep -q 'exec-logged-42' "$log/stdout.log" && pass "exec --tty: the pty's output is in execs/N/stdout.log" || fail "exec --tty: stdout.log lacks the output"
    grep -q '"tty": true' "$log/exec.json" && pass "exec --tty: exec.json says tty" || fail "exec --tty: exec.json lacks tty: true"
  else
    fail "exec --tty: bash -i did not start"
  fi

  # corral exec killed with SIGKILL: the session's supervisor sees the caller
  # gone, stops the command and puts the caller's terminal back (it holds it).
  # The caller is dash, which would not hide a raw terminal; it waits for
  # the exec's exec.json (written once the supervisor let the terminal go).
  # bash -i ignores SIGTERM: the grace (10 s) runs out, then SIGKILL.
  s=exec-killed
  n=$(($(ls "$STATE/runs/$session/execs" | wc -l) + 1))
  start_exec_case $s "dash -i" "while [ ! -e $STATE/runs/$session/execs/$n/exec.json ]; do sleep 0.1; done"
  if wait_for $s '^box\$' 60; then
    type_line $s 'stty -echo; sleep 600'
    sleep 0.5
    pid=$(pgrep -f -- "exec --tty --state-dir $STATE" | head -1)
    if [ -n "$pid" ]; then kill -KILL "$pid"; else fail "exec-killed: no corral exec process found"; fi
  fi
  check_restored $s "SIGKILL to corral exec (the session restores the terminal)"
  grep -q '"outcome": "caller_gone"' "$STATE/runs/$session/execs/$n/exec.json" && pass "exec-killed: exec.json says caller_gone" ||
    fail "exec-killed: exec.json: $(cat "$STATE/runs/$session/execs/$n/exec.json")"

  out=$("$CORRAL" exec --tty --state-dir "$STATE" "$session" -- true </dev/null 2>&1 >/dev/null); rc=$?
  [ $rc -eq 2 ] && [[ $out == *"stdin is not a terminal"* ]] && pass "exec --tty with stdin not a terminal: exit 2, says so" ||
    fail "exec --tty with /dev/null stdin: rc=$rc: $out"
  out=$("$CORRAL" exec --tty --prompt task --state-dir "$STATE" "$session" 2>&1 >/dev/null); rc=$?
  [ $rc -eq 2 ] && [[ $out == *"--tty with --prompt"* ]] && pass "exec --tty --prompt: exit 2, says why" ||
    fail "exec --tty --prompt: rc=$rc: $out"
  out=$("$CORRAL" exec -it --state-dir "$STATE" "$session" -- true 2>&1); rc=$?
  [ $rc -eq 2 ] && [[ $out == *"use --tty"* ]] && pass "exec -it: exit 2, names --tty" || fail "exec -it: rc=$rc: $out"
  "$CORRAL" session stop --state-dir "$STATE" --grace 1s "$session" >/dev/null 2>&1 || fail "session stop failed"
fi

echo "$passes passed, $failures failed"
[ $failures -eq 0 ]
