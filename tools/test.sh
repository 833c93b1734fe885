#!/usr/bin/env bash
# tools/test.sh — the project's one test command (README, .ci/run).
# Installs dependencies, then:
#  1. builds with -Werror into build-test/ and runs every suite: unit (no
#     root), integration and e2e (root; they skip with a reason if not root);
#  2. the sanitizer build (tools/sanitize.sh: build-san/, clang, ASan + UBSan):
#     the unit and integration suites again (but cgroup2_vm), any sanitizer
#     report fails;
#  3. fuzzing (tools/fuzz.sh): every libFuzzer target of fuzz/ for
#     CORRAL_FUZZ_SECONDS (default 30) each, in that build.
# Extra arguments go to `meson test` in 1 and 2 (e.g. --suite unit); with
# arguments, 3 is left out. CORRAL_TEST_SANITIZE=0 leaves out 2 and 3.
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
ninja -C "$builddir"
phase "suites in $builddir"
meson test -C "$builddir" --print-errorlogs --num-processes 2 "$@" || {
  tools/test-failures.sh "$builddir"
  exit 1
}

[ "${CORRAL_TEST_SANITIZE:-1}" = 0 ] && exit 0
# The e2e suites are not run again under the sanitizers, for the CI's time
# budget: the corral code they drive is the code the integration suites
# drive; most of their time is the (uninstrumented) agent CLIs and clients.
phase "sanitizer build and suites"
if [ "$#" -gt 0 ]; then
  tools/sanitize.sh "$@"
  exit 0
fi
# cgroup2_vm (suite vm) is left out here: it boots qemu for minutes, and the
# code it reaches under v2 is the code the g++ run of step 1 checked there.
tools/sanitize.sh --suite unit --suite integration --no-suite vm
phase "fuzzing"
tools/fuzz.sh
phase "done"
