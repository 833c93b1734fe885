# tests/support/test_pki.sh — sourced by shell tests and benches that need
# a throwaway certificate authority for a stand-in server on loopback:
# P-256 keys like corral's own leaves, valid two days.

# make_test_ca DIR CN: DIR/ca.key and DIR/ca.crt (world-readable, so a
# box's UID can trust it).
make_test_ca() {
  local dir=$1 cn=$2
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" -days 2 -subj "/CN=$cn" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null &&
    chmod 0644 "$dir/ca.crt"
}

# make_leaf DIR NAME CN SAN: DIR/NAME.key and DIR/NAME.crt, a server
# certificate for SAN (e.g. "DNS:api.example.test,IP:127.0.0.1") signed by
# DIR's test CA.
make_leaf() {
  local dir=$1 name=$2 cn=$3 san=$4
  printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$san" > "$dir/$name.ext" &&
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$dir/$name.key" -out "$dir/$name.csr" -subj "/CN=$cn" 2>/dev/null &&
    openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
      -out "$dir/$name.crt" -days 2 -extfile "$dir/$name.ext" 2>/dev/null
}
