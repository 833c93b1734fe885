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
    bool outlined = false;        // parse_tools_list_outline: result.tools' objects hold "name" only
    bool ok() const { return !error; }
};

JsonResult parse_mcp_json(std::string_view text, const JsonLimits& limits = {});

// One message answering tools/list, checked whole the strict way, but with
// each object of result.tools built with its "name" only
// (base/strict_json.hpp's outline): for a list whose tools go to the box as
// the server wrote them (filter_tools_list's `outlined`). Building 100
// tools' trees was most of a list's governance (docs/benchmarks.md,
// session 45).
JsonResult parse_tools_list_outline(std::string_view text, const JsonLimits& limits = {});

}  // namespace corral::mcp
