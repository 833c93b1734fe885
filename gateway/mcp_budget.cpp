#include "gateway/mcp_budget.hpp"

#include <algorithm>

#include "gateway/metering/budget_store.hpp"

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

Checked<ToolCallCounts> tool_counts_from_json(const nlohmann::json& j) {
    auto count = [](const nlohmann::json& o, const char* k) -> std::optional<std::uint64_t> {
        if (!o.is_object() || !o.contains(k) || !o[k].is_number_unsigned()) return std::nullopt;
        return o[k].get<std::uint64_t>();
    };
    const Failed bad{"tools: {calls, allowed, refused: {reason: n}, per_tool: {\"SERVER/TOOL\": {calls, refused}}}, "
                     "every count an unsigned integer"};
    ToolCallCounts c;
    auto calls = count(j, "calls"), allowed = count(j, "allowed");
    if (!calls || !allowed || !j.contains("refused") || !j["refused"].is_object() || !j.contains("per_tool") ||
        !j["per_tool"].is_object())
        return bad;
    c.calls = *calls, c.allowed = *allowed;
    for (const auto& [reason, n] : j["refused"].items()) {
        if (!n.is_number_unsigned()) return bad;
        c.refused[reason] = n.get<std::uint64_t>();
    }
    for (const auto& [key, t] : j["per_tool"].items()) {
        auto tc = count(t, "calls"), tr = count(t, "refused");
        if (!tc || !tr) return bad;
        c.per_tool[key] = {*tc, *tr};
    }
    return c;
}

WorkerCalls::WorkerCalls(std::string worker, std::uint64_t limit, std::shared_ptr<metering::BudgetStore> store)
    : worker_(std::move(worker)), limit_(limit), store_(std::move(store)) {
    try {
        used_ = store_->load_tool_calls(worker_);
    } catch (const std::exception& e) {
        // Never a fresh budget in place of one that cannot be read.
        broken_ = e.what();
    }
}

std::optional<mcp::Denial> WorkerCalls::reserve(std::uint64_t n, const std::string& batch) {
    std::lock_guard lock(mutex_);
    const std::string key = "[mcp.budget] tool_calls_per_worker = " + std::to_string(limit_);
    if (!broken_.empty())
        return mcp::Denial{mcp::Reason::budget_exhausted, "worker " + worker_ + " across its runs",
                           key + "; its count cannot be kept: " + broken_};
    if (used_ + n > limit_)
        return mcp::Denial{mcp::Reason::budget_exhausted,
                           "worker " + worker_ + " across its runs (" + budget_calls(limit_, "call") + ")",
                           batch + key + ", " + std::to_string(limit_ - std::min(used_, limit_)) + " left"};
    try {
        store_->save_tool_calls(worker_, used_ + n);
    } catch (const std::exception& e) {
        // A call not kept on disk could be made again after a restart: stop (fail closed).
        broken_ = std::string("the count could not be written: ") + e.what();
        return mcp::Denial{mcp::Reason::budget_exhausted, "worker " + worker_ + " across its runs",
                           key + "; its count cannot be kept: " + broken_};
    }
    used_ += n;
    return std::nullopt;
}

std::uint64_t WorkerCalls::used() const {
    std::lock_guard lock(mutex_);
    return used_;
}

void WorkerCalls::reset() {
    std::lock_guard lock(mutex_);
    try {
        store_->save_tool_calls(worker_, 0);
        used_ = 0;
        broken_.clear();
    } catch (const std::exception& e) {
        broken_ = std::string("the count could not be written: ") + e.what();
    }
}

nlohmann::json WorkerCalls::state_json() const {
    std::lock_guard lock(mutex_);
    nlohmann::json j{{"limit", limit_},
                     {"used", used_},
                     {"remaining", limit_ - std::min(used_, limit_)},
                     {"file", store_->tool_calls_path_of(worker_)}};
    if (!broken_.empty()) j["broken"] = broken_;
    return j;
}

std::string WorkerCalls::broken() const {
    std::lock_guard lock(mutex_);
    return broken_;
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
    // Last: only a call every budget of the run allows is taken from the worker's.
    if (worker_)
        if (auto d = worker_->reserve(n, batch)) return d;
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
