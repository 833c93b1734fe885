#include "mcp/strict_json.hpp"

namespace corral::mcp {

namespace {

Reason reason_of(JsonProblemKind k) {
    switch (k) {
    case JsonProblemKind::duplicate_key:
    case JsonProblemKind::case_variant_key: return Reason::duplicate_key;
    case JsonProblemKind::too_deep: return Reason::too_deep;
    case JsonProblemKind::oversize: return Reason::oversize;
    case JsonProblemKind::malformed: break;
    }
    return Reason::malformed_json;
}

}  // namespace

namespace {

JsonResult as_mcp(StrictJson parsed) {
    JsonResult out;
    if (!parsed.ok()) {
        const JsonProblem& p = *parsed.problem;
        out.error = Denial{reason_of(p.kind), p.key.empty() ? "" : json_quoted(p.key), p.detail};
        return out;
    }
    out.value = std::move(parsed.value);
    out.outlined = parsed.outlined;
    return out;
}

}  // namespace

JsonResult parse_mcp_json(std::string_view text, const JsonLimits& limits) {
    return as_mcp(corral::parse_strict_json(text, limits));
}

JsonResult parse_tools_list_outline(std::string_view text, const JsonLimits& limits) {
    return as_mcp(corral::parse_strict_json_outline(text, "/result/tools", "name", limits));
}

}  // namespace corral::mcp
