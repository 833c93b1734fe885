#!/usr/bin/env bash
# fuzz/run_target.sh EXE SEEDS WORK — one libFuzzer run of a fuzz target, as a
# meson test of the sanitizer build (suite fuzz; tools/fuzz.sh, tools/test.sh).
# Fails (exit != 0) on any crash, sanitizer report, leak, timeout or RSS over
# the limit; libFuzzer then writes the input to WORK/crash-*, leak-*,
# timeout-*, oom-*. New inputs it finds go to WORK/corpus, never to SEEDS
# (the corpus in the repository changes only by a reviewed commit).
# CORRAL_FUZZ_SECONDS: time per target (default 30).
set -euo pipefail
exe=$1 seeds=$2 work=$3
seconds=${CORRAL_FUZZ_SECONDS:-30}
mkdir -p "$work/corpus"
rm -f "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*
# Leak checks at every input's end, halt on the first UBSan report too.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
rc=0
# libFuzzer's own exit code for a finding is 77, which meson reads as a skip.
"$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
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
