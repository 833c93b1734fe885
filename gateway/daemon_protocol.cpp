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
constexpr std::string_view kGrantedRequest = "CORRAL-GRANTED ";
constexpr std::string_view kCapturedAnnouncement = "CORRAL-CAPTURED ";
constexpr std::string_view kDnsRefusal = "CORRAL-DNS ";

// One token of a CORRAL-DNS line: printable ASCII, no space, 1 to `max` bytes.
bool is_token(std::string_view t, std::size_t max) {
    if (t.empty() || t.size() > max) return false;
    for (char c : t)
        if (c <= ' ' || c > '~') return false;
    return true;
}

// "worker/run QTYPE NAME REASON" read into `first`; false for anything else.
bool parse_dns_refusal(std::string_view rest, DaemonFirstLine& first) {
    std::string_view parts[4];
    for (int i = 0; i < 4; ++i) {
        const auto space = i < 3 ? rest.find(' ') : std::string_view::npos;
        if (i < 3 && space == std::string_view::npos) return false;
        parts[i] = rest.substr(0, space);
        rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    }
    auto id = parse_identity(parts[0]);
    if (!id || !is_token(parts[1], 16) || !is_token(parts[2], 256) || !is_token(parts[3], 64)) return false;
    for (char c : parts[3])
        if (!(std::islower(static_cast<unsigned char>(c)) || c == '_')) return false;
    first.dns = true;
    first.id = std::move(*id);
    first.qtype = std::string(parts[1]);
    first.name = std::string(parts[2]);
    first.reason = std::string(parts[3]);
    return true;
}

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

std::string granted_request(const Identity& id, const names::HostName& host) {
    return std::string(kGrantedRequest) + id.str() + " " + host.text() + "\n";
}

std::string captured_announcement(const Identity& id, const names::Authority& target) {
    // An IPv6 literal in brackets, as split_authority reads it back.
    const std::string& h = target.host.text();
    const std::string host = h.find(':') == std::string::npos ? h : "[" + h + "]";
    return std::string(kCapturedAnnouncement) + id.str() + " " + host + ":" + std::to_string(target.port) +
           (id.role.empty() ? "" : std::string(kRoleField) + id.role) + "\n";
}

std::optional<std::string> dns_refusal_line(const Identity& id, std::string_view qtype, std::string_view name,
                                            std::string_view reason) {
    // An empty name (a query without one) travels as ".", the root.
    const std::string_view sent = name.empty() ? std::string_view(".") : name;
    if (!is_token(qtype.empty() ? std::string_view("-") : qtype, 16) || !is_token(sent, 256) || !is_token(reason, 64))
        return std::nullopt;
    return std::string(kDnsRefusal) + id.str() + " " + std::string(qtype.empty() ? "-" : qtype) + " " +
           std::string(sent) + " " + std::string(reason) + "\n";
}

std::string granted_answer(const std::vector<std::uint16_t>& ports) {
    return nlohmann::json{{"ports", ports}}.dump() + "\n";
}

Checked<std::vector<std::uint16_t>> parse_granted_answer(std::string_view answer) {
    auto j = nlohmann::json::parse(answer.substr(0, answer.find('\n')), nullptr, false);
    if (!j.is_object() || !j.contains("ports") || !j["ports"].is_array())
        return Failed{"unexpected answer: expected {\"ports\":[...]}"};
    std::vector<std::uint16_t> ports;
    for (const auto& p : j["ports"]) {
        if (!p.is_number_unsigned() || p.get<std::uint64_t>() == 0 || p.get<std::uint64_t>() > 65535)
            return Failed{"unexpected answer: a port must be 1 to 65535"};
        ports.push_back(static_cast<std::uint16_t>(p.get<std::uint64_t>()));
    }
    return ports;
}

std::optional<DaemonFirstLine> parse_daemon_first_line(std::string_view line) {
    const std::string original_line(line);
    DaemonFirstLine first;
    for (auto [prefix, reset] : {std::pair{kBudgetRequest, false}, std::pair{kBudgetReset, true}}) {
        if (line.substr(0, prefix.size()) != prefix) continue;
        line.remove_prefix(prefix.size());
        if (!is_worker_name(line)) return std::nullopt;
        first.budget = true, first.budget_reset = reset, first.worker = std::string(line);
        return first;
    }
    if (line.substr(0, kDnsRefusal.size()) == kDnsRefusal) {
        if (!parse_dns_refusal(line.substr(kDnsRefusal.size()), first)) return std::nullopt;
        return first;
    }
    if (line.substr(0, kAnnouncement.size()) == kAnnouncement) {
        line.remove_prefix(kAnnouncement.size());
    } else if (line.substr(0, kGrantedRequest.size()) == kGrantedRequest) {
        first.granted = true;
        line.remove_prefix(kGrantedRequest.size());
    } else if (line.substr(0, kCapturedAnnouncement.size()) == kCapturedAnnouncement) {
        first.captured = true;
        line.remove_prefix(kCapturedAnnouncement.size());
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
    if (!first.counts && !first.granted) {
        if (auto at = line.find(kRoleField); at != std::string_view::npos) {
            role = line.substr(at + kRoleField.size());
            line = line.substr(0, at);
            if (!is_identity_part(role)) return std::nullopt;
        }
    }
    if (first.granted || first.captured) {
        // "worker/run HOST" or "worker/run HOST:PORT": the target after the identity.
        const auto space = line.find(' ');
        if (space == std::string_view::npos) return std::nullopt;
        const std::string_view what = line.substr(space + 1);
        line = line.substr(0, space);
        if (first.granted) {
            auto host = names::normalize_host(what);
            if (!host.host) return std::nullopt;
            first.target = names::Authority{*host.host, 0};
        } else {
            auto authority = names::split_authority(what);
            if (!authority.authority) return std::nullopt;
            first.target = std::move(authority.authority);
        }
    }
    auto id = parse_identity(line);
    if (!id) return std::nullopt;
    first.id = std::move(*id);
    first.id.role = std::string(role);
    // One spelling per question and connection: a host or port written any
    // other way than the run writes it ("API.example.test", ":0443") is refused.
    if (first.granted && granted_request(first.id, first.target->host) != original_line + "\n") return std::nullopt;
    if (first.captured && captured_announcement(first.id, *first.target) != original_line + "\n") return std::nullopt;
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
