# tools/bench/standin.sh — sourced by the benches that put a local TLS
# stand-in behind corral's gateway (gateway.sh, capture.sh, mcp-call.sh):
# a throwaway test CA (tests/support/test_pki.sh), the wait for a server's
# readiness line, and gateway-load's API stand-in with a fresh
# secret. Everything listens on 127.0.0.1 only.
# The callers set: $work (their temporary directory), pids (an array the
# cleanup kills).

# wait_for FILE PATTERN SECONDS: returns once a line of FILE matches
# PATTERN; after SECONDS prints FILE and fails.
wait_for() {
  for _ in $(seq 1 $(( $3 * 10 ))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "$(basename "$0"): timed out waiting for '$2' in $1:" >&2; cat "$1" >&2; return 1
}

# make_test_ca DIR CN, make_leaf DIR NAME CN SAN: the tests' own.
# shellcheck source=tests/support/test_pki.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../tests/support/test_pki.sh"

# start_api_standin LOAD PREFIX: a fresh secret "PREFIX-<random>" in
# $work/key (0600) and LOAD's `serve` (gateway-load: the API stand-in) on
# $work/up.crt and $work/up.key, its pid in pids. Sets secret, https_port
# and bulk_port (the stand-in's plain bulk-transfer port).
start_api_standin() {
  local load=$1 prefix=$2
  secret="$prefix-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  install -m 0600 /dev/null "$work/key"
  echo "$secret" > "$work/key"
  "$load" serve --cert "$work/up.crt" --key "$work/up.key" --api-key "$work/key" > "$work/serve.out" &
  pids+=($!)
  wait_for "$work/serve.out" '^bulk ' 10
  https_port=$(awk '/^https/ {print $2}' "$work/serve.out")
  bulk_port=$(awk '/^bulk/ {print $2}' "$work/serve.out")
}
