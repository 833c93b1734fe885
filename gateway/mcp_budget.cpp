#include "gateway/mcp_budget.hpp"

#include <algorithm>

namespace corral::gateway {

namespace {

std::string budget_calls(std::uint64_t n, const char* one) { return std::to_string(n) + " " + one + (n == 1 ? "" : "s"); }

}  // namespace

nlohmann::json tool_counts_json(const ToolCallCounts& c) {
    nlohmann::json refused = nlohmann::json::object();
    for (const auto& [reason, n] : c.refused) refused[reason] = n;
    nlohmann::json per_tool = nlohmann::json::object();
    for (const auto& [key, t] : c.per_tool) per_tool[key] = {{"calls", t.calls}, {"refused", t.refused}};
    return {{"calls", c.calls}, {"allowed", c.allowed}, {"refused", refused}, {"per_tool", per_tool}};
}

std::optional<mcp::Denial> McpCalls::reserve(const std::string& server, const std::vector<std::string>& tools) {
    if (tools.empty()) return std::nullopt;
    std::lock_guard lock(mutex_);
    const std::uint64_t n = tools.size();
    const std::string batch = n == 1 ? "" : "a batch of " + std::to_string(n) + " calls; ";
    if (budgets_.per_run && used_ + n > *budgets_.per_run) {
        const std::uint64_t left = *budgets_.per_run - std::min(used_, *budgets_.per_run);
        return mcp::Denial{mcp::Reason::budget_exhausted, "this run (" + budget_calls(*budgets_.per_run, "call") + ")",
                           batch + "[mcp.budget] tool_calls_per_run = " + std::to_string(*budgets_.per_run) + ", " +
                               std::to_string(left) + " left"};
    }
    std::map<std::string, std::uint64_t> want;
    for (const auto& t : tools) ++want[server + "/" + t];
    for (const auto& [key, k] : want) {
        auto cap = budgets_.per_tool.find(key);
        if (cap == budgets_.per_tool.end()) continue;
        const std::uint64_t used = used_tool_[key];
        if (used + k > cap->second)
            return mcp::Denial{mcp::Reason::budget_exhausted,
                               "tool " + key + " in this run (" + budget_calls(cap->second, "call") + ")",
                               batch + "[mcp.budget] per_tool.\"" + key + "\" = " + std::to_string(cap->second) + ", " +
                                   std::to_string(cap->second - std::min(used, cap->second)) + " left"};
    }
    used_ += n;
    counts_.calls += n;
    counts_.allowed += n;
    for (const auto& [key, k] : want) {
        used_tool_[key] += k;
        counts_.per_tool[key].calls += k;
    }
    return std::nullopt;
}

void McpCalls::refused(const std::string& server, const std::vector<std::string>& tools, std::string_view reason) {
    if (tools.empty()) return;
    std::lock_guard lock(mutex_);
    counts_.calls += tools.size();
    counts_.refused[std::string(reason)] += tools.size();
    for (const auto& t : tools) {
        auto& p = counts_.per_tool[server + "/" + t];
        ++p.calls, ++p.refused;
    }
}

bool McpCalls::first_quarantine(const std::string& server, const std::string& tool, const std::string& digest) {
    std::lock_guard lock(mutex_);
    return quarantines_.emplace(server, tool, digest).second;
}

ToolCallCounts McpCalls::counts() const {
    std::lock_guard lock(mutex_);
    return counts_;
}

}  // namespace corral::gateway
