# tests/supervisor/tty/tmux_helpers.sh — sourced by the tmux-driven --tty
# tests (test_tty.sh, test_tty_approval.sh): a tmux server of the test's
# own ($SOCK, set before sourcing), the pass/fail counts, and reading and
# typing on a session's screen.

tm() { tmux -S "$SOCK" "$@"; }

failures=0
passes=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "ok: $*"; passes=$((passes + 1)); }

screen() { tm capture-pane -t "$1" -p -J; }
# wait_for SESSION REGEX [SECONDS]: until the screen matches (extended regex).
# SECONDS is a hang guard, not a timing claim: the wait ends at the event, and
# a loaded machine (the CI's ASan corral beside another build) can take long.
wait_for() {
  local s=$1 re=$2 limit=${3:-60} i
  for ((i = 0; i < limit * 10; i++)); do
    if screen "$s" | grep -Eq -- "$re"; then return 0; fi
    sleep 0.1
  done
  echo "--- screen of $s while waiting for /$re/:" >&2
  screen "$s" >&2
  return 1
}
# count SESSION REGEX: lines of the screen that match.
count() { screen "$1" | grep -Ec -- "$2"; }
# type_line SESSION TEXT: TEXT typed as it is, then Enter.
type_line() { tm send-keys -t "$1" -l -- "$2"; tm send-keys -t "$1" Enter; }
