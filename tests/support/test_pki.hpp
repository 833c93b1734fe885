// tests/support/test_pki.hpp — a throwaway PKI for the loopback upstreams of
// the end-to-end tests, made with the `openssl` command line in one directory.
// Every key is ECDSA P-256. Nothing here is trusted by anything but the test
// that made it (through a gateway's upstream_ca_file or a client's CA option).
#pragma once

#include <string>

namespace corral::test {

// <dir>/ca.key and <dir>/ca.crt: a self-signed CA (CN `common_name`, CA:TRUE,
// keyCertSign), valid for three days.
void make_test_ca(const std::string& dir, const std::string& common_name);

// <dir>/<name>.key and <dir>/<name>.crt: a serverAuth leaf for `san` (an
// OpenSSL subjectAltName value, e.g. "DNS:api.anthropic.com,IP:127.0.0.1"),
// signed by <dir>/ca.*, valid for two days.
void make_test_leaf(const std::string& dir, const std::string& name, const std::string& san);

}  // namespace corral::test
