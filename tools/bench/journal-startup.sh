#!/usr/bin/env bash
# tools/bench/journal-startup.sh — what the run journal costs a fresh
# `corral run`, split in two: the time from spawning corral to the command's
# first instruction (the command prints CLOCK_MONOTONIC as it starts: a
# static C program in the workspace), and the whole run to the reaped exit
# (which also holds the terminal record's fdatasync). Two corral binaries,
# alternating per run, same flags: --corral (e.g. main) and --baseline (e.g.
# an older commit). There is no switch to turn a run's journal off; a
# baseline from before a journal change is the comparison. Root; loopback
# only (the run has no network). Not a test: figures depend on the disk and
# the load.
#
# Usage: tools/bench/journal-startup.sh --baseline PATH [--corral PATH] [--runs N] [--baseline-env VAR=VALUE]
#   default: --corral $CORRAL_BIN or build-test/tools/corral, --runs 30
#   --baseline-env VAR=VALUE: set for the baseline's runs only (for a binary
#     built with a measurement-only switch; docs/benchmarks.md says which).
set -euo pipefail
corral=${CORRAL_BIN:-build-test/tools/corral}
baseline=
runs=30
baseline_env=
while [ $# -gt 0 ]; do
  case $1 in
    --corral) corral=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --baseline-env) baseline_env=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "journal-startup.sh: unknown argument '$1' (accepted: --corral PATH, --baseline PATH, --runs N, --baseline-env VAR=VALUE)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "journal-startup.sh: run as root (corral run needs it)" >&2; exit 2; }
[ -x "$corral" ] || { echo "journal-startup.sh: corral binary not found at $corral" >&2; exit 2; }
[ -n "$baseline" ] && [ -x "$baseline" ] || { echo "journal-startup.sh: --baseline PATH: a second corral binary is needed" >&2; exit 2; }
command -v cc >/dev/null || { echo "journal-startup.sh: needs a C compiler (cc) for the timestamp program" >&2; exit 2; }

work=$(mktemp -d /tmp/corral-journal-startup-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -m 0755 "$work/ws" "$work/state"
cat > "$work/mono.c" <<'C'
#include <stdio.h>
#include <time.h>
int main(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); printf("%ld.%09ld\n", (long)t.tv_sec, t.tv_nsec); return 0; }
C
cc -O2 -static -o "$work/ws/mono" "$work/mono.c"

echo "machine: $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg), state dir on $(df -T "$work" | awk 'NR==2 {print $2}')"
python3 - "$corral" "$baseline" "$runs" "$work" "$baseline_env" <<'PY'
import os, statistics, subprocess, sys, time
corral, baseline, runs, work, baseline_env = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
envs = {"corral": dict(os.environ), "baseline": dict(os.environ)}
if baseline_env:
    var, _, value = baseline_env.partition("=")
    envs["baseline"][var] = value
configs = {"corral": corral, "baseline": baseline}
to_cmd = {k: [] for k in configs}
whole = {k: [] for k in configs}
for i in range(runs + 3):
    for name, binary in configs.items():
        argv = [binary, "run", "--quiet", "--state-dir", work + "/state", "--workspace", work + "/ws", "--", "/workspace/mono"]
        t0 = time.monotonic()
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True, text=True, env=envs[name])
        t1 = time.monotonic()
        if i < 3:
            continue  # warm-up
        to_cmd[name].append((float(p.stdout.strip()) - t0) * 1000)
        whole[name].append((t1 - t0) * 1000)
med = lambda v: statistics.median(v)
print(f"{runs} runs each, alternating (3 warm-up rounds dropped); medians in ms")
print("| binary | to the command's first instruction | whole run (reaped exit) |")
print("|---|---:|---:|")
for name in configs:
    print(f"| {name} | {med(to_cmd[name]):.2f} | {med(whole[name]):.2f} |")
print(f"corral - baseline: to the command {med(to_cmd['corral']) - med(to_cmd['baseline']):+.2f} ms, "
      f"whole run {med(whole['corral']) - med(whole['baseline']):+.2f} ms")
PY
