// run/mcp_servers.hpp — a worker's stdio MCP servers, each in a box of its
// own, outside the agent's (issue 29; docs/tools.md "Stdio servers in a run").
//
// Each stdio server gets a sandbox like the agent's and separate from it:
// its own leased UID, cgroup (RUN_ID-mcp-N), PID, mount, network (only lo),
// IPC and UTS namespaces, the run's rootfs source and --ro-binds (none of
// which may overlap what the agent can write), no workspace, seccomp, no
// capability. The boxes
// are launched before the agent's (launch_sandbox needs a single-threaded
// process), each a session box whose one command, the server, starts on the
// gateway's first message to it (StdioLauncher::start), with its
// `secret_env` read host side and put into that command's environment only:
// the agent's box never holds it, and neither does this process's memory at
// any clone (the secrets are handed over after the agent's box exists).
// The server's stdin and stdout are one socket to the gateway; its stderr
// goes to RUN_DIR/mcp-NAME.stderr.log, scrubbed of every secret the run
// holds and cut at kServerLogLimit bytes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/mcp_stdio.hpp"
#include "mcp/servers.hpp"
#include "supervisor/sandbox.hpp"

namespace corral::run {

// What a server's stderr log keeps at most; the rest is counted, not kept.
inline constexpr std::uint64_t kServerLogLimit = 1u << 20;

// The box of a stdio server (the index-th of the run's): the
// agent's rootfs source, limits, seccomp and --ro-binds, none of its
// workspace, home, extra files, environment or read-write binds. Throws
// UsageError when a --ro-bind, a --rootfs DIR or the host's directories of
// --rootfs host overlap what the agent can write (the workspace, a --bind,
// its home), compared on disk (rootfs/disk_overlap.hpp), not as text.
supervisor::SandboxSpec server_box_spec(const supervisor::SandboxSpec& agent, std::size_t index,
                                        const mcp::StdioServer& server);

// The environment a server starts with: its `env`, then each `secret_env`
// variable with the secret of the credential it names. Throws
// std::runtime_error naming the variable and credential (never the secret)
// when that credential's secret is not among `secrets`.
std::vector<std::pair<std::string, std::string>> server_environment(const mcp::StdioServer& server,
                                                                    const std::map<std::string, std::string>& secrets);

class StdioServerBoxes final : public gateway::StdioLauncher {
public:
    // Launches one box per stdio server of `tools` (none: an empty set).
    // Single-threaded, before the agent's box. When one fails, the ones
    // already launched are torn down and the SandboxSetupError carries
    // their teardown with its own.
    static std::shared_ptr<StdioServerBoxes> launch(const supervisor::SandboxSpec& agent, const mcp::ToolsConfig& tools,
                                                    const supervisor::Tell& tell);
    ~StdioServerBoxes() override;

    bool empty() const { return boxes_.empty(); }
    // run.json's tools.stdio_boxes: [{"server", "run_id", "uid"}], in the servers' order.
    nlohmann::json record() const;

    // The run's secrets (credential name → secret), once the agent's box
    // exists: the servers' secret_env is read from them, and every one of
    // them is scrubbed from the servers' stderr logs. Before any start().
    void use_secrets(const std::map<std::string, std::string>& secrets);

    // gateway::StdioLauncher: the server's command in its box. Throws
    // std::runtime_error with a sentence naming what failed.
    gateway::StdioProcess start(const std::string& name, const mcp::StdioServer& server) override;

    // Every server stopped and every box torn down and verified, after the
    // gateway stopped: one report, each step named "mcp NAME: STEP".
    supervisor::TeardownReport tear_down();

    struct Box;   // one server's box, its command and its log (mcp_servers.cpp)

private:
    StdioServerBoxes() = default;
    Box* find(const std::string& name);

    std::vector<std::unique_ptr<Box>> boxes_;
    std::mutex mutex_;   // use_secrets / start / tear_down
    std::map<std::string, std::string> secrets_;
    bool torn_down_ = false;
};

// Appends `part`'s steps, problems and notes to `into`, each step and
// problem prefixed "mcp NAME: " when `name` is not empty.
void merge_teardown(supervisor::TeardownReport& into, const supervisor::TeardownReport& part, const std::string& name);

}  // namespace corral::run
