#!/usr/bin/env bash
# tools/fuzz.sh [--explore SECONDS] [TARGET...] — runs the libFuzzer targets
# of fuzz/ (all, or fuzz_TARGET for each name given) in the sanitizer build
# (tools/sanitize.sh builds build-san/). Fails on any crash, sanitizer
# report, leak or timeout; the input that caused it is in
# build-san/fuzz/work-TARGET/.
#
# Without --explore (tools/test.sh, the CI): the reproducible run of
# fuzz/run_target.sh, a fixed seed and a fixed number of inputs, so the CI's
# verdict never depends on luck or machine speed.
# With --explore SECONDS: a new seed each run, no input cap, SECONDS per
# target, and the generated corpus kept between runs; this is how new
# findings are looked for (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --explore ]; then
  [ "$#" -ge 2 ] || { echo "tools/fuzz.sh: --explore needs SECONDS" >&2; exit 2; }
  export CORRAL_FUZZ_SECONDS=$2 CORRAL_FUZZ_SEED=0 CORRAL_FUZZ_RUNS=-1 CORRAL_FUZZ_KEEP=1
  shift 2
fi
names=()
for t in "$@"; do names+=("fuzz_$t"); done
# fuzz/run_target.sh sets libFuzzer's own sanitizer options (no log files:
# libFuzzer prints the report and keeps the input).
CORRAL_TEST_LOGBASE=${CORRAL_TEST_LOGBASE:-fuzzlog} \
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:halt_on_error=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1} \
  exec tools/sanitize.sh --suite fuzz "${names[@]}"
