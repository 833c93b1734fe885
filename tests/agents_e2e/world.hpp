// tests/agents_e2e/world.hpp — one loopback world for the real agent CLIs:
// a test CA and a certificate for api.anthropic.com, chatgpt.com and
// api.openai.com (openssl CLI), the node stand-in backends (standin.js), the
// real (fake-but-"real") secrets in root-only files, and an organisation
// directory whose grants send those names to the stand-in with connect_to.
// Nothing is resolved by DNS and nothing is dialled off loopback: the CLIs
// talk only to the proxy, the gateway dials only connect_to targets, and every
// other host is refused before any lookup.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/org_config.hpp"
#include "tests/support/process.hpp"

namespace corral::test::agents {

// The three workers of the test organisation, one per agent kind.
struct WorkerSpec {
    std::string name;               // "claude" | "codex" | "pi" (also the worker directory)
    config::AgentKind kind;
    std::string model_host;         // where its inference goes
};
const std::vector<WorkerSpec>& workers();

struct World {
    std::string dir;                // temp dir with everything (0755: the agent UID traverses it)
    std::string org;                // the organisation directory (org.toml, workers/*)
    std::string test_ca;            // signs the stand-in's certificate (the gateway's upstream trust store)
    std::string state_dir;          // the gateway's state (corral's CA in state_dir/ca/ca.crt)
    std::string ledger;             // the ledger `corral run` writes (org.toml [gateway] ledger)
    std::string anthropic_key;      // the real secrets: only the gateway may read them
    std::string openai_token;
    std::string chatgpt_account;    // non-secret; the sentinel carries it, the stand-in lists it
    int standin_port = 0;
    int control_port = 0;
    std::unique_ptr<Background> standin;

    ~World();
};

// Builds the world on first use (later calls return it). Throws with a reason.
World& world();

// "" when the tests can run here, else why not (missing program, CLI, package).
std::string missing_prerequisite();

// Moves this (still single-threaded) process into a new network namespace
// with only `lo` up and a mount namespace whose /etc/resolv.conf names
// 127.0.0.1, where the stand-in's DNS tripwire listens. Everything the test
// starts (stand-in, gateway, CLIs, corral run) inherits both: no packet can
// leave the host, and any name lookup is recorded. "" on success, else why not.
std::string isolate_network();

// Everything the stand-in saw so far (GET /stats on its control port).
nlohmann::json standin_seen();

// Every line of a ledger file, parsed.
std::vector<nlohmann::json> ledger_lines(const std::string& path);

// The org.toml gateway sections (credentials + grants) with `gateway_table`
// as the [gateway] table body. The grants use the routes the agent profiles
// imply, pointed at the stand-in with connect_to.
std::string gateway_sections(const World& w, const std::string& gateway_table);

// A free loopback TCP port (for a gateway daemon's listen_tcp).
int free_port();

void write_file(const std::string& path, const std::string& text, unsigned mode = 0644);
std::string read_file(const std::string& path);

}  // namespace corral::test::agents
