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
  # strict JSON read fast (base/strict_json_fast.cpp)
  rapidjson-dev
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
  # tests: git clone over HTTPS through capture, from git's own http-backend (tests/bridge_e2e)
  git
  # tests: corral run --tty through a real terminal (tests/supervisor/tty/), vi in the host rootfs
  tmux vim
  # tests: real OCI image layouts (tests/image); the reference agent image's
  # Debian base (tools/build-agent-image.sh, tests/agents_e2e)
  umoci debootstrap
  # tests: engines running corral-oci as their runtime (tests/oci/runtime/):
  # podman with its conmon; containerd and its ctr
  podman conmon containerd
  # tests: the node's RuntimeClass manifest parsed (tests/tools/test_oci_node_files.py)
  python3-yaml
  # tests: the systemd unit check (tests/tools/test_systemd_install.sh)
  systemd
  # tests: the Debian package, built, checked and installed into a
  # debootstrap'd root (debian/, tests/tools/test_debian_package.sh)
  debhelper lintian
  # tests: the pure cgroup v2 VM (tests/vm/cgroup2_vm.sh)
  qemu-system-x86
  # benchmarks: the peers corral is measured against (nginx-light and haproxy:
  # run by tools/bench/gateway.sh on its own configs; their system services are
  # kept from starting, see below)
  bubblewrap tinyproxy mitmproxy hyperfine wrk nginx-light haproxy
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
# The benchmark peers' packages start and enable a system service (nginx on
# port 80) that nothing here wants: when this run installs them, a policy-rc.d
# keeps them from starting (unless the host has its own, as containers do) and
# afterwards they are stopped and disabled. A peer installed before is left as
# its owner set it up.
peer_services=()
for p in "${missing[@]}"; do
  case "$p" in nginx-light) peer_services+=(nginx) ;; haproxy) peer_services+=(haproxy) ;; esac
done
our_policy=
if [ "${#peer_services[@]}" -gt 0 ] && [ ! -e /usr/sbin/policy-rc.d ]; then
  our_policy=/usr/sbin/policy-rc.d
  trap 'rm -f "$our_policy"' EXIT
  printf '#!/bin/sh\n# tools/install-deps.sh, for one apt-get run: no nginx or haproxy service start\nfor a; do case "$a" in nginx|nginx.service|haproxy|haproxy.service) exit 101 ;; esac; done\nexit 0\n' > "$our_policy"
  chmod 0755 "$our_policy"
fi
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ -n "$our_policy" ]; then rm -f "$our_policy"; trap - EXIT; fi
for s in "${peer_services[@]}"; do
  if [ -d /run/systemd/system ]; then
    systemctl disable --now "$s" >/dev/null 2>&1 || true
  else  # (systemctl disable works offline too: the unit's symlinks and its SysV links)
    service "$s" stop >/dev/null 2>&1 || true
    systemctl disable "$s" >/dev/null 2>&1 || update-rc.d "$s" disable >/dev/null 2>&1 || true
  fi
done
if [ "$build_only" = 1 ]; then
  echo "install-deps.sh: what building and running corral needs is present (the tests' tools: tools/install-deps.sh)"
  exit 0
fi
# The Debian kernel the pure cgroup v2 VM test boots (unpacked, not installed).
"$(dirname "$0")/fetch-test-kernel.sh" >/dev/null
echo "install-deps.sh: all dependencies present"
