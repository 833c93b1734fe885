// Fuzz target: the MCP message reader (mcp/message.*, mcp/strict_json.*) and
// the argument matcher (mcp/constraint.*, mcp/policy.*) on any body.
// Input: [era][flags][Mcp-Method]\n[Mcp-Name]\n[body].
// What must hold for every input:
//  - reading is deterministic, never throws, and a refusal has a reason in
//    the table and a one-line detail of bounded size, and hands on no message;
//  - a read message is well-formed: a batch is non-empty, a tools/call is a
//    request with a valid tool name and object arguments;
//  - strict JSON agrees with nlohmann's parser on every document both
//    accept, and refuses a document nlohmann accepts only for a duplicate
//    key, depth or size; its fast reader agrees with its reference reader,
//    and an outlined read accepts the same documents; a selective read
//    vouches only for what nlohmann parses, with the same selected members;
//  - the matcher never throws; a path allowed under /workspace normalises to
//    /workspace or below with no "." or ".." segment, and normalising is idempotent;
//  - a call the policy allows is allowed by the allow rule alone (deny only
//    takes away).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/strict_json.hpp"
#include "mcp/message.hpp"
#include "mcp/strict_json.hpp"
#include "mcp/policy.hpp"

using namespace corral::mcp;
using json = nlohmann::json;

namespace {

void check_denial(const Denial& d) {
    const std::string s = denial_sentence(d);
    if (d.detail.empty() || s.size() > 1200 || s.find('\n') != std::string::npos) std::abort();
    if (denial_entry(d.reason).reason != d.reason) std::abort();
}

Policy make_policy(bool with_deny) {
    Policy p;
    p.servers = {"s"};
    Constraint path;
    path.pointer = "/path";
    path.kind = ConstraintKind::path_under;
    path.root = "/workspace";
    Constraint limit;
    limit.pointer = "/opts/limit";
    limit.kind = ConstraintKind::range;
    limit.min = 1;
    limit.max = 100;
    Constraint re;
    re.pointer = "/q";
    re.kind = ConstraintKind::regex;
    re.pattern = "[a-z]+(/[a-z]+)*";
    Constraint env;
    env.pointer = "/path";
    env.kind = ConstraintKind::glob;
    env.pattern = "*.env";
    p.rules = {{"a", "s", "*", Action::allow, {path}}, {"b", "s", "search*", Action::allow, {limit, re}}};
    if (with_deny) p.rules.push_back({"d", "s", "*", Action::deny, {env}});
    if (!validate_rules(p).empty()) std::abort();
    return p;
}

void check_args(const Message& m) {
    static const Policy full = make_policy(true), allow_only = make_policy(false);
    const json& args = m.tool_call->arguments;
    const Decision d = decide(full, "s", m.tool_call->name, args);
    if (d.denial) check_denial(*d.denial);
    if (d.allowed() && !decide(allow_only, "s", m.tool_call->name, args).allowed()) std::abort();
    if (d.allowed() && d.rule == "a") {
        auto norm = normalise_path(args["path"].get<std::string>(), "/workspace");
        if (!norm || !(*norm == "/workspace" || norm->rfind("/workspace/", 0) == 0)) std::abort();
        if (norm->find("/./") != std::string::npos || norm->find("/../") != std::string::npos) std::abort();
        auto again = normalise_path(*norm, "/");
        if (!again || *again != *norm) std::abort();
    }
}

void check_strict(std::string_view body) {
    const auto strict = parse_mcp_json(body);
    const json plain = json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (strict.ok() && (plain.is_discarded() || plain != strict.value)) std::abort();
    // The fast reader (RapidJSON) only ever says yes to what the reference
    // reader accepts, with the same value; an outlined read accepts the same.
    const auto reference = corral::parse_strict_json_reference(body);
    if (reference.ok() != strict.ok() || (reference.ok() && reference.value != strict.value)) std::abort();
    if (parse_tools_list_outline(body).ok() != strict.ok()) std::abort();
    // A selective read (the usage meter's) vouches only for JSON, and then
    // holds what the plain parse holds of the selected members.
    static const corral::JsonSelection inner{{{"model"}, {"usage"}, {"error"}}};
    static const corral::JsonSelection select{{{"type"}, {"result", &inner}, {"params", &inner}, {"error"}}};
    if (json selected; corral::read_json_selected(body, select, selected) &&
                       (plain.is_discarded() || selected != corral::select_members(plain, select)))
        std::abort();
    if (!strict.ok()) {
        check_denial(*strict.error);
        const Reason r = strict.error->reason;
        if (!plain.is_discarded() && r != Reason::duplicate_key && r != Reason::too_deep && r != Reason::oversize)
            std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const Era era = data[0] & 1 ? Era::stateless_2026_07_28 : Era::sessions_2025_11_25;
    const std::uint8_t flags = data[1];
    std::string_view rest(reinterpret_cast<const char*>(data) + 2, size - 2);
    HttpHeaders h;
    for (int i = 0; i < 2; ++i) {
        const auto nl = rest.find('\n');
        if (nl == std::string_view::npos) break;
        std::string v(rest.substr(0, nl));
        if (flags & (1u << i)) (i == 0 ? h.mcp_method : h.mcp_name) = v;
        rest.remove_prefix(nl + 1);
    }
    if (flags & 4) h.session_id = "sid";
    MessageLimits lim;
    lim.session_required = flags & 8;
    lim.json.max_depth = flags & 16 ? 8 : 64;

    const ReadResult r = read_message(rest, era, h, lim);
    const ReadResult again = read_message(rest, era, h, lim);
    if (r.ok() != again.ok() || r.messages.size() != again.messages.size()) std::abort();
    if (!r.ok()) {
        check_denial(*r.refusal);
        if (!r.messages.empty()) std::abort();
    } else {
        if (r.messages.empty() || (!r.batch && r.messages.size() != 1)) std::abort();
        for (const auto& m : r.messages) {
            if ((m.method == "tools/call") != m.tool_call.has_value()) std::abort();
            if (!m.tool_call) continue;
            if (m.kind != Kind::request || !valid_tool_name(m.tool_call->name) || !m.tool_call->arguments.is_object())
                std::abort();
            check_args(m);
        }
    }
    check_strict(rest);
    return 0;
}
