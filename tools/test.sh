#!/usr/bin/env bash
# tools/test.sh — the project's one test command (README, .ci/run).
# Installs dependencies, then runs every suite once:
#  1. the g++ build with -Werror (build-test/, what users install): corral and
#     the e2e suites' executables; runs the e2e suites (real clients and the
#     three agent CLIs) and cgroup2_vm (qemu, too slow under ASan);
#  2. the sanitizer build (tools/sanitize.sh: build-san/, clang, ASan + UBSan,
#     -Werror), built while 1's suites run: the unit and integration suites,
#     any sanitizer report fails;
#  3. fuzzing (tools/fuzz.sh): every libFuzzer target of fuzz/, in that build,
#     beside 2's suites (each starts by running its whole seed corpus, which
#     1's replay tests would otherwise run).
# Each object is compiled in the one build whose suites run it (issue 36: the
# CI's time). Extra arguments go to `meson test` in 1 and 2 (e.g. --suite
# unit), and then 1 builds and runs everything and 3 is left out.
# CORRAL_TEST_SANITIZE=0: only 1, every suite in the g++ build.
# docs/testing.md describes the suites and the time budget.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then
  tools/install-deps.sh
  [ -x tools/install-npm-deps.sh ] && tools/install-npm-deps.sh
  # The reference agent image's OCI layout, for the agents_image_e2e suite:
  # built once (about two minutes), again only when its pins change.
  tools/build-agent-image.sh --layout /var/cache/corral-test/agent-image
fi

phase() { echo "=== tools/test.sh: $1 ($(date -u +%H:%M:%S))"; }

builddir=${CORRAL_TEST_BUILDDIR:-build-test}
sanbuild=${CORRAL_SAN_BUILDDIR:-build-san}
sanitize=${CORRAL_TEST_SANITIZE:-1}
phase "build $builddir"
if [ ! -f "$builddir/build.ninja" ]; then
  # -O2 as users build it, without debug info: g++'s -g was about a third
  # of the heaviest objects' compile time, and no CI step reads it.
  meson setup "$builddir" --buildtype=custom -Doptimization=2 -Ddebug=false -Dwerror=true
fi

# With arguments, or without the sanitizer build: everything in one build.
if [ "$sanitize" = 0 ] || [ "$#" -gt 0 ]; then
  ninja -C "$builddir"
  phase "suites in $builddir"
  meson test -C "$builddir" --no-rebuild --print-errorlogs --num-processes 2 "$@" || {
    tools/test-failures.sh "$builddir"
    exit 1
  }
  [ "$sanitize" = 0 ] && exit 0
  phase "sanitizer build and suites"
  tools/sanitize.sh "$@"
  exit 0
fi

# The CI: only what each phase runs is built, each build beside the other
# phase's waiting (docs/testing.md "Time budget"):
#  1. corral and the e2e/vm suites' executables in the g++ build;
#  2. the e2e and vm suites there, while the sanitizer build of corral, the
#     unit and integration suites and the fuzz targets runs in the
#     background at a lower priority (the suites wait on agents, qemu and
#     timers; the build takes what they leave), back at normal priority
#     once they end;
#  3. the sanitized unit and integration suites (no vm: it ran in 2) and
#     the fuzz targets side by side (the suites mostly wait on sandboxes
#     and terminals, the fuzz targets compute).
ninja -C "$builddir" $(tools/suite_targets.py "$builddir" e2e vm)

phase "suites in $builddir, the sanitizer build beside them"
tools/sanitize.sh --setup
san_pid_file=$sanbuild/background-build.pid
setsid -w bash -c 'echo $$ > "$1"; shift; exec "$@"' _ "$san_pid_file" \
  ninja -C "$sanbuild" $(tools/suite_targets.py "$sanbuild" unit integration fuzz --not vm) \
  > "$sanbuild/background-build.log" 2>&1 &
san_build=$!
stop_san_build() { kill -- "-$(cat "$san_pid_file")" 2>/dev/null || true; }
meson test -C "$builddir" --no-rebuild --print-errorlogs --num-processes 2 --suite e2e --suite vm || {
  stop_san_build
  tools/test-failures.sh "$builddir"
  exit 1
}

phase "sanitizer build (what is left of it)"
san_rc=0
wait "$san_build" || san_rc=$?
tail -n 3 "$sanbuild/background-build.log"
if [ "$san_rc" != 0 ]; then
  grep -E -A12 "^FAILED|error:" "$sanbuild/background-build.log" | head -n 80
  echo "tools/test.sh: the sanitizer build failed (exit $san_rc): $sanbuild/background-build.log" >&2
  exit 1
fi

phase "sanitizer suites and fuzzing, side by side"
export CORRAL_SAN_NO_REBUILD=1
tools/fuzz.sh > "$sanbuild/fuzz-phase.log" 2>&1 &
fuzz_job=$!
suites_rc=0
tools/sanitize.sh --suite unit --suite integration --no-suite vm || suites_rc=$?
fuzz_rc=0
wait "$fuzz_job" || fuzz_rc=$?
phase "fuzzing's output"
grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Timeout|Skipped):" "$sanbuild/fuzz-phase.log" || true
if [ "$fuzz_rc" != 0 ]; then
  tail -n 120 "$sanbuild/fuzz-phase.log"
  echo "tools/test.sh: fuzzing failed (exit $fuzz_rc): $sanbuild/fuzz-phase.log" >&2
fi
[ "$suites_rc" = 0 ] && [ "$fuzz_rc" = 0 ] || exit 1
phase "done"
