#!/usr/bin/env bash
# tools/fuzz.sh [SECONDS [TARGET...]] — runs the libFuzzer targets of fuzz/
# (all, or fuzz_TARGET for each name given) for SECONDS each (default 30) in
# the sanitizer build (tools/sanitize.sh builds build-san/). Fails on any
# crash, sanitizer report, leak or timeout; the input that caused it is in
# build-san/fuzz/work-TARGET/. tools/test.sh runs it; docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export CORRAL_FUZZ_SECONDS=${1:-${CORRAL_FUZZ_SECONDS:-30}}
[ "$#" -gt 0 ] && shift
names=()
for t in "$@"; do names+=("fuzz_$t"); done
# fuzz/run_target.sh sets libFuzzer's own sanitizer options (no log files:
# libFuzzer prints the report and keeps the input).
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:halt_on_error=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1} \
  exec tools/sanitize.sh --suite fuzz "${names[@]}"
