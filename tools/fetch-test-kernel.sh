#!/usr/bin/env bash
# tools/fetch-test-kernel.sh — a Debian kernel for the pure-cgroup-v2 VM test
# (tests/vm/cgroup2_vm.sh): downloads the linux-image package that Debian's
# linux-image-amd64 points at and unpacks it under /var/cache/corral-test/kernel
# (not installed: /boot and the host's boot loader are left alone).
# Idempotent; needs root (apt-get). Prints the directory it filled.
set -euo pipefail

dest=${CORRAL_VM_KERNEL_DIR:-/var/cache/corral-test/kernel}
if compgen -G "$dest/boot/vmlinuz-*" >/dev/null && [ -d "$dest/lib/modules" ]; then
  echo "$dest"
  exit 0
fi
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n1)
if [ -z "$pkg" ]; then
  echo "fetch-test-kernel.sh: apt-cache knows no linux-image-amd64 dependency (run apt-get update?)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# apt-get download drops privileges to _apt, which must be able to write here.
chmod 0755 "$work"
chown _apt "$work" 2>/dev/null || true
(cd "$work" && apt-get download -qq "$pkg")
mkdir -p "$work/x"
dpkg-deb -x "$work"/"$pkg"_*.deb "$work/x"
mkdir -p "$dest"
rm -rf "$dest/boot" "$dest/lib"
mv "$work/x/boot" "$dest/boot"
mkdir -p "$dest/lib"
mv "$work/x/lib/modules" "$dest/lib/modules"
echo "$dest"
