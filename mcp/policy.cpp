// mcp/policy.cpp — deciding a call, and validating the rules.
#include "mcp/policy.hpp"

#include "base/glob.hpp"

namespace corral::mcp {
namespace {

using json = nlohmann::json;

bool names(const Rule& r, std::string_view server, std::string_view tool) {
    return r.server == server && glob_match(r.tool, tool);
}

// Whether the rule applies to these arguments; `why` gets the first failing
// constraint of an allow/approval rule.
bool applies(const Rule& r, const json& args, std::string& why) {
    for (const auto& c : r.when) {
        const Verdict v = evaluate(c, args);
        if (r.action == Action::deny) {
            if (v.outcome == Outcome::no_match || v.outcome == Outcome::absent) return false;
        } else if (v.outcome != Outcome::match) {
            if (why.empty()) why = v.why;
            return false;
        }
    }
    return true;
}

Decision refuse(Reason reason, std::string_view tool, std::string rule, std::string detail) {
    Decision d;
    d.action = reason == Reason::approval_required ? Action::approval : Action::deny;
    d.rule = std::move(rule);
    d.denial = Denial{reason, std::string(tool), std::move(detail)};
    return d;
}

}  // namespace

Decision decide(const Policy& p, std::string_view server, std::string_view tool, const json& arguments) {
    if (!p.servers.count(std::string(server)))
        return refuse(Reason::unknown_server, server, "", "this worker has no server \"" + std::string(server) + "\"");
    const Rule* allow = nullptr;
    const Rule* approval = nullptr;
    bool named = false;
    std::string why;
    for (const auto& r : p.rules) {
        if (!names(r, server, tool)) continue;
        named = true;
        if (!applies(r, arguments, why)) continue;
        if (r.action == Action::deny) {
            std::string detail = "rule " + r.name;
            if (r.when.empty()) return refuse(Reason::tool_denied, tool, r.name, detail);
            return refuse(Reason::argument_denied, tool, r.name, detail + " denies these arguments");
        }
        if (r.action == Action::approval && !approval) approval = &r;
        if (r.action == Action::allow && !allow) allow = &r;
    }
    if (approval) {
        Decision d = refuse(Reason::approval_required, tool, approval->name, "rule " + approval->name);
        d.approval_timeout = approval->approval_timeout;
        return d;
    }
    if (allow) return Decision{Action::allow, allow->name, std::nullopt};
    if (!why.empty()) return refuse(Reason::argument_denied, tool, "", why);
    return refuse(named ? Reason::tool_denied : Reason::unknown_tool, tool, "", "no rule allows it");
}

Decision decide_messages(const Policy& p, std::string_view server, const std::vector<Message>& messages) {
    Decision last{Action::allow, "", std::nullopt};
    for (std::size_t i = 0; i < messages.size(); ++i) {
        const Message& m = messages[i];
        if (!m.tool_call) continue;
        Decision d = decide(p, server, m.tool_call->name, m.tool_call->arguments);
        if (d.allowed()) {
            last = d;
            continue;
        }
        if (messages.size() > 1) {
            const std::string inner = denial_sentence(*d.denial);
            d.denial = Denial{Reason::batch_denied, m.tool_call->name,
                              "call " + std::to_string(i) + ", tool " + m.tool_call->name + ": " + inner};
            d.action = Action::deny;
        }
        return d;
    }
    return last;
}

bool may_allow(const Policy& p, std::string_view server, std::string_view tool) {
    if (!p.servers.count(std::string(server))) return false;
    bool allow = false;
    for (const auto& r : p.rules) {
        if (!names(r, server, tool)) continue;
        if (r.action == Action::deny && r.when.empty()) return false;
        // A call an approval rule covers goes through once a person approves it.
        allow = true;
    }
    return allow;
}

}  // namespace corral::mcp
