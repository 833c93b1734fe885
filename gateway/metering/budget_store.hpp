// gateway/metering/budget_store.hpp — a worker's budget across its runs, kept
// on disk so that a restarted daemon goes on from what was spent (never from
// zero): STATE_DIR/budgets/WORKER.json, one file per worker,
//   {"worker":"w","spent":{"requests":N,"input_tokens":N,"output_tokens":N,
//    "usd_micros":N},"exhausted":"","updated":"2026-12-01T20:00:00Z"}
// written whole to a temporary file, fsynced and renamed over the old one
// after every settlement (a crash leaves the old state or the new one, never
// half of either). A file that cannot be read back is an error, never an
// empty budget (fail closed: the worker's requests are then refused).
//
// A worker's MCP tool calls across its runs ([mcp.budget]
// tool_calls_per_worker, gateway/mcp_budget.hpp) are kept the same way, in a
// directory of their own so no worker's name can collide with another's file:
// STATE_DIR/budgets/tool_calls/WORKER.json,
//   {"worker":"w","tool_calls":N,"updated":"2026-12-01T20:00:00Z"}
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "gateway/metering/budget.hpp"

namespace corral::gateway::metering {

struct StoredBudget {
    Amount spent;
    std::string exhausted;
};

class BudgetStore {
public:
    // `dir`: STATE_DIR/budgets, made (0700) on first save.
    explicit BudgetStore(std::string dir) : dir_(std::move(dir)) {}

    // What `worker` had spent; an empty state when it has no file yet.
    // Throws UsageError naming the file for one that exists and cannot be
    // read or parsed.
    StoredBudget load(const std::string& worker) const;
    // Replaces the worker's file with `state`; throws SysError naming the
    // failed call.
    void save(const std::string& worker, const AccountState& state);
    std::string path_of(const std::string& worker) const;

    // The worker's tool calls across its runs: 0 without a file yet; throws
    // UsageError naming the file for one that cannot be read or parsed.
    std::uint64_t load_tool_calls(const std::string& worker) const;
    // Replaces the worker's tool-call file; throws SysError naming the failed call.
    void save_tool_calls(const std::string& worker, std::uint64_t used);
    std::string tool_calls_path_of(const std::string& worker) const;

private:
    std::string dir_;
    std::mutex mu_;  // one writer at a time, so a newer state is never replaced by an older one
};

// The JSON the store writes and `corral budget` shows.
std::string stored_budget_json(const std::string& worker, const AccountState& state, const Budget& limits);

}  // namespace corral::gateway::metering
