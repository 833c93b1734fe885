#!/usr/bin/env bash
# The Debian package (debian/, docs/packaging.md), for real: build it from
# this source tree with dpkg-buildpackage, check it with lintian, install it
# with dpkg into a fresh Debian 12 root made by debootstrap
# (tools/build-debian-root.sh; tools/test.sh makes it in its install phase,
# since a test may not dial out), run `corral doctor` and a hello run from
# the installed package there (chroot), then remove and purge it and check
# nothing of it is left.
#
# The root is used through an overlay (the cache stays pristine) in a mount
# namespace of this test's own, with the host's /proc, /sys and /dev bound
# in: corral builds its sandbox with the host's kernel as it would on a
# Debian 12 machine. Exit 77 (with the reason) without root, without
# debhelper or lintian, or without the cached root.
set -euo pipefail
src=${CORRAL_SOURCE_ROOT:?run through meson test}
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "needs root (dpkg -i and chroot in a Debian root)"
for tool in dpkg-buildpackage dh lintian unshare; do
  command -v "$tool" >/dev/null || skip "$tool not found (tools/install-deps.sh installs debhelper and lintian)"
done
base=${CORRAL_DEBIAN_ROOT:-/var/cache/corral-test/debian12-root}
[ -x "$base/root/usr/bin/dpkg" ] ||
  skip "no Debian 12 root in $base (tools/build-debian-root.sh $base makes it; tools/test.sh does)"

work=$(mktemp -d /var/tmp/corral-deb-test.XXXXXX)
cleanup() {
  # The overlay lives in this test's mount namespace and goes with it; the
  # files under it are this test's.
  rm -rf "$work"
}
trap cleanup EXIT

# 1. The source as the repository holds it (tracked and new, unignored
#    files; never the build dirs), then the package, binary only, unsigned.
mkdir "$work/corral"
git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1 || fail "$src is not a git work tree"
(cd "$src" && git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do if [ -e "$f" ]; then printf '%s\0' "$f"; fi; done |
  tar --null -T - -cf -) | tar -C "$work/corral" -xf -
[ -x "$work/corral/debian/rules" ] || fail "debian/rules did not come with the source"
# nocheck: the suites run in tools/test.sh. The compiler and its flags are
# the package's own (Debian's g++; debian/rules, dpkg-buildflags: -O2 -g,
# hardening) unless CORRAL_DEB_QUICK=1, which tools/test.sh sets: clang at
# -O0 without debug info (CXX=clang++, DEB_BUILD_OPTIONS=noopt noddebs,
# DEB_CXXFLAGS_APPEND=-g0), the cheapest compile that still packages what
# debian/ says, how it says (docs/packaging.md "The test's quick build").
build_options="nocheck parallel=$(nproc)"
quick_flags=()
if [ "${CORRAL_DEB_QUICK:-0}" = 1 ]; then
  build_options+=" noopt noddebs"
  quick_flags=(DEB_CXXFLAGS_APPEND=-g0)
  # clang is the sanitizer build's compiler, so the CI has it; by hand
  # without it the quick build stays with g++.
  if command -v clang++ >/dev/null; then quick_flags+=(CXX=clang++); fi
fi
echo "dpkg-buildpackage: building (DEB_BUILD_OPTIONS=$build_options ${quick_flags[*]})"
if ! (cd "$work/corral" && env DEB_BUILD_OPTIONS="$build_options" "${quick_flags[@]}" \
      dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1); then
  tail -n 60 "$work/build.log" >&2
  fail "dpkg-buildpackage failed (above: the last lines of its log)"
fi
deb=$(ls "$work"/corral_*_amd64.deb)
changes=$(ls "$work"/corral_*_amd64.changes)
echo "built: $(basename "$deb") ($(stat -c %s "$deb") bytes), $(grep -m1 -o 'C++ compiler for the host machine: [^ ]*' "$work/build.log")"

# 2. lintian: no error or warning (debian/corral.lintian-overrides holds the
#    explained ones; docs/packaging.md lists them).
if ! lintian --fail-on error,warning --display-info --pedantic "$changes" >"$work/lintian.log" 2>&1; then
  cat "$work/lintian.log" >&2
  fail "lintian reported errors or warnings"
fi
sed 's/^/lintian: /' "$work/lintian.log"

# 3. What the package holds.
contents=$(dpkg-deb -c "$deb")
for want in ./usr/bin/corral ./usr/bin/corral-exec ./usr/share/man/man1/corral.1.gz \
    ./usr/share/bash-completion/completions/corral \
    ./lib/systemd/system/corral-gateway.service ./usr/lib/tmpfiles.d/corral.conf; do
  grep -q " $want\$" <<<"$contents" || fail "the package lacks $want: $contents"
