# tools/bench/standin.sh — sourced by the benches that put a local TLS
# stand-in behind corral's gateway (gateway.sh, capture.sh, mcp-call.sh):
# a throwaway test CA whose leaves are P-256 like corral's own, the wait for
# a server's readiness line, and gateway-load's API stand-in with a fresh
# secret. Everything listens on 127.0.0.1 only.
# The callers set: $work (their temporary directory), pids (an array the
# cleanup kills).

# wait_for FILE PATTERN SECONDS: returns once a line of FILE matches
# PATTERN; after SECONDS prints FILE and fails.
wait_for() {
  for _ in $(seq 1 $(( $3 * 10 ))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "$(basename "$0"): timed out waiting for '$2' in $1:" >&2; cat "$1" >&2; return 1
}

# make_test_ca DIR CN: DIR/ca.key and DIR/ca.crt (world-readable, so a
# box's UID can trust it), valid two days.
make_test_ca() {
  local dir=$1 cn=$2
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" -days 2 -subj "/CN=$cn" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
  chmod 0644 "$dir/ca.crt"
}

# make_leaf DIR NAME CN SAN: DIR/NAME.key and DIR/NAME.crt, a server
# certificate for SAN (e.g. "DNS:api.example.test,IP:127.0.0.1") signed by
# DIR's test CA.
make_leaf() {
  local dir=$1 name=$2 cn=$3 san=$4
  printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$san" > "$dir/$name.ext"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$dir/$name.key" -out "$dir/$name.csr" -subj "/CN=$cn" 2>/dev/null
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -out "$dir/$name.crt" -days 2 -extfile "$dir/$name.ext" 2>/dev/null
}

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
