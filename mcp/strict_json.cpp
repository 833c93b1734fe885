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

JsonResult parse_mcp_json(std::string_view text, const JsonLimits& limits) {
    StrictJson parsed = corral::parse_strict_json(text, limits);
    JsonResult out;
    if (!parsed.ok()) {
        const JsonProblem& p = *parsed.problem;
        out.error = Denial{reason_of(p.kind), p.key.empty() ? "" : json_quoted(p.key), p.detail};
        return out;
    }
    out.value = std::move(parsed.value);
    return out;
}

}  // namespace corral::mcp
