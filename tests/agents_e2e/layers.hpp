// tests/agents_e2e/layers.hpp — the layers the agent e2e tests run each CLI
// through (test_agents_e2e.cpp's header says what each asserts): a
// `corral gateway --org` daemon with the CLI on the host, `corral run` with
// the embedded gateway or a daemon, a spent budget, and a session.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/agent_profile.hpp"
#include "tests/agents_e2e/checks.hpp"
#include "tests/agents_e2e/world.hpp"

namespace agents_e2e {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace corral;
using namespace corral::test::agents;
using corral::test::read_file;
using corral::test::write_file;
using ::corral::agents::AgentKind;

inline constexpr uid_t kNobody = 65534;
inline const char* kPrompt = "Reply with exactly DONE";

// A `corral gateway --org ORG` daemon on a Unix socket, ORG a copy of the
// world's organisation `org` whose [gateway] names this daemon's socket and
// ledger (the grants are what the daemon derives for each worker: nothing
// here names an identity). With an `identity`, it is also reachable on
// 127.0.0.1:`port` through tcp_relay.js, run as root, which announces that
// identity for every connection: the CLI on the host runs as an unprivileged
// uid, and the daemon's own listen_tcp serves root's sockets only. Without one
// (""), it is for `corral run --config ORG --gateway unix:PATH`, whose clients
// announce their own.
struct GatewayDaemon {
    int port = 0;
    std::string org;     // the organisation directory it serves (and runs use)
    std::string socket;
    std::string ledger;
    std::string ca;  // corral's CA, world-readable copy for the unprivileged CLI
    std::string stderr_path;
    std::unique_ptr<test::Background> proc;
    std::unique_ptr<test::Background> relay;

    GatewayDaemon(const World& w, Org org_kind, const std::string& name, const std::string& identity) {
        ledger = w.dir + "/ledger-gw-" + name + ".jsonl";
        stderr_path = w.dir + "/gateway-" + name + ".stderr";
        org = w.dir + "/org-gw-" + name;
        socket = w.dir + "/gateway-" + name + ".sock";
        std::string want = "listening unix:" + socket;
        write_org(w, org_kind, org,
                  "listen_unix = \"" + socket + "\"\nledger = \"" + ledger + "\"\nstate_dir = \"" + w.state_dir + "\"\n");
        proc = std::make_unique<test::Background>(std::vector<std::string>{
            "sh", "-c", "exec \"$0\" gateway --org \"$1\" 2>\"$2\"", test::corral_bin(), org, stderr_path});
        if (!proc->wait_for_stdout(want, std::chrono::seconds(20)))
            throw std::runtime_error("corral gateway did not print \"" + want + "\"; stderr: " + read_file(stderr_path));
        if (!identity.empty()) {
            relay = std::make_unique<test::Background>(std::vector<std::string>{
                "node", test::source_root() + "/tests/agents_e2e/tcp_relay.js", socket, identity});
            if (!relay->wait_for_stdout("\n", std::chrono::seconds(20)))
                throw std::runtime_error("tests/agents_e2e/tcp_relay.js did not start: " + relay->drain_stdout());
            auto line = relay->drain_stdout();
            auto at = line.find("listening ");
            if (at == std::string::npos) throw std::runtime_error("tcp_relay.js printed: " + line);
            port = std::stoi(line.substr(at + 10));
        }
        ca = w.dir + "/corral-ca.crt";
        fs::copy_file(w.state_dir + "/ca/ca.crt", ca, fs::copy_options::overwrite_existing);
        ::chmod(ca.c_str(), 0644);
    }
};

test::Result run_cli_on_host(const World& w, const WorkerSpec& spec, Org org, const GatewayDaemon& gw);
void check_refresh_refused(const GatewayDaemon& gw);
void check_other_workers_hosts_refused(const GatewayDaemon& gw, const WorkerSpec& spec, Org org);
void gateway_layer(const WorkerSpec& spec, Org org);
// capture_only: `--capture-only`, the box without proxy variables; every
// ledger line of the run must then be a captured connection's.
void run_layer(const WorkerSpec& spec, Org org, bool via_daemon = false, const std::string& rootfs = "host",
               bool capture_only = false);
void budget_spent_layer(const WorkerSpec& spec);
void session_layer(const WorkerSpec& spec, bool via_daemon);
const WorkerSpec& spec_named(const std::string& name);

}  // namespace agents_e2e
