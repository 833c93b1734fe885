#!/usr/bin/env bash
# tools/test.sh — the project's one test command (README, .ci/run).
# Installs dependencies, builds with -Werror into build-test/, and runs every
# suite: unit (no root), integration and e2e (root; they skip with a reason
# if not root). Extra arguments go to `meson test` (e.g. --suite unit).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -eq 0 ]; then
  tools/install-deps.sh
  [ -x tools/install-npm-deps.sh ] && tools/install-npm-deps.sh
fi

builddir=${CORRAL_TEST_BUILDDIR:-build-test}
if [ ! -f "$builddir/build.ninja" ]; then
  meson setup "$builddir" --buildtype=debugoptimized -Dwerror=true
fi
ninja -C "$builddir"
meson test -C "$builddir" --print-errorlogs --num-processes 2 "$@"
