// tests/gateway_e2e/fixture.hpp — one loopback world for the gateway tests:
// a test CA and certificates made with the openssl CLI, the node TLS upstream
// (upstream.js), and `corral gateway` with a config, hosts file and root-only
// credential files written here. Everything listens on 127.0.0.1; nothing is
// ever dialled elsewhere (refusals happen before any connection attempt).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/sha256.hpp"
#include "tests/support/process.hpp"

namespace corral::test::gw {

using corral::sha256_hex;

struct World {
    std::string dir;            // temp dir with everything
    std::string test_ca;        // CA that signs the upstream's certificates
    std::string corral_ca;      // corral's CA (clients trust it)
    std::string corral_ca_public;  // a copy any uid can read (the temp dir is root's, 0700)
    std::string ledger;
    std::string gateway_stderr;
    std::string api_key;        // the real secrets (never to be seen by clients or logs)
    std::string oauth_token;
    std::map<std::string, int> ports;  // main, expired, selfsigned, wronghost, control
    int gateway_port = 0;
    std::unique_ptr<Background> upstream;
    std::unique_ptr<Background> gateway;
    std::string client_visible;  // every byte a client printed, for the final secret scan

    ~World();
};

// A free loopback port (a config must name its listener up front, e.g. so a
// grant can point back at the gateway itself).
int free_port();

// Builds the world on first use; later calls return the same one. Throws with
// a reason if a step fails.
World& world();

// A reason the tests cannot run on this machine ("" if they can).
std::string missing_prerequisite();

// curl through the gateway (--proxy, --cacert corral CA, --noproxy unset).
// Returns {exit, out}; `out` ends with "\nconnect=NNN status=NNN\n".
Result curl(const std::vector<std::string>& args, std::chrono::milliseconds timeout = std::chrono::seconds(30));
// The same curl run as `uid` (setpriv: real, effective and saved uid and gid,
// no supplementary groups); 0 = as the test (root).
Result curl_as(unsigned uid, const std::vector<std::string>& args,
               std::chrono::milliseconds timeout = std::chrono::seconds(30));
// The node client (client.js) with `spec` (proxy and ca filled in); its JSON answer.
nlohmann::json node_client(nlohmann::json spec, std::chrono::milliseconds timeout = std::chrono::seconds(30));
// The same through another gateway (its TCP port and the CA it signs with).
nlohmann::json node_client_via(int proxy_port, const std::string& ca, nlohmann::json spec,
                               std::chrono::milliseconds timeout = std::chrono::seconds(30));
// Raw bytes to the gateway's TCP port; everything it answers until it closes
// (or `timeout`). Plain TCP, no TLS.
std::string raw_proxy(const std::string& bytes, std::chrono::milliseconds timeout = std::chrono::seconds(15));
// The upstream's /stats (read directly over loopback HTTP, not through the gateway).
nlohmann::json upstream_stats();
// Every ledger line parsed.
std::vector<nlohmann::json> ledger_lines();
// True once a ledger line has host == `host` and reason == `reason` (waits up to 5 s:
// a line is written when the exchange ends).
bool ledger_has(const std::string& host, const std::string& reason);
// The ledger lines whose reason is `reason`, once there are `at_least` of them
// (or whatever there is after 5 s: the caller checks the count).
std::vector<nlohmann::json> ledger_lines_with_reason(const std::string& reason, std::size_t at_least);

// A `corral gateway` daemon of a test's own, with its own state dir (CA),
// ledger, Unix socket and stderr, listening on a free loopback TCP port
// whose clients are `identity`. `more_toml` follows [gateway] (grants,
// budget, prices); "" = an inject grant for upstream.test (no credential)
// on the world's upstream.
struct OwnDaemon {
    std::string dir, config, err, socket, ledger, ca, identity;
    int port = 0;
    std::unique_ptr<Background> proc;

    OwnDaemon(const std::string& name, const std::string& ledger_path, const std::string& grace,
              std::string identity = "faults/run-1", const std::string& more_toml = "");

    std::string url(const std::string& path) const;  // https://upstream.test:MAIN/path
    // curl through this daemon; `out` ends with "\nstatus=NNN\nconnect=NNN\n".
    Result curl(const std::string& path, std::chrono::milliseconds timeout = std::chrono::seconds(20)) const;
    Result curl_args(const std::vector<std::string>& args,
                     std::chrono::milliseconds timeout = std::chrono::seconds(20)) const;
    // The daemon's answer to CORRAL-COUNTS for `who` ("" = identity), over its Unix socket.
    nlohmann::json counts(const std::string& who = "") const;
    // Waits (bounded) until the daemon's stderr holds `needle`.
    bool stderr_says(const std::string& needle) const;
};

}  // namespace corral::test::gw
