#!/usr/bin/env bash
# tools/bench/oci.sh — `podman run --rm IMAGE /bin/true` with corral-oci as
# the runtime against crun and runc (issue 34: target ≤ 1.5× crun), in one
# invocation, the runtimes alternating round by round (round r starts at
# runtime r mod 3), on one busybox image loaded from an OCI archive into a
# podman store of the bench's own. Each run is podman's whole path: conmon,
# the runtime's create, start, the process, its exit, delete. corral-oci's
# box is a corral run (verified teardown, run.json, journal) with no
# network but its loopback; crun and runc get `--network none` too.
#
# Usage (root): tools/bench/oci.sh [--runs N] [--corral-oci PATH]
#   default: --runs 30 --corral-oci $CORRAL_OCI_BIN or build-test/tools/corral-oci
# Prints each runtime's median, p10, p90 (ms) and the ratios to crun.
# Not a test: figures depend on the machine; compare within one invocation.
set -euo pipefail

runs=30
oci=${CORRAL_OCI_BIN:-build-test/tools/corral-oci}
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --corral-oci) oci=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "oci.sh: unknown argument '$1' (accepted: --runs N, --corral-oci PATH)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "oci.sh: must run as root (podman builds real containers)" >&2; exit 1; }
for tool in podman conmon crun runc umoci busybox python3; do
  command -v $tool >/dev/null || { echo "oci.sh: $tool is not installed (tools/install-deps.sh)" >&2; exit 1; }
done
oci=$(realpath "$oci")

TMP=$(mktemp -d /tmp/corral-bench-oci.XXXXXX)
PODMAN=(podman --root "$TMP/storage" --runroot "$TMP/runroot" --cgroup-manager cgroupfs --events-backend none)
cleanup() {
  "${PODMAN[@]}" rm -a -f >/dev/null 2>&1 || true
  "${PODMAN[@]}" rmi -a -f >/dev/null 2>&1 || true
  umount -R "$TMP/storage/overlay" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

mkdir -m 0700 "$TMP/state"
printf '#!/bin/sh\nexec "%s" --root "%s" --state-dir "%s" "$@"\n' "$oci" "$TMP/oci-root" "$TMP/state" > "$TMP/corral-oci"
chmod 0755 "$TMP/corral-oci"
(
  cd "$TMP" && umoci init --layout img && umoci new --image img:t && umoci unpack --image img:t b >/dev/null &&
    mkdir -p b/rootfs/bin && cp "$(command -v busybox)" b/rootfs/bin/busybox && ln -s busybox b/rootfs/bin/true &&
    umoci repack --image img:t b && tar -C img -cf img.tar .
) > "$TMP/image.log" 2>&1 || { echo "oci.sh: the image: $(cat "$TMP/image.log")" >&2; exit 1; }
img=$("${PODMAN[@]}" load -q -i "$TMP/img.tar" | sed -n 's/^Loaded image: //p' | tail -1)

# The same limits for every runtime, below any root's hard limits: podman's
# defaults (nofile and nproc of 1048576 and more) are raises, which runc and
# crun make with setrlimit and a root without CAP_SYS_RESOURCE (a
# container's, this VM's) may not; corral-oci never raises a limit.
LIMITS=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
names=() paths=()
# One warm-up each (the store's first mount, the binaries' pages); a runtime
# that cannot run here is left out and says why (crun refuses hybrid cgroups).
for rt in "corral $TMP/corral-oci" "crun $(command -v crun)" "runc $(command -v runc)"; do
  if "${PODMAN[@]}" --runtime "${rt#* }" run --rm --network none "${LIMITS[@]}" "$img" /bin/true 2> "$TMP/warm.err"; then
    names+=("${rt%% *}") paths+=("${rt#* }")
  else
    echo "${rt%% *}: left out, it cannot run a container here: $(grep -m1 . "$TMP/warm.err")"
    if grep -q 'hybrid mode not supported' "$TMP/warm.err"; then
      echo "  (crun runs on a hybrid host once cgroup2 has no controllers; it has:" \
        "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null); docs/benchmarks.md moves hugetlb to a v1 hierarchy)"
    fi
  fi
done
n=${#names[@]}
for ((r = 0; r < runs; r++)); do
  for ((k = 0; k < n; k++)); do
    i=$(((r + k) % n))
    t0=$(date +%s%N)
    "${PODMAN[@]}" --runtime "${paths[$i]}" run --rm --network none "${LIMITS[@]}" "$img" /bin/true
    echo "${names[$i]} $((($(date +%s%N) - t0) / 1000))" >> "$TMP/times"
  done
done
python3 - "$TMP/times" "$runs" <<'EOF'
import statistics, sys
t = {}
for line in open(sys.argv[1]):
    name, us = line.split()
    t.setdefault(name, []).append(int(us) / 1000)
def q(v, p): v = sorted(v); return v[min(len(v) - 1, int(p * len(v)))]
print("podman run --rm IMAGE /bin/true, %s runs each (ms)" % sys.argv[2])
for name, v in t.items():
    print("  %-7s median %7.1f  p10 %7.1f  p90 %7.1f" % (name, statistics.median(v), q(v, 0.1), q(v, 0.9)))
for peer in ("crun", "runc"):
    if "corral" in t and peer in t:
        print("  corral/%s %.2f%s" % (peer, statistics.median(t["corral"]) / statistics.median(t[peer]),
                                      " (target <= 1.5)" if peer == "crun" else ""))
EOF
