// gateway/mcp_budget.hpp — a worker's tool calls counted and capped for one
// run, shared by all the MCP endpoint's connections of the run (thread-safe):
// [mcp.budget] tool_calls_per_run and per_tool."SERVER/TOOL" enforced before
// a tools/call is forwarded, and the counts run.json's `tools` holds.
// docs/tools.md "Budgets" and "Counts".
//
// A call counts against a budget when it is forwarded (reserve() said yes),
// whether or not the server then answered; a refused call (by policy, pin or
// budget) does not. A batch's calls are reserved all together or not at all.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

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

class McpCalls {
public:
    explicit McpCalls(mcp::CallBudgets budgets) : budgets_(std::move(budgets)) {}

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
    mutable std::mutex mutex_;
    ToolCallCounts counts_;
    std::uint64_t used_ = 0;                          // reserved in this run
    std::map<std::string, std::uint64_t> used_tool_;  // "SERVER/TOOL" -> reserved in this run
    std::set<std::tuple<std::string, std::string, std::string>> quarantines_;
};

}  // namespace corral::gateway
