// run/prepare.hpp — the host-facing steps around resolve_run: what is read
// from the host before the run is resolved, what is checked after it, and
// the layers' share of run.json.
#pragma once

#include <nlohmann/json.hpp>

#include "run/agent_run.hpp"
#include "run/egress.hpp"
#include "run/resolve.hpp"

namespace corral::run {

// Checks --rootfs names a directory that is a root file system (not a file,
// an image layout, a root the agent cannot enter or a tree under /home), the
// same way with or without --config, before the CA bundles or the agent's CLI
// are looked up in it; reads image:NAME from the store; loads the
// organisation (its warnings are logged), resolves the worker and reads the
// status of the credential its agent needs. Throws UsageError / ConfigError.
RunInputs read_run_inputs(const RunRequest& request, std::string run_id, std::string run_dir, std::string state_dir);

// Before anything starts: the gateway's CA directory is a root-only tree, an
// agent run's credential is there (a run that cannot authenticate is
// refused here), and the worker's MCP servers can be served
// (mcp_not_served). Throws UsageError.
void check_run_can_start(const RunRequest& request, const RunInputs& inputs, const RunPlan& plan);

// Why a run of `worker` with `tools` could not serve its MCP servers, one
// sentence each, none when it can: relayed to a `corral gateway` daemon
// (`daemon`), each stdio server (only a run's embedded gateway starts them,
// each in a box of its own), and, with the embedded gateway, a
// tool_calls_per_worker budget (only the daemon keeps it).
// Fail closed: check_run_can_start refuses the run with the first; `corral
// validate` warns with each, for a run with and without the daemon.
std::vector<std::string> mcp_not_served(const std::string& worker, const mcp::ToolsConfig& tools, bool daemon);

// Why the embedded gateway refuses [mcp.budget] tool_calls_per_worker (one
// sentence; EmbeddedEgress::prepare and mcp_not_served say it).
std::string tool_calls_per_worker_refusal(const std::string& worker);

// Why the embedded gateway refuses a worker's [budget.worker] (one sentence;
// EmbeddedEgress::prepare refuses the run with it, `corral validate` warns
// with it).
std::string worker_budget_refusal(const std::string& worker);

// What exists of a run, for its record: a run refused early has no inputs,
// plan, egress or agent yet.
struct RunSoFar {
    const RunInputs* inputs = nullptr;
    const RunPlan* plan = nullptr;
    const Egress* egress = nullptr;
    const AgentRun* agent = nullptr;
};

// run.json's fields of the layers above the sandbox: worker, identity,
// gateway {mode, ledger, requests, refusals, secrets_reflected}, agent,
// cli_version, and image {name, layers, layers_sha256, source, imported_at}
// for --rootfs image:NAME. The worker, identity and agent are the plan's once
// it exists (a session's agent included); before, what the request asks for.
nlohmann::json run_record_fields(const RunRequest& request, const std::string& run_id, const RunSoFar& run);

// The one line every run ends with on stderr (unless --quiet):
//   "RUN-ID: exited 0 after 1.2s; 3 requests, 1 refused; record DIR/run.json"
// naming how it ended in the words of its outcome (docs/run-record.md).
std::string run_summary_line(const supervisor::RunRecord& record, const std::string& run_dir);

}  // namespace corral::run
