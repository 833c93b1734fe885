// tests/agents_e2e/world.hpp — one loopback world for the real agent CLIs:
// a test CA and a certificate for api.anthropic.com, chatgpt.com and
// api.openai.com (openssl CLI), the node stand-in backends (standin.js), the
// real (fake-but-"real") secrets in root-only files, and organisation
// directories whose workers' grants send those names to the stand-in with connect_to.
// Nothing is resolved by DNS and nothing is dialled off loopback: the CLIs
// talk only to the proxy, the gateway dials only connect_to targets, and every
// other host is refused before any lookup.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/org_config.hpp"
#include "agents/agent_profile.hpp"
#include "tests/support/process.hpp"

namespace corral::test::agents {

// Two test organisations with the same three workers, one per agent kind,
// differing in the kind of each real credential (so both sentinel shapes of
// every CLI run):
//   primary    anthropic = API key (x-api-key), openai = ChatGPT token (chatgpt.com)
//   alternate  anthropic = OAuth token (Bearer), openai = API key (api.openai.com)
enum class Org { primary, alternate };
const char* org_name(Org org);  // "primary" | "alternate"

struct WorkerSpec {
    std::string name;               // "claude" | "codex" | "pi" (also the worker directory)
    config::AgentKind kind;
};
const std::vector<WorkerSpec>& workers();
// How the worker's agent authenticates in `org`, and where its inference goes.
::corral::agents::CredentialMode credential_mode(config::AgentKind kind, Org org);
std::string model_host(config::AgentKind kind, Org org);

struct World {
    std::string dir;                // temp dir with everything (0755: the agent UID traverses it)
    std::string org;                // the primary organisation directory (org.toml, workers/*)
    std::string org_alt;            // the alternate one
    std::string test_ca;            // signs the stand-in's certificate (the gateway's upstream trust store)
    std::string state_dir;          // the gateway's state (corral's CA in state_dir/ca/ca.crt)
    std::string anthropic_key;      // the real secrets: only the gateway may read them
    std::string anthropic_oauth;
    std::string openai_token;       // ChatGPT sign-in access token
    std::string openai_key;
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
// with `lo` up, a default route into a counting veth (off_host_packets), and a mount namespace whose /etc/resolv.conf names
// 127.0.0.1, where the stand-in's DNS tripwire listens. Everything the test
// starts (stand-in, gateway, CLIs, corral run) inherits both: no packet can
// leave the host, and any name lookup is recorded. "" on success, else why not.
std::string isolate_network();

// Packets anything in the test's network namespace sent towards a
// non-loopback address (ARP included). 0 in a correct run.
std::uint64_t off_host_packets();

// Everything the stand-in saw so far (GET /stats on its control port).
nlohmann::json standin_seen();

// Every line of a ledger file, parsed.
std::vector<nlohmann::json> ledger_lines(const std::string& path);
// Whether a line of the ledger at `path` satisfies `wanted`, waiting up to
// 5 s for it: a line reaches the ledger a moment after its exchange ends.
bool ledger_has_line(const std::string& path, const std::function<bool(const nlohmann::json&)>& wanted);

// The org.toml gateway sections ([gateway] with `gateway_table` as its body,
// the credentials) of `org`.
std::string gateway_sections(const World& w, Org org, const std::string& gateway_table);
// Writes organisation `org` to `dir`: org.toml ([engine], [sandbox],
// gateway_sections) and one worker per agent kind whose worker.toml grants
// its model host with the routes the agent profile implies, pointed at the
// stand-in with connect_to (replacing the implied grant for that host:port).
void write_org(const World& w, Org org, const std::string& dir, const std::string& gateway_table);
std::string org_dir(const World& w, Org org);
// The real secret the stand-in must receive from `kind`'s requests in `org`.
std::string real_secret(const World& w, config::AgentKind kind, Org org);

// A free loopback TCP port (for a gateway daemon's listen_tcp).
int free_port();


// The JSON objects among a CLI's output lines (other lines skipped).
std::vector<nlohmann::json> json_lines(const std::string& text);
// The CLI's own "I finished, and the answer is DONE" record in its JSON output.
bool finished_with_done(config::AgentKind kind, const std::string& out);

}  // namespace corral::test::agents
