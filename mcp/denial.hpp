// mcp/denial.hpp — the one table of corral's MCP refusals: each reason code,
// the JSON-RPC error code it is answered with, and the sentence the model
// reads. Every refusal in mcp/ is a Denial with one of these reasons; the
// answer is always a JSON-RPC error (never a bare HTTP 403, which agent loops
// read as a network failure). docs/tools.md "Refusals".
#pragma once

#include <array>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/strict_json.hpp"

namespace corral::mcp {

enum class Reason {
    malformed_json,     // not JSON at all, or trailing bytes
    duplicate_key,      // a key twice in one object, at any level
    too_deep,           // nesting over the depth limit
    oversize,           // message over the size or batch limit
    invalid_request,    // JSON, but not a JSON-RPC 2.0 MCP message
    header_mismatch,    // 2026-07-28: Mcp-Method / Mcp-Name disagree with the body
    unknown_server,     // a server this worker does not have
    unknown_tool,       // no rule names this tool for this worker
    tool_denied,        // a deny rule matches the tool
    argument_denied,    // an argument fails (or matches a deny on) a constraint
    approval_required,  // an approval rule matches a call that cannot wait for one (in a batch)
    approval_denied,    // a person denied the call (`corral deny`)
    approval_timeout,   // nobody decided by the deadline: no consent, never a deny
    approval_cancelled, // the approver stopped (the run ended) while the call waited
    quarantined,        // the tool's description changed since it was trusted
    batch_denied,       // one call in the batch is refused, so all of it is
    malformed_result,   // a server's answer (tools/list) is not what MCP says
    budget_exhausted,   // a tool-call budget ([mcp.budget]) has no call left
};

struct DenialEntry {
    Reason reason;
    std::string_view code;  // stable, for the journal and run.json counts
    int jsonrpc_code;
    std::string_view sentence;  // "{}" is replaced by the subject (tool, key, server)
};

// JSON-RPC: -32700 parse error, -32600 invalid request, -32020 header mismatch
// (MCP 2026-07-28); -32001 is corral's code for "refused by policy".
inline constexpr int kPolicyErrorCode = -32001;

inline constexpr std::array<DenialEntry, 18> kDenials = {{
    {Reason::malformed_json, "malformed_json", -32700,
     "the message is not valid JSON; send one well-formed JSON-RPC 2.0 message"},
    {Reason::duplicate_key, "duplicate_key", -32700,
     "the message has the key {} twice in one object; send each key once"},
    {Reason::too_deep, "too_deep", -32700, "the message is nested too deeply; flatten the arguments"},
    {Reason::oversize, "oversize", -32600, "the message is too large; send smaller arguments or fewer calls"},
    {Reason::invalid_request, "invalid_request", -32600,
     "the message is not a valid JSON-RPC 2.0 MCP message; fix the field named below"},
    {Reason::header_mismatch, "header_mismatch", -32020,
     "the Mcp-Method / Mcp-Name headers do not agree with the body; send matching headers"},
    {Reason::unknown_server, "unknown_server", kPolicyErrorCode,
     "MCP server {} is not available to this worker; do not retry it by other means"},
    {Reason::unknown_tool, "unknown_tool", kPolicyErrorCode,
     "tool {} is not allowed for this worker; do not retry it by other means"},
    {Reason::tool_denied, "tool_denied", kPolicyErrorCode,
     "tool {} is denied for this worker; do not retry it by other means"},
    {Reason::argument_denied, "argument_denied", kPolicyErrorCode,
     "an argument of tool {} is not allowed; change the argument named below or do without the call"},
    {Reason::approval_required, "approval_required", kPolicyErrorCode,
     "tool {} needs an operator's approval, which a call in a batch cannot wait for; send it alone"},
    // The approval queue's own sentence (approval::refusal_sentence, one
    // wording for egress and tools) is the subject.
    {Reason::approval_denied, "approval_denied", kPolicyErrorCode, "{}"},
    {Reason::approval_timeout, "approval_timeout", kPolicyErrorCode, "{}"},
    {Reason::approval_cancelled, "approval_cancelled", kPolicyErrorCode, "{}"},
    {Reason::quarantined, "quarantined", kPolicyErrorCode,
     "tool {} changed its description since it was trusted and is quarantined until the operator accepts it; "
     "do not retry it"},
    {Reason::batch_denied, "batch_denied", kPolicyErrorCode,
     "a call in this batch is refused, so the whole batch is; send the allowed calls alone"},
    {Reason::malformed_result, "malformed_result", -32603,
     "the MCP server's answer is malformed and was withheld; do not rely on this server's answer"},
    {Reason::budget_exhausted, "budget_exhausted", kPolicyErrorCode,
     "the tool-call budget of {} is spent; do not retry"},
}};

inline const DenialEntry& denial_entry(Reason r) {
    for (const auto& e : kDenials)
        if (e.reason == r) return e;
    return kDenials[0];  // unreachable: every Reason has a row (tests/mcp/test_denial.cpp)
}

// A refusal: why, about what (tool name, key, server), and a one-line detail.
struct Denial {
    Reason reason = Reason::invalid_request;
    std::string subject;
    std::string detail;
};

// json_quoted (base/strict_json.hpp) writes every key, name and value a
// detail quotes: escaped, so a detail stays one bounded line whatever the
// message held.
using corral::json_quoted;

// "refused by corral: <sentence>[ (<detail>)]".
inline std::string denial_sentence(const Denial& d) {
    const auto& e = denial_entry(d.reason);
    std::string s(e.sentence);
    if (auto at = s.find("{}"); at != std::string::npos) s.replace(at, 2, d.subject.empty() ? "?" : d.subject);
    std::string out = "refused by corral: " + s;
    if (!d.detail.empty()) out += " (" + d.detail + ")";
    return out;
}

// The JSON-RPC error response for `d` to the request with id `id` (null when
// the id could not be read).
inline nlohmann::json denial_response(const Denial& d, const nlohmann::json& id) {
    const auto& e = denial_entry(d.reason);
    nlohmann::json data = {{"reason", std::string(e.code)}};
    if (!d.subject.empty()) data["subject"] = d.subject;
    return {{"jsonrpc", "2.0"},
            {"id", id},
            {"error", {{"code", e.jsonrpc_code}, {"message", denial_sentence(d)}, {"data", data}}}};
}

}  // namespace corral::mcp
