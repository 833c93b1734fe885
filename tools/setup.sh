#!/usr/bin/env bash
# tools/setup.sh — the README's first command: install what building and
# running corral needs (tools/install-deps.sh --build-only: no test tools),
# build corral alone (not its tests, fuzz targets or docs), then run a command
# in a fresh sandbox. Works as root (with or without sudo installed) and as a
# user with sudo (apt-get and the run as root, the build as the user).
#   tools/setup.sh [BUILDDIR]     default BUILDDIR: build
# The tests install the rest themselves: `tools/test.sh` (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
builddir=${1:-build}

# As root: directly. Else through sudo, or say what is missing.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    echo "tools/setup.sh: $1 needs root, and sudo is not installed; run tools/setup.sh as root" >&2
    exit 1
  fi
}

step() { echo "=== tools/setup.sh: $1"; }

step "dependencies to build and run corral (tools/install-deps.sh --build-only)"
as_root tools/install-deps.sh --build-only
step "build $builddir/tools/corral"
[ -f "$builddir/build.ninja" ] || meson setup "$builddir"
ninja -C "$builddir" tools/corral
step "a command in a fresh sandbox"
as_root "$builddir/tools/corral" run -- /bin/sh -c 'echo hello from $(hostname); id'
