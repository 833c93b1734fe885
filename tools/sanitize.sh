#!/usr/bin/env bash
# tools/sanitize.sh [MESON TEST ARGS] — the sanitizer build: sets up build-san/
# (clang, ASan + UBSan, libFuzzer's coverage instrumentation in every
# library, -Dfuzzing=true), builds it and runs `meson test` there with the
# arguments given (tools/test.sh: --suite unit --suite integration, then
# --suite fuzz). Any sanitizer report fails: every test that reports one
# exits non-zero (halt_on_error, abort_on_error), and a report from a process
# whose exit status no test checks (a child of `corral run`, say) is caught
# from the report files the sanitizers write under build-san/sanitizer-reports/.
# docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."

builddir=${CORRAL_SAN_BUILDDIR:-build-san}
if [ ! -f "$builddir/build.ninja" ]; then
  # static_deps=false: the sanitizer runtimes want the shared libstdc++/libgcc.
  # b_lundef=false: meson's -Wl,--no-undefined is refused with clang's sanitizers.
  CXX=${CORRAL_SAN_CXX:-clang++} meson setup "$builddir" --buildtype=debugoptimized -Dwerror=true \
    -Db_sanitize=address,undefined -Db_lundef=false -Dstatic_deps=false -Dfuzzing=true
fi
ninja -C "$builddir"

reports="$PWD/$builddir/sanitizer-reports"
rm -rf "$reports"
mkdir -p "$reports"
# Reports go to files (log_path) as well as failing the process, so none is
# lost in a test's captured output. detect_leaks: LSan at every process exit.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=1:log_path=$reports/asan}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path=$reports/ubsan}
rc=0
meson test -C "$builddir" --print-errorlogs --num-processes 2 "$@" || rc=$?
shopt -s nullglob
found=("$reports"/*)
if [ "${#found[@]}" -gt 0 ]; then
  for f in "${found[@]}"; do
    echo "=== sanitizer report $f" >&2
    cat "$f" >&2
  done
  echo "sanitize.sh: ${#found[@]} sanitizer report(s) (above)" >&2
  [ "$rc" -ne 0 ] || rc=1
fi
exit "$rc"
