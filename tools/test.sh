#!/usr/bin/env bash
# tools/test.sh — the project's one test command (README, .ci/run).
# Installs dependencies, then runs every suite once (the CI, no arguments):
#  1. the sanitizer build (tools/sanitize.sh: build-san/, clang, ASan +
#     UBSan, -Werror) of corral and of every suite's and fuzz target's
#     executable, each object compiled once (issue 36: the CI's time);
#  2. every suite in it (unit, integration, e2e: real clients and the three
#     agent CLIs, vm: qemu), where any sanitizer report fails, and beside
#     them
#  3. fuzzing (tools/fuzz.sh): every libFuzzer target of fuzz/, its
#     reproducible run.
# With arguments (e.g. --suite unit), or CORRAL_TEST_SANITIZE=0: the g++
# -O2 -Werror build (build-test/, the compiler users build with) builds
# everything and runs `meson test` with them (or every suite); with
# arguments the sanitizer build then runs them too, without fuzzing.
# docs/testing.md describes the suites, the compilers and the time budget.
set -euo pipefail
cd "$(dirname "$0")/.."

# As root, as the CI runs it; a user with sudo is taken there (the installs
# and most suites need root). Without either the installs are left out and
# the root-only suites skip, each saying why.
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then
  exec sudo "$0" "$@"
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "tools/test.sh: not root and no sudo: nothing is installed, and the suites that need root will skip" >&2
fi

if [ "$(id -u)" -eq 0 ]; then
  tools/install-deps.sh
  [ -x tools/install-npm-deps.sh ] && tools/install-npm-deps.sh
  # The reference agent image's OCI layout, for the agents_image_e2e suite:
  # built once (about two minutes), again only when its pins change.
  tools/build-agent-image.sh --layout /var/cache/corral-test/agent-image
  # The fresh Debian 12 root the debian_package test installs the package
  # into (a test may not dial out): about a minute, again only when it changes.
  tools/build-debian-root.sh /var/cache/corral-test/debian12-root
fi

phase() { echo "=== tools/test.sh: $1 ($(date -u +%H:%M:%S))"; }

# The debian_package test builds corral once more: with clang at -O0
# without debug info here (docs/packaging.md "The test's quick build").
export CORRAL_DEB_QUICK=${CORRAL_DEB_QUICK:-1}

builddir=${CORRAL_TEST_BUILDDIR:-build-test}
sanbuild=${CORRAL_SAN_BUILDDIR:-build-san}
sanitize=${CORRAL_TEST_SANITIZE:-1}

# With arguments, or without the sanitizer build: everything in the g++ build.
if [ "$sanitize" = 0 ] || [ "$#" -gt 0 ]; then
  phase "build $builddir"
  if [ ! -f "$builddir/build.ninja" ]; then
    # -O2 as users build it, without debug info (no step here reads it).
    meson setup "$builddir" --buildtype=custom -Doptimization=2 -Ddebug=false -Dwerror=true
  fi
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

# The CI (docs/testing.md "Time budget"): one build compiles everything the
# suites and the fuzz targets run, then they all run side by side (the
# suites mostly wait on sandboxes, clients, agents and qemu; the fuzz
# targets compute).
phase "sanitizer build"
tools/sanitize.sh --setup
ninja -C "$sanbuild" $(tools/suite_targets.py "$sanbuild" unit integration e2e vm fuzz)

phase "every suite and fuzzing, side by side"
export CORRAL_SAN_NO_REBUILD=1
tools/fuzz.sh > "$sanbuild/fuzz-phase.log" 2>&1 &
fuzz_job=$!
suites_rc=0
tools/sanitize.sh --suite unit --suite integration --suite e2e --suite vm || suites_rc=$?
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