done
grep -q ' ./usr/share/man/man1/corral-exec.1.gz -> corral.1.gz$' <<<"$contents" ||
  fail "corral-exec's man page is not corral's: $(grep corral-exec <<<"$contents")"
unit=$(dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./lib/systemd/system/corral-gateway.service)
grep -qx 'ExecStart=/usr/bin/corral gateway --org /etc/corral' <<<"$unit" ||
  fail "the unit does not start /usr/bin/corral: $(grep ExecStart <<<"$unit")"

# 4. Installed into a fresh Debian 12 root, run there, removed.
cp "$deb" "$work/corral.deb"
# In a mount namespace of the test's own, the overlay becomes the root by
# pivot_root, not chroot: the kernel refuses a user namespace to a chrooted
# process, and corral makes one for a workspace's ID mapping (doctor checks).
cat >"$work/enter-root.sh" <<'ENTER'
set -euo pipefail
m=$1
mount -t overlay overlay -o "lowerdir=$2,upperdir=$m/upper,workdir=$m/overlay-work" "$m/root"
mount -t proc proc "$m/root/proc"
mount --rbind /sys "$m/root/sys"
mount --rbind /dev "$m/root/dev"
mount -t tmpfs -o mode=0755 tmpfs "$m/root/run"
# The host's /run/corral too: its UID leases and run locks are host-wide,
# like the cgroups under /sys. With an empty one the installed corral would
# take every other corral's live run on this host for a dead one and sweep
# its cgroups (supervisor/stale_cleanup.hpp).
mkdir -p /run/corral "$m/root/run/corral"
mount --bind /run/corral "$m/root/run/corral"
cp "$m/corral.deb" "$m/in-root.sh" "$m/root/tmp/"
cd "$m/root"
mkdir .old-root
pivot_root . .old-root
cd /
umount -l /.old-root
rmdir /.old-root
exec /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 /bin/bash /tmp/in-root.sh
ENTER
cat >"$work/in-root.sh" <<'INROOT'
set -euo pipefail
fail() { echo "FAIL (in the Debian root): $*" >&2; exit 1; }
grep -q '^VERSION_CODENAME=bookworm' /etc/os-release || fail "the root is not Debian 12: $(cat /etc/os-release)"
dpkg -i /tmp/corral.deb || fail "dpkg -i refused the package"
dpkg -s corral | grep -q '^Status: install ok installed' || fail "corral is not installed"
version=$(corral --version) || fail "corral --version failed"
echo "installed: $version"
corral doctor >/tmp/doctor.log 2>&1 || { cat /tmp/doctor.log >&2; fail "corral doctor failed"; }
sed 's/^/doctor: /' /tmp/doctor.log
out=$(corral run -- /bin/sh -c 'echo hello from $(hostname); id -u') || fail "the hello run failed: $out"
echo "run: $out"
grep -q '^hello from corral-' <<<"$out" || fail "the hello run printed no greeting: $out"
[ -n "$(ls /var/lib/corral/runs 2>/dev/null)" ] || fail "the run left no record under /var/lib/corral/runs"
[ -f /usr/share/man/man1/corral.1.gz ] || fail "no man page installed"
# corral-exec, the small exec client, into a session of the installed corral.
session=$(corral session start) || fail "corral session start failed"
out=$(corral-exec "$session" -- /bin/sh -c 'echo exec in $(hostname)') || fail "corral-exec failed: $out"
echo "corral-exec: $out"
grep -q '^exec in corral-' <<<"$out" || fail "corral-exec printed no greeting: $out"
corral session stop "$session" >/dev/null || fail "corral session stop failed"

dpkg -r corral || fail "dpkg -r failed"
dpkg -P corral || fail "dpkg -P failed"
for f in /usr/bin/corral /usr/bin/corral-exec; do [ ! -e "$f" ] || fail "$f is still there after the purge"; done
[ ! -e /lib/systemd/system/corral-gateway.service ] || fail "the unit is still there after the purge"
if dpkg -s corral >/dev/null 2>&1; then fail "dpkg still knows corral after the purge"; fi
left=$(find /usr/share/doc/corral /usr/share/bash-completion/completions/corral \
  /usr/lib/tmpfiles.d/corral.conf /etc/corral 2>/dev/null || true)
[ -z "$left" ] || fail "the purge left: $left"
# The state dir (run records, journals, the signing key) is the operator's
# data: kept after a purge (docs/packaging.md).
[ -d /var/lib/corral/runs ] || fail "the purge removed the run records"
echo "removed and purged cleanly; /var/lib/corral kept"
INROOT
mkdir "$work/root" "$work/upper" "$work/overlay-work"
unshare --mount --propagation private bash "$work/enter-root.sh" "$work" "$base/root"
echo "ok: the package built, passed lintian, installed, ran and was removed in a Debian 12 root"
