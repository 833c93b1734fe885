#!/usr/bin/env bash
# tools/build-debian-root.sh DIR — a fresh Debian 12 (bookworm) root made
# with debootstrap (minbase), for the Debian package's test
# (tests/tools/test_debian_package.sh), which installs corral's .deb into a
# throw-away overlay of it and runs it there in a chroot.
#
# The tests may not dial out, so the root is made here, in tools/test.sh's
# install phase (from the mirror apt uses: tools/debian-mirror.sh), and kept:
# DIR/stamp names what it was made from, and a root with the same stamp is
# left as it is. Besides minbase it holds only the shared libraries the
# package depends on (debian/control's ${shlibs:Depends}, listed below), so
# `dpkg -i` there checks that the package's dependencies resolve against a
# plain Debian 12. Needs root and the network to the mirror; about a minute.
set -euo pipefail
[ "$#" -eq 1 ] || { echo "usage: tools/build-debian-root.sh DIR" >&2; exit 2; }
dir=$1
root_dir=$(cd "$(dirname "$0")/.." && pwd)
# What corral's package links (-Dstatic_deps=false, debian/rules).
runtime_libs=libstdc++6,libgcc-s1,libssl3,libsodium23,libseccomp2,libcap2,libmnl0,libarchive13
stamp=$( (cat "$0"; echo "$runtime_libs") | sha256sum | cut -d' ' -f1)
if [ "$(cat "$dir/stamp" 2>/dev/null)" = "$stamp" ] && [ -x "$dir/root/usr/bin/dpkg" ]; then
  echo "build-debian-root: $dir is up to date"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "build-debian-root: must run as root (debootstrap)" >&2
  exit 1
fi
command -v debootstrap >/dev/null || { echo "build-debian-root: debootstrap is missing (apt-get install debootstrap)" >&2; exit 1; }
mirror=$("$root_dir/tools/debian-mirror.sh")

work=$(mktemp -d /var/tmp/corral-debian-root.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "build-debian-root: debootstrap bookworm (minbase + $runtime_libs) from $mirror"
debootstrap --variant=minbase --include="$runtime_libs" bookworm "$work/root" "$mirror" \
  >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
rm -rf "$work/root/var/cache/apt/archives/"*.deb "$work/root/var/lib/apt/lists/"*
echo "$stamp" >"$work/stamp"
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
mv "$work" "$dir"
trap - EXIT
rm -f "$dir/debootstrap.log"
echo "build-debian-root: the root is in $dir/root"
