#!/usr/bin/env bash
# tools/test.sh — the project's one test command (README, .ci/run).
# Installs dependencies, then runs every suite once:
#  1. the g++ build with -Werror (build-test/, what users install): corral and
#     the e2e suites' executables; runs the e2e suites (real clients and the
#     three agent CLIs) and cgroup2_vm (qemu, too slow under ASan);
#  2. the sanitizer build (tools/sanitize.sh: build-san/, clang, ASan + UBSan,
#     -Werror): the unit and integration suites, any sanitizer report fails;
#  3. fuzzing (tools/fuzz.sh): every libFuzzer target of fuzz/, in that build
#     (each starts by running its whole seed corpus, which step 1's replay
#     tests would otherwise run).
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
phase "build $builddir"
if [ ! -f "$builddir/build.ninja" ]; then
  meson setup "$builddir" --buildtype=debugoptimized -Dwerror=true
fi
sanitize=${CORRAL_TEST_SANITIZE:-1}
suites=("$@")
if [ "$sanitize" = 0 ] || [ "$#" -gt 0 ]; then
  ninja -C "$builddir"
else
  # Only corral here; `meson test` builds the chosen suites' executables.
  ninja -C "$builddir" tools/corral
  suites=(--suite e2e --suite vm)
fi
phase "suites in $builddir"
meson test -C "$builddir" --print-errorlogs --num-processes 2 "${suites[@]}" || {
  tools/test-failures.sh "$builddir"
  exit 1
}

[ "$sanitize" = 0 ] && exit 0
# The e2e suites are not run under the sanitizers, for the CI's time budget:
# the corral code they drive is the code the integration suites drive; most
# of their time is the (uninstrumented) agent CLIs and clients.
phase "sanitizer build and suites"
if [ "$#" -gt 0 ]; then
  tools/sanitize.sh "$@"
  exit 0
fi
# cgroup2_vm (suite vm) ran in step 1: it boots qemu for minutes (7 under
# ASan), and the code it reaches under v2 is what the unit suites check.
tools/sanitize.sh --suite unit --suite integration --no-suite vm
phase "fuzzing"
tools/fuzz.sh
phase "done"
