// run/worker_tools.hpp — a worker's governed tools (gateway::McpTools) with
// what outlives one run: its pins store (run/mcp_pin_store.hpp) and, for the
// daemon, its tool_calls_per_worker budget (gateway::WorkerCalls, kept in
// the daemon's budget store). The embedded gateway builds one for its run
// (run/egress.cpp); `corral gateway --org` one per worker with MCP servers,
// shared by all that worker's runs (daemon_worker_tools).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "config/gateway_config.hpp"
#include "gateway/mcp_endpoint.hpp"

namespace corral::run {

// Opens the worker's pins store under `state_dir` (made where missing; root's
// only: `option` names the setting in messages) and trusts what earlier runs
// trusted in `tools`, below the configuration's pins. Returns the store's
// directory. Throws UsageError for a store that cannot be read (fail closed:
// trusting every tool afresh would undo the quarantines it holds).
std::string load_stored_pins(gateway::McpTools& tools, const std::string& option, const std::string& state_dir,
                             const std::string& worker);

// What `tools` saw (first sights, quarantines), merged into the store in
// `pin_dir` as seen by run `run_id` (run/mcp_pin_store.hpp merge_sights).
// Throws what PinStore::update throws.
void save_sights(gateway::McpTools& tools, const std::string& pin_dir, const std::string& run_id);

// The daemon's: for each worker of cfg.worker_tools its McpTools, its pins
// loaded from [gateway] state_dir and kept up to date as its runs see tools
// (McpTools::on_sight; a store that cannot be written is logged), read again
// when a run asks for its counts and the file changed since (McpTools::
// on_refresh: `corral mcp trust` while the daemon runs), and its
// tool_calls_per_worker budget when it has one, kept in
// STATE_DIR/budgets/tool_calls/WORKER.json. Throws UsageError naming the
// worker for a pins store that cannot be read (the daemon does not start).
std::map<std::string, std::shared_ptr<gateway::McpTools>> daemon_worker_tools(const config::GatewayConfig& cfg);

}  // namespace corral::run
