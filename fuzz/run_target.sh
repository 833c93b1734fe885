#!/usr/bin/env bash
# fuzz/run_target.sh EXE SEEDS WORK RUNS — one libFuzzer run of a fuzz target, as a
# meson test of the sanitizer build (suite fuzz; tools/fuzz.sh, tools/test.sh).
# Fails (exit != 0) on any crash, sanitizer report, leak, timeout or RSS over
# the limit; libFuzzer then writes the input to WORK/crash-*, leak-*,
# timeout-*, oom-*. New inputs it finds go to WORK/corpus, never to SEEDS
# (the corpus in the repository changes only by a reviewed commit).
#
# The same run gives the same verdict on any machine: libFuzzer's seed is
# fixed, address-space randomisation is off for it (setarch -R: libFuzzer
# keys its compare tables by code address), the corpus is not reloaded from
# disk during the run, and the run is
# RUNS inputs (fuzz/meson.build; CORRAL_FUZZ_RUNS overrides it) from an
# empty WORK/corpus. A slower machine that hits the time cap
# (CORRAL_FUZZ_SECONDS, default 120) has run a prefix of the same sequence.
# Exploring further is a deliberate act, not a CI lottery:
# CORRAL_FUZZ_SEED=0 (a new seed each run), CORRAL_FUZZ_RUNS=-1 (no input
# cap), CORRAL_FUZZ_KEEP=1 (grow WORK/corpus across runs); tools/fuzz.sh
# --explore sets all three.
set -euo pipefail
exe=$1 seeds=$2 work=$3 target_runs=$4
seconds=${CORRAL_FUZZ_SECONDS:-120}
runs=${CORRAL_FUZZ_RUNS:-$target_runs}
seed=${CORRAL_FUZZ_SEED:-1}
[ "${CORRAL_FUZZ_KEEP:-0}" = 1 ] || rm -rf "$work/corpus"
mkdir -p "$work/corpus"
rm -f "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*
# Leak checks at every input's end, halt on the first UBSan report too.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
norandom=()
if setarch -R true 2>/dev/null; then
  norandom=(setarch -R)
else
  echo "run_target.sh: setarch -R is refused here; this run may differ from another machine's" >&2
fi
rc=0
# libFuzzer's own exit code for a finding is 77, which meson reads as a skip.
"${norandom[@]}" "$exe" -seed="$seed" -runs="$runs" -max_total_time="$seconds" -reload=0 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -error_exitcode=1 -timeout_exitcode=1 \
    -detect_leaks=1 -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/" \
    "$work/corpus" "$seeds" || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "run_target.sh: $(basename "$exe") failed (exit $rc); inputs:" "$work"/crash-* "$work"/leak-* \
       "$work"/timeout-* "$work"/oom-* >&2
  echo "run_target.sh: fix it, add the input to $seeds, re-run: $exe INPUT" >&2
fi
[ "$rc" -ne 77 ] || rc=1
exit "$rc"
