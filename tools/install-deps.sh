#!/usr/bin/env bash
# tools/install-deps.sh — install corral's dependencies from Debian 12's
# packages. Idempotent: safe to run on every CI run. Needs root.
#   tools/install-deps.sh               everything: build, run, test and
#                                       benchmark tools, the agent CLIs' Node
#                                       runtime, the VM test's kernel (tools/test.sh)
#   tools/install-deps.sh --build-only  what building and running corral needs
#                                       (tools/setup.sh, the README's first command)
set -euo pipefail

build_only=0
case "${1:-}" in
  "") ;;
  --build-only) build_only=1 ;;
  *) echo "install-deps.sh: unknown argument \"$1\"; allowed: --build-only" >&2; exit 2 ;;
esac

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: must run as root (it calls apt-get)" >&2
  exit 1
fi

# What building corral needs; the libraries' runtime parts come with them
# (seccomp, libcap and OpenSSL are linked statically, libmnl and libarchive
# shared). doctest-dev: meson's setup checks its header (tests are configured
# even when only corral is built). cmake: meson's fallback for a dependency
# without a pkg-config file.
build_packages=(
  g++ meson ninja-build pkg-config cmake
  libseccomp-dev libcap-dev libmnl-dev libssl-dev
  # Ed25519 for the journal and small SHA-256s without OpenSSL's start-up (journal/key.cpp, base/sha256.cpp)
  libsodium-dev
  nlohmann-json3-dev libtoml11-dev libboost1.81-dev doctest-dev
  # images: reading tar archives of every compression (image/, corral image import)
  libarchive-dev
)

test_packages=(
  # the sanitizer and fuzzing build (tools/sanitize.sh, tools/fuzz.sh): clang 14
  # with libFuzzer and the ASan/UBSan runtimes, llvm-symbolizer for the reports,
  # lld to link them
  clang libclang-rt-14-dev llvm-14 lld
  # tests: the busybox rootfs, real clients, netns tooling
  busybox-static curl openssl iproute2 util-linux procps python3
  # tests: corral run --tty through a real terminal (tests/supervisor/tty/), vi in the host rootfs
  tmux vim
  # tests: real OCI image layouts (tests/image); the reference agent image's
  # Debian base (tools/build-agent-image.sh, tests/agents_e2e)
  umoci debootstrap
  # tests: the systemd unit check (tests/tools/test_systemd_install.sh)
  systemd
  # tests: the Debian package, built, checked and installed into a
  # debootstrap'd root (debian/, tests/tools/test_debian_package.sh)
  debhelper lintian
  # tests: the pure cgroup v2 VM (tests/vm/cgroup2_vm.sh)
  qemu-system-x86
  # benchmarks: the peers corral is measured against
  bubblewrap tinyproxy mitmproxy hyperfine wrk
  # benchmarks: reading run records (tools/bench/soak.sh)
  jq
)
command -v node >/dev/null 2>&1 || test_packages+=(nodejs npm)

packages=("${build_packages[@]}")
[ "$build_only" = 1 ] || packages+=("${test_packages[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ "$build_only" = 1 ]; then
  echo "install-deps.sh: what building and running corral needs is present (the tests' tools: tools/install-deps.sh)"
  exit 0
fi
# The Debian kernel the pure cgroup v2 VM test boots (unpacked, not installed).
"$(dirname "$0")/fetch-test-kernel.sh" >/dev/null
echo "install-deps.sh: all dependencies present"
