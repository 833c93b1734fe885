#include "gateway/daemon_protocol.hpp"

#include <cctype>
#include <utility>

#include <nlohmann/json.hpp>

namespace corral::gateway {

namespace {
constexpr std::string_view kAnnouncement = "CORRAL-IDENTITY ";
constexpr std::string_view kCountsRequest = "CORRAL-COUNTS ";
constexpr std::string_view kMcpAnnouncement = "CORRAL-MCP ";
constexpr std::string_view kRoleField = " role=";
constexpr std::string_view kBudgetRequest = "CORRAL-BUDGET ";
constexpr std::string_view kBudgetReset = "CORRAL-BUDGET-RESET ";

// A worker name as identities spell their first part.
bool is_worker_name(std::string_view w) {
    if (w.empty() || w.size() > 64) return false;
    for (char c : w)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
    return std::isalnum(static_cast<unsigned char>(w.front()));
}
}  // namespace

std::string budget_request(const std::string& worker, bool reset) {
    return std::string(reset ? kBudgetReset : kBudgetRequest) + worker + "\n";
}

std::string identity_announcement(const Identity& id) {
    return std::string(kAnnouncement) + id.str() + (id.role.empty() ? "" : std::string(kRoleField) + id.role) + "\n";
}

std::string mcp_announcement(const Identity& id) {
    return std::string(kMcpAnnouncement) + id.str() + (id.role.empty() ? "" : std::string(kRoleField) + id.role) + "\n";
}

std::string counts_request(const Identity& id) { return std::string(kCountsRequest) + id.str() + "\n"; }

std::optional<DaemonFirstLine> parse_daemon_first_line(std::string_view line) {
    DaemonFirstLine first;
    for (auto [prefix, reset] : {std::pair{kBudgetRequest, false}, std::pair{kBudgetReset, true}}) {
        if (line.substr(0, prefix.size()) != prefix) continue;
        line.remove_prefix(prefix.size());
        if (!is_worker_name(line)) return std::nullopt;
        first.budget = true, first.budget_reset = reset, first.worker = std::string(line);
        return first;
    }
    if (line.substr(0, kAnnouncement.size()) == kAnnouncement) {
        line.remove_prefix(kAnnouncement.size());
    } else if (line.substr(0, kMcpAnnouncement.size()) == kMcpAnnouncement) {
        first.mcp = true;
        line.remove_prefix(kMcpAnnouncement.size());
    } else if (line.substr(0, kCountsRequest.size()) == kCountsRequest) {
        first.counts = true;
        line.remove_prefix(kCountsRequest.size());
    } else {
        return std::nullopt;
    }
    std::string_view role;
    if (!first.counts) {
        if (auto at = line.find(kRoleField); at != std::string_view::npos) {
            role = line.substr(at + kRoleField.size());
            line = line.substr(0, at);
            if (!is_identity_part(role)) return std::nullopt;
        }
    }
    auto id = parse_identity(line);
    if (!id) return std::nullopt;
    first.id = std::move(*id);
    first.id.role = std::string(role);
    return first;
}

std::string counts_answer(const DaemonCounts& c) {
    nlohmann::json j{{"requests", c.requests},
                     {"refusals", c.refusals},
                     {"secrets_reflected", c.secrets_reflected},
                     {"instance", c.instance},
                     {"ledger", c.ledger_failure.empty() ? std::string("ok") : c.ledger_failure}};
    if (c.model) j["model"] = metering::totals_json(*c.model);
    j["refused"] = nlohmann::json::array();
    for (const auto& n : c.refused)
        j["refused"].push_back({{"host", n.host}, {"port", n.port}, {"method", n.method}, {"mode", n.mode},
                                {"reason", n.reason}, {"status", n.status}, {"count", n.count}});
    if (c.tools) j["tools"] = tool_counts_json(*c.tools);
    if (c.approvals) j["approvals"] = approval::approval_counts_json(*c.approvals);
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Checked<DaemonCounts> parse_counts_answer(std::string_view answer) {
    try {
        auto j = nlohmann::json::parse(answer.substr(0, answer.find('\n')));
        const auto& requests = j.at("requests");
        const auto& refusals = j.at("refusals");
        // Fields an older daemon does not send.
        const nlohmann::json reflected = j.value("secrets_reflected", nlohmann::json(0u));
        const nlohmann::json instance = j.value("instance", nlohmann::json(""));
        const nlohmann::json ledger = j.value("ledger", nlohmann::json("ok"));
        // (A float beyond 2^64 is also undefined behaviour to convert.)
        if (!requests.is_number_unsigned() || !refusals.is_number_unsigned() || !reflected.is_number_unsigned())
            return Failed{"unexpected answer: requests, refusals and secrets_reflected must be unsigned integers"};
        if (!instance.is_string() || !ledger.is_string() || ledger.get_ref<const std::string&>().empty())
            return Failed{"unexpected answer: instance and ledger must be strings, ledger \"ok\" or a failure"};
        DaemonCounts c{requests.get<std::uint64_t>(), refusals.get<std::uint64_t>(), reflected.get<std::uint64_t>(),
                       instance.get<std::string>(), ledger.get<std::string>()};
        if (c.ledger_failure == "ok") c.ledger_failure.clear();
        if (auto m = j.find("model"); m != j.end()) {
            auto model = metering::totals_from_json(*m);
            if (!model) return Failed{"unexpected answer: " + model.problem()};
            c.model = *model;
        }
        if (auto r = j.find("refused"); r != j.end()) {
            if (!r->is_array() || r->size() > kRefusalNoticesPerIdentity)
                return Failed{"unexpected answer: refused must be a list of at most " +
                              std::to_string(kRefusalNoticesPerIdentity) + " host:ports"};
            for (const auto& n : *r)
                c.refused.push_back(RefusalNotice{n.at("host").get<std::string>(), n.at("port").get<std::uint16_t>(),
                                                  n.at("method").get<std::string>(), n.at("mode").get<std::string>(),
                                                  n.at("reason").get<std::string>(), n.at("status").get<int>(),
                                                  n.at("count").get<std::uint64_t>()});
        }
        if (auto t = j.find("tools"); t != j.end() && !t->is_null()) {
            auto tools = tool_counts_from_json(*t);
            if (!tools) return Failed{"unexpected answer: " + tools.problem()};
            c.tools = *tools;
        }
        if (auto a = j.find("approvals"); a != j.end()) {
            auto approvals = approval::approval_counts_from_json(*a);
            if (!approvals) return Failed{"unexpected answer: " + approvals.problem()};
            c.approvals = *approvals;
        }
        return c;
    } catch (const std::exception& e) {
        return Failed{std::string("unexpected answer: ") + e.what()};
    }
}

}  // namespace corral::gateway
