// mcp/strict_json.hpp — JSON read the strict way for MCP traffic
// (base/strict_json.hpp: a key twice in one object at any level, or two keys
// differing only in case, refused naming the key and its JSON pointer; size
// and depth bounded), its problem given as an MCP denial.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/strict_json.hpp"
#include "mcp/denial.hpp"

namespace corral::mcp {

using JsonLimits = corral::StrictJsonLimits;

struct JsonResult {
    nlohmann::json value;
    std::optional<Denial> error;  // malformed_json, duplicate_key (a case variant too), too_deep or oversize
    bool ok() const { return !error; }
};

JsonResult parse_mcp_json(std::string_view text, const JsonLimits& limits = {});

}  // namespace corral::mcp
