// mcp/strict_json.hpp — JSON read the strict way for MCP traffic: a key twice
// in one object (at any level) is refused, naming the key and its JSON
// pointer, because two readers of such a message can disagree on which value
// counts (corral checks one, the server acts on the other). Size and nesting
// depth are bounded before and while parsing.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "mcp/denial.hpp"

namespace corral::mcp {

struct JsonLimits {
    std::size_t max_bytes = 4u << 20;  // a whole message
    std::size_t max_depth = 64;        // objects and arrays nested
};

struct JsonResult {
    nlohmann::json value;
    std::optional<Denial> error;  // malformed_json, duplicate_key, too_deep or oversize
    bool ok() const { return !error; }
};

JsonResult parse_strict_json(std::string_view text, const JsonLimits& limits = {});

}  // namespace corral::mcp
