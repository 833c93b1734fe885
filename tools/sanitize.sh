#!/usr/bin/env bash
# tools/sanitize.sh [MESON TEST ARGS] — the sanitizer build: sets up build-san/
# (clang, ASan + UBSan, libFuzzer's coverage instrumentation in the fuzzed
# libraries, -Dfuzzing=true), builds it and runs `meson test` there with the
# arguments given (tools/test.sh: every suite; tools/fuzz.sh: --suite fuzz).
# Any sanitizer report fails the test whose process made it.
# --setup: only sets up build-san/ (tools/test.sh then builds what every
# suite runs). CORRAL_SAN_NO_REBUILD=1: build nothing, `meson test
# --no-rebuild` (what the tests run was built already; two `meson test` may
# then share the build dir). CORRAL_TEST_LOGBASE: the name of meson's log
# files under meson-logs/ (default testlog; tools/fuzz.sh: fuzzlog).
# docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."

builddir=${CORRAL_SAN_BUILDDIR:-build-san}
if [ ! -f "$builddir/build.ninja" ]; then
  # static_deps=false: the sanitizer runtimes want the shared libstdc++/libgcc.
  # b_lundef=false: meson's -Wl,--no-undefined is refused with clang's sanitizers.
  # -O1 and line tables only (what ASan's and libFuzzer's docs build with): a
  # report still names file:line in every frame, and the Asio/Beast-heavy
  # objects compile in about 0.6x the time of -O2 -g (docs/testing.md), the
  # largest phase of the CI.
  # LLVM's linker: a sanitized executable is about 110 MB, and lld links
  # corral's in a third of GNU ld's CPU (2.0 against 6.6 CPU-s, measured side
  # by side); the build links some 70 of them (docs/testing.md).
  CXX=${CORRAL_SAN_CXX:-clang++} CXX_LD=${CORRAL_SAN_LD:-lld} meson setup "$builddir" --buildtype=custom -Doptimization=1 -Ddebug=false \
    -Dcpp_args=-gline-tables-only -Dwerror=true \
    -Db_sanitize=address,undefined -Db_lundef=false -Dstatic_deps=false -Dfuzzing=true
fi
[ "${1:-}" = --setup ] && exit 0
logbase=${CORRAL_TEST_LOGBASE:-testlog}
rebuild=()
# Only what the chosen suites run is built (issue 36's CI time): corral
# itself (every integration and e2e test drives it through CORRAL_BIN), then
# `meson test` builds the executables of the selected tests and their
# `depends`, not the other suites' or the benchmarks' (a cold sanitizer
# build is the CI's largest step; docs/testing.md).
if [ "${CORRAL_SAN_NO_REBUILD:-0}" = 1 ]; then
  rebuild=(--no-rebuild)
else
  ninja -C "$builddir" tools/corral
fi

# halt_on_error + abort_on_error: the process that reports dies with SIGABRT,
# so its test fails. No log_path: inside a box the sanitizer cannot open a
# log file under the build dir (another mount namespace) and dies instead.
# detect_leaks: LSan at every process exit.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
meson test -C "$builddir" "${rebuild[@]}" --logbase "$logbase" --print-errorlogs --num-processes 2 "$@" || {
  tools/test-failures.sh "$builddir" "$logbase"
  exit 1
}
