#!/usr/bin/env bash
# tests/vm/cgroup2_vm.sh — corral's cgroup limits on a pure cgroup v2 host, for real.
#
# This machine's cgroups are hybrid (memory, pids and cpu live on v1), while
# most users run pure cgroup v2. This test boots Debian's kernel in qemu with
# cgroup_no_v1=all, so the v2 hierarchy owns every controller, and runs
# tests/vm/cgroup2_checks.sh there: real `corral run`s with --memory, --pids and
# --cpus against the VM's v2 hierarchy (limits written, enforced, peaks read,
# cgroups removed). Debian 12's kernel also lacks overlayfs "lowerdir+" (6.8+),
# so the checks run an image of 60 layers there too.
#
# The VM's root file system is this host's, shared read-only over 9p (the
# corral binary, /usr for --rootfs host); /run is the VM's own tmpfs (not /tmp:
# the build directory may live there). The guest caches what it read
# (cache=loose): nothing it reads changes while it runs (the layout below is
# written before the boot, the checks write only to /run), and without the
# cache every start of the sanitizer build's corral and of python3 read its
# files over emulated virtio again (332 s of checks against 63 s with it).
# The VM has no network device at all.
#
# Needs root, qemu-system-x86_64 and a Debian kernel unpacked by
# tools/fetch-test-kernel.sh (tools/install-deps.sh does both); skips (77)
# with the reason if one is missing. KVM is used when it works, else qemu's
# emulation (slower, same result).
set -euo pipefail

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "the VM test needs root (9p export of the host's root, corral run as root inside)"
: "${CORRAL_BIN:?CORRAL_BIN is not set; run through meson test}"
: "${CORRAL_SOURCE_ROOT:?CORRAL_SOURCE_ROOT is not set; run through meson test}"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
[ -x /bin/busybox ] || skip "/bin/busybox (busybox-static) is needed for the VM's initramfs"
kdir=${CORRAL_VM_KERNEL_DIR:-/var/cache/corral-test/kernel}
vmlinuz=$(ls "$kdir"/boot/vmlinuz-* 2>/dev/null | head -n1 || true)
[ -n "$vmlinuz" ] || skip "no Debian kernel unpacked in $kdir (run tools/fetch-test-kernel.sh)"
kver=${vmlinuz##*/vmlinuz-}
moddir="$kdir/lib/modules/$kver"
[ -d "$moddir" ] || skip "no modules for $kver in $kdir"

work=$(mktemp -d /tmp/corral-vm-XXXXXX)
trap 'rm -rf "$work"' EXIT

# --- initramfs: busybox, the modules for virtio 9p and overlayfs, an /init.
root="$work/initramfs"
mkdir -p "$root"/{bin,dev,proc,sys,host,modules}
cp /bin/busybox "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
# Load order (dependencies first); read from the modules' own "depends=".
modules=(virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci
         9pnet 9pnet_virtio netfs fscache 9p overlay)
for m in "${modules[@]}"; do
  f=$(find "$moddir/kernel" \( -name "$m.ko" -o -name "$m.ko.xz" -o -name "$m.ko.zst" \) | head -n1)
  if [ -z "$f" ]; then
    # Built into this kernel (or absent): /init's insmod loop skips it.
    continue
  fi
  case "$f" in
    *.xz) xz -dc "$f" > "$root/modules/$m.ko" ;;
    *.zst) zstd -qdc "$f" > "$root/modules/$m.ko" ;;
    *) cp "$f" "$root/modules/$m.ko" ;;
  esac
done
checks="$CORRAL_SOURCE_ROOT/tests/vm/cgroup2_checks.sh"
# An image of 60 layers for the checks: this kernel has no overlayfs
# "lowerdir+", so corral mounts them with one option (rootfs/apply_plan.cpp).
python3 "$CORRAL_SOURCE_ROOT/tests/image/make_deep_layout.py" "$work/deep-oci" 60
cat > "$root/init" <<INIT
#!/bin/sh
export PATH=/bin
busybox mount -t proc proc /proc
busybox mount -t sysfs sysfs /sys
busybox mount -t devtmpfs dev /dev
for m in ${modules[*]}; do
  [ -f /modules/\$m.ko ] && { busybox insmod /modules/\$m.ko || echo "VM: insmod \$m failed"; }
done
if ! busybox mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /host; then
  echo "VM-ERROR cannot mount the host's root over 9p"
  busybox poweroff -f
fi
busybox mount --move /proc /host/proc
busybox mount --move /sys /host/sys
busybox mount --move /dev /host/dev
busybox mount -t tmpfs -o mode=0755 run /host/run
busybox mount -t cgroup2 cgroup2 /host/sys/fs/cgroup
exec busybox switch_root /host /bin/bash "$checks" "$CORRAL_BIN" "$work/deep-oci"
INIT
chmod +x "$root/init"
(cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) > "$work/initrd.gz"

# --- boot. TCG (qemu's emulation) by default: it works everywhere, including
# inside VMs whose nested KVM is broken (as on the project's machine, where
# KVM aborts on an MSR); CORRAL_VM_ACCEL=kvm uses KVM where it works.
if [ "${CORRAL_VM_ACCEL:-tcg}" = kvm ]; then
  accel=(-accel kvm) cpu=(-cpu host)
else
  accel=(-accel tcg) cpu=(-cpu max)
fi
log="$work/console.log"
echo "booting $vmlinuz (${accel[*]}), cgroup_no_v1=all"
# The bound is for a VM that hangs, never for a slow one: the VM ends by
# itself when its checks are done (VM-DONE). Under TCG with the sanitizer
# build's corral it took 141 s on a quiet machine and more than 600 s (the
# bound then) while another build loaded the machine (session 34's CI run).
vm_bound=${CORRAL_VM_BOUND:-1500}
set +e
timeout "$vm_bound" qemu-system-x86_64 "${accel[@]}" -machine q35 "${cpu[@]}" -smp 2 -m 1536 \
  -nodefaults -no-user-config -display none -nic none -serial "file:$log" -no-reboot \
  -kernel "$vmlinuz" -initrd "$work/initrd.gz" \
  -append "console=ttyS0 panic=-1 cgroup_no_v1=all quiet loglevel=3" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  </dev/null
qemu_rc=$?
set -e
tr -d '\r' < "$log" | grep -E '^(VM|CHECK|corral)' || true
[ "$qemu_rc" -eq 0 ] || fail "qemu exited $qemu_rc (124: the VM did not end within $vm_bound s); console tail:
$(tail -n 40 "$log")"
grep -q '^VM-DONE' "$log" || fail "the VM did not finish its checks; console tail:
$(tail -n 40 "$log")"
if grep -q '^CHECK FAIL' "$log"; then fail "$(grep -c '^CHECK FAIL' "$log") check(s) failed in the VM"; fi
passed=$(grep -c '^CHECK PASS' "$log" || true)
[ "$passed" -ge 1 ] || fail "no check ran in the VM"
echo "PASS: $passed checks on pure cgroup v2 ($kver)"
