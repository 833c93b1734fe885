// tools/run_agent.hpp — the network and agent half of `corral run`: the box's
// egress (bridge + embedded gateway, or a `corral gateway` daemon), its trust
// store and proxy environment, and the worker's agent CLI.
//
// cmd_run.cpp drives the sandbox lifecycle and calls in at four places:
//
//   RunEgress egress(eg, opts, run_id, run_dir, state_dir);
//   egress.prepare(spec);        // before launch_sandbox: config, credential check,
//                                // gateway, CA into the trust store, env, agent argv+home
//   Sandbox box = launch_sandbox(spec);
//   egress.start(box);           // hook point: listeners in the box's netns, gateway threads
//   supervise(box, {1, 2, ...});   // an agent run's stdout log is stdout.jsonl
//   egress.stop();               // after the command: drain, stop threads, counts
//   record.extra = egress.record_fields();
//
// Threads are started only in start(), after the clone (DESIGN: never clone
// from a multi-threaded process).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/fd.hpp"
#include "config/org_config.hpp"
#include "supervisor/agent_profile.hpp"
#include "supervisor/run_options.hpp"
#include "supervisor/sandbox.hpp"

namespace boost::asio { class io_context; }

namespace corral::gateway { class Gateway; }
namespace corral::shim {
class Bridge;
struct DaemonCounts;
}

namespace corral::cli {

// The options of `corral run` that concern the network and the agent.
struct EgressOptions {
    std::optional<std::string> config_dir;          // --config DIR (organisation directory)
    std::optional<std::string> worker;              // --worker NAME
    std::optional<std::string> gateway;             // --gateway unix:PATH
    std::optional<std::string> prompt;              // --prompt TEXT
    std::optional<std::string> prompt_file;         // --prompt-file F
    std::optional<std::string> system_prompt_file;  // --system-prompt-file F
    bool rootfs_given = false;                      // --rootfs on the command line (beats the worker's)
    bool agent() const { return prompt.has_value() || prompt_file.has_value(); }
};

// Takes the options above out of argv and parses the rest with
// parse_run_options. An agent run (--prompt/--prompt-file) has no CMD; a
// CMD run takes no prompt. Throws UsageError naming the option.
supervisor::RunOptions parse_run_command(int argc, char** argv, EgressOptions& eg);

// The help text of the options above (appended to `corral run --help`).
const char* egress_help_text();

// The agent's program is not in the rootfs the box would see (corral run
// exits 127, as for a command not found, but before anything is built).
struct AgentProgramNotFound : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The agent's prompt cannot be handed to its CLI as it is (empty, a NUL
// byte, longer than one command-line argument may be): bad input, corral run
// exits 2 before anything is built.
struct PromptError : UsageError {
    using UsageError::UsageError;
};

class RunEgress {
public:
    RunEgress(EgressOptions eg, const supervisor::RunOptions& opts, std::string run_id, std::string run_dir,
              std::string state_dir);
    ~RunEgress();
    RunEgress(const RunEgress&) = delete;
    RunEgress& operator=(const RunEgress&) = delete;

    // Single-threaded, before launch_sandbox. Reads the organisation, checks
    // the agent's credential (fails before anything starts), loads the
    // secrets, builds the embedded gateway (or reads the daemon's CA), and
    // fills spec: env, extra_files (CA), argv/home/limits for an agent run.
    // Throws UsageError / ConfigError / SysError.
    void prepare(supervisor::SandboxSpec& spec);

    // At the hook point: hands the agent its home, opens the bridge's
    // listeners in the box's netns and starts the event-loop threads.
    void start(const supervisor::Sandbox& box);

    // After supervise(): closes the listeners, lets open exchanges finish
    // their ledger lines (bounded), stops the threads. Idempotent.
    void stop();

    // Fields for run.json: worker, identity, agent, cli_version (null when the
    // installed CLI's version could not be read: see messages()), gateway {mode,
    // ledger, requests, refusals}.
    nlohmann::json record_fields() const;

    std::string identity() const { return worker_ + "/" + run_id_; }

    // What prepare() has to tell the operator (e.g. why cli_version is null);
    // cmd_run prints each and puts it into run.json's messages.
    const std::vector<std::string>& messages() const { return messages_; }

    // What stop() has to tell (e.g. the daemon's counts could not be had),
    // handed over once: cmd_run prints each and puts it into run.json's messages.
    std::vector<std::string> take_stop_messages() { return std::exchange(stop_messages_, {}); }

private:
    void prepare_agent(supervisor::SandboxSpec& spec);
    void prepare_trust(supervisor::SandboxSpec& spec);
    void apply_worker_rootfs(supervisor::SandboxSpec& spec) const;
    void apply_worker(supervisor::SandboxSpec& spec, const std::vector<std::pair<std::string, std::string>>& agent_env);

    EgressOptions eg_;
    supervisor::RunOptions opts_;
    std::string run_id_, run_dir_, state_dir_;
    std::string worker_ = "adhoc";
    std::optional<config::OrgConfig> org_;
    std::optional<config::ResolvedWorker> resolved_;
    std::optional<supervisor::AgentProfile> profile_;
    std::string daemon_socket_;
    std::string ca_pem_;
    bool intercepts_ = true;  // a daemon's grants are unknown here: assume it intercepts
    std::optional<std::string> cli_version_;  // the installed CLI's; unset = unknown (run.json: null)
    std::vector<std::string> messages_;
    std::vector<std::string> stop_messages_;
    config::GatewayConfig credential_specs_;  // where the embedded gateway's secrets are read from in start()
    // The gateway outlives the loop (the coroutine frames the loop destroys
    // give buffers back to it); its pooled upstream sockets, which need the
    // loop's reactor, are closed in stop() before the loop goes.
    std::unique_ptr<gateway::Gateway> gateway_;
    std::unique_ptr<boost::asio::io_context> ioc_;
    std::unique_ptr<shim::Bridge> bridge_;
    std::vector<std::thread> threads_;
    std::uint64_t requests_ = 0, refusals_ = 0;
    std::unique_ptr<shim::DaemonCounts> daemon_counts_;  // --gateway: asked of the daemon at stop()
    bool started_ = false;
    std::shared_ptr<std::atomic<int>> active_relays_ = std::make_shared<std::atomic<int>>(0);  // --gateway
    bool stopped_ = false;
};

}  // namespace corral::cli
