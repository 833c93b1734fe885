#!/usr/bin/env bash
# tests/oci/runtime/test_containerd_e2e.sh — Debian's containerd with its
# runc shim (io.containerd.runc.v2) calling corral-oci as the runc binary
# (`ctr run --runc-binary`, what a runtime entry's BinaryName sets), on a
# busybox image imported from an OCI archive. containerd runs as this test's
# own daemon (its root, state and socket in the test's directory, the CRI
# plugin off). The cases: run --rm (stdout, the exit status), run -d +
# task ls (RUNNING), task exec (output, status), task kill (the process's SIGTERM trap: exit 5, STOPPED),
# task delete + container rm (no record, no process of the box's UID).
# Root only; exits 77 with the reason when root, containerd, ctr, umoci or
# busybox is missing (tools/install-deps.sh installs them).
set -uo pipefail

OCI=${CORRAL_OCI_BIN:?CORRAL_OCI_BIN (the corral-oci binary) must be set}
UID_RANGE=1900101160-1900101189

. "$(dirname "$0")/engine_helpers.sh"
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root (containerd and corral-oci build real boxes)" >&2; exit 77; fi
skip_without containerd ctr umoci busybox python3

TMP=$(mktemp -d /tmp/corral-containerd.XXXXXX) || exit 1
CONTAINERD_PID=

STATE="$TMP/state"; mkdir -m 0700 "$STATE"
printf '#!/bin/sh\nexec "%s" --state-dir "%s" --uid-range %s "$@"\n' "$OCI" "$STATE" "$UID_RANGE" > "$TMP/corral-oci"
chmod 0755 "$TMP/corral-oci"
printf 'version = 2\nroot = "%s"\nstate = "%s"\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n[grpc]\n  address = "%s"\n' \
  "$TMP/root" "$TMP/cstate" "$TMP/c.sock" > "$TMP/config.toml"
C=(ctr --address "$TMP/c.sock" --namespace corral-test)
cleanup() {
  for t in $("${C[@]}" task ls -q 2>/dev/null); do "${C[@]}" task kill -s KILL "$t" >/dev/null 2>&1; done
  sleep 0.5
  for t in $("${C[@]}" task ls -q 2>/dev/null); do "${C[@]}" task delete "$t" >/dev/null 2>&1; done
  for c in $("${C[@]}" container ls -q 2>/dev/null); do "${C[@]}" container rm "$c" >/dev/null 2>&1; done
  [ -n "$CONTAINERD_PID" ] && kill "$CONTAINERD_PID" 2>/dev/null && wait "$CONTAINERD_PID" 2>/dev/null
  umount -R "$TMP/root" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

containerd --config "$TMP/config.toml" > "$TMP/containerd.log" 2>&1 &
CONTAINERD_PID=$!
for ((i = 0; i < 600; i++)); do "${C[@]}" version >/dev/null 2>&1 && break; sleep 0.1; done
"${C[@]}" version >/dev/null 2>&1 || { echo "FAIL: containerd did not start: $(tail -5 "$TMP/containerd.log")" >&2; exit 1; }

make_busybox_archive "$TMP" || { echo "FAIL: the image could not be made: $(cat "$TMP/image.log")" >&2; exit 1; }
"${C[@]}" images import --index-name busybox "$TMP/img.tar" > "$TMP/import.log" 2>&1 ||
  { echo "FAIL: ctr images import: $(cat "$TMP/import.log")" >&2; exit 1; }
pass "ctr images import of an OCI archive"
R=(--runc-binary "$TMP/corral-oci")

out=$("${C[@]}" run --rm "${R[@]}" busybox c1 /bin/sh -c 'echo out-$((6*7)) $(id -u); exit 3' 2>"$TMP/err")
rc=$?
check "run --rm: exit status 3 (got $rc; $(head -c 300 "$TMP/err"))" [ $rc -eq 3 ]
check "run --rm: stdout (got \"$out\")" [ "${out%% *}" = out-42 ]
check "run --rm: the process is not root (got \"${out##* }\")" [ "${out##* }" != 0 ]

"${C[@]}" run -d "${R[@]}" busybox c2 /bin/sh -c 'trap "exit 5" TERM; while :; do sleep 0.1; done' > "$TMP/run-d.log" 2>&1
task_status() { "${C[@]}" task ls 2>/dev/null | awk -v id="$1" '$1 == id { print $3 }'; }
check "run -d: task ls says RUNNING" [ "$(task_status c2)" = RUNNING ]
out=$("${C[@]}" task exec --exec-id e1 c2 /bin/sh -c 'echo exec-$((6*7)); exit 4' 2>&1)
rc=$?
check "task exec: its output (got \"$out\") and status 4 (got $rc)" [ "$out" = exec-42 -a $rc -eq 4 ]
pids=$("${C[@]}" task ps c2 2>&1 | awk 'NR > 1 { print $1 }')
comms=$(for p in $pids; do cat "/proc/$p/comm" 2>/dev/null; done | sort -u | tr '\n' ' ')
check "task ps (the shim's ps --format json): the box's processes (got \"$comms\")" grep -qw sh <<<"$comms"
uid=$(python3 -c "import json,sys,glob; print(json.load(open(sorted(glob.glob(sys.argv[1]+'/runs/*/run.json'))[-1]))['uid'])" "$STATE")
"${C[@]}" task kill c2
for ((i = 0; i < 600; i++)); do [ "$(task_status c2)" = STOPPED ] && break; sleep 0.1; done
check "task kill (SIGTERM): STOPPED" [ "$(task_status c2)" = STOPPED ]
code=$("${C[@]}" task delete c2 2>&1 | sed -n 's/.*exit code \([0-9]*\).*/\1/p')
check "task delete: the trap's exit status 5 (got \"$code\")" [ "$code" = 5 ]
"${C[@]}" container rm c2
check "after delete: no container record of corral-oci's" [ -z "$(ls -A /run/containerd/runc/corral-test 2>/dev/null)" ]
check "after delete: no process of the box's UID ($uid)" [ -z "$(ps -o pid= -u "$uid")" ]

echo "$passes passed, $failures failed"
[ $failures -eq 0 ]
