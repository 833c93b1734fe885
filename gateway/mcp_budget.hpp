// gateway/mcp_budget.hpp — a worker's tool calls counted and capped: for one
// run (McpCalls, shared by all the MCP endpoint's connections of the run),
// [mcp.budget] tool_calls_per_run and per_tool."SERVER/TOOL", and the counts
// run.json's `tools` holds; across the worker's runs (WorkerCalls, kept by
// the gateway daemon on disk), tool_calls_per_worker. Enforced before a
// tools/call is forwarded; thread-safe. docs/tools.md "Budgets" and "Counts".
//
// A call counts against a budget when it is forwarded (reserve() said yes),
// whether or not the server then answered; a refused call (by policy, pin or
// budget) does not. A batch's calls are reserved all together or not at all,
// on every budget (the run's, its tools', the worker's) or none.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/checked.hpp"
#include "mcp/denial.hpp"
#include "mcp/servers.hpp"

namespace corral::gateway {

// The counts of one run's tools/call messages.
struct ToolCallCounts {
    struct PerTool {
        std::uint64_t calls = 0;    // tools/call messages naming it
        std::uint64_t refused = 0;  // of those, refused by corral
    };
    std::uint64_t calls = 0;                           // every tools/call message the box sent
    std::uint64_t allowed = 0;                         // forwarded (reserved against the budgets)
    std::map<std::string, std::uint64_t> refused;      // reason code -> calls refused for it
    std::map<std::string, PerTool> per_tool;           // "SERVER/TOOL" -> its counts
};

// run.json's `tools`: {calls, allowed, refused: {reason: n}, per_tool:
// {"SERVER/TOOL": {calls, refused}}}.
nlohmann::json tool_counts_json(const ToolCallCounts& c);
// tool_counts_json's object read back (a daemon's counts answer): every count
// an unsigned integer, else what is wrong.
Checked<ToolCallCounts> tool_counts_from_json(const nlohmann::json& j);

namespace metering { class BudgetStore; }

// One worker's tool calls across all its runs ([mcp.budget]
// tool_calls_per_worker), kept in the daemon's budget store
// (gateway/metering/budget_store.hpp) after every reservation, so a restarted
// daemon goes on from what was used. A store that cannot be read or written
// exhausts the budget (fail closed: the worker's calls are refused, said why).
class WorkerCalls {
public:
    // Reads what `worker` used from `store` (none yet: 0).
    WorkerCalls(std::string worker, std::uint64_t limit, std::shared_ptr<metering::BudgetStore> store);
    // Reserves `n` calls, and keeps the new count on disk; nullopt when
    // reserved, else the budget_exhausted denial (`batch`: the words for a
    // batch, "" for one call), nothing reserved.
    std::optional<mcp::Denial> reserve(std::uint64_t n, const std::string& batch);
    std::uint64_t used() const;
    std::uint64_t limit() const { return limit_; }
    // Why the budget is exhausted for good ("" while it is not): the store failed.
    std::string broken() const;
    // The operator's reset (`corral budget reset`): nothing used, kept on
    // disk at once (a store that still cannot be written stays broken).
    void reset();
    // What `corral budget` shows: {"limit","used","remaining","file"[,"broken"]}.
    nlohmann::json state_json() const;

private:
    std::string worker_;
    std::uint64_t limit_;
    std::shared_ptr<metering::BudgetStore> store_;
    mutable std::mutex mutex_;
    std::uint64_t used_ = 0;
    std::string broken_;
};

class McpCalls {
public:
    // `worker`: the worker's budget across runs, shared by its runs' McpCalls (null: none).
    explicit McpCalls(mcp::CallBudgets budgets, std::shared_ptr<WorkerCalls> worker = nullptr)
        : budgets_(std::move(budgets)), worker_(std::move(worker)) {}

    // Reserves one call of `server` for each name in `tools` (one request's
    // tools/call messages), all or none. nullopt: reserved and counted as
    // allowed; else the budget_exhausted denial, nothing reserved.
    std::optional<mcp::Denial> reserve(const std::string& server, const std::vector<std::string>& tools);

    // Counts tools/call messages refused for `reason` (a denial code).
    void refused(const std::string& server, const std::vector<std::string>& tools, std::string_view reason);

    // True the first time a (server, tool, digest) quarantine is reported:
    // every later tools/list shows the same changed tool, recorded once.
    bool first_quarantine(const std::string& server, const std::string& tool, const std::string& digest);

    ToolCallCounts counts() const;

private:
    mcp::CallBudgets budgets_;
    std::shared_ptr<WorkerCalls> worker_;
    mutable std::mutex mutex_;
    ToolCallCounts counts_;
    std::uint64_t used_ = 0;                          // reserved in this run
    std::map<std::string, std::uint64_t> used_tool_;  // "SERVER/TOOL" -> reserved in this run
    std::set<std::tuple<std::string, std::string, std::string>> quarantines_;
};

}  // namespace corral::gateway
