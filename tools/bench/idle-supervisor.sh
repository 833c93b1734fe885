#!/usr/bin/env bash
# tools/bench/idle-supervisor.sh — what an idle box's supervisor costs: the
# CPU time and wakeups of its threads over --seconds, for each binary given,
# in one invocation. The box runs `sleep` with no config (an embedded
# gateway, nothing through it). Figures from /proc/PID/task/*/schedstat
# (run time in ns, timeslices). Root; loopback only (no traffic at all).
#
# Usage: tools/bench/idle-supervisor.sh [--seconds S] BIN [BIN...]
# Not a test: figures depend on the machine and its load.
set -euo pipefail
seconds=10
if [ "${1:-}" = --seconds ]; then seconds=$2; shift 2; fi
[ $# -ge 1 ] || { echo "idle-supervisor.sh: expected at least one corral binary" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "idle-supervisor.sh: must run as root (corral run)" >&2; exit 2; }
ws=$(mktemp -d /tmp/corral-idle-XXXXXX)
chmod 0755 "$ws"  # the agent must enter it: a root-owned workspace is bound as is
trap 'rm -rf "$ws"' EXIT
sum() { cat /proc/"$1"/task/*/schedstat | awk '{ t += $1; w += $3 } END { print t, w }'; }
printf '%-40s %8s %14s %10s\n' binary threads "CPU µs" wakeups
for bin in "$@"; do
  "$bin" run --rootfs host --workspace "$ws" -- sleep $((seconds + 5)) > /dev/null 2>&1 &
  pid=$!
  sleep 3
  read -r t0 w0 < <(sum "$pid")
  sleep "$seconds"
  read -r t1 w1 < <(sum "$pid")
  printf '%-40s %8s %14s %10s\n' "$bin" "$(ls /proc/"$pid"/task | wc -l)" $(( (t1 - t0) / 1000 )) $(( w1 - w0 ))
  wait "$pid"
done
echo "over ${seconds} s of an idle box, load $(cut -d' ' -f1-3 /proc/loadavg)"
