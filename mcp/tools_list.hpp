// mcp/tools_list.hpp — a server's tools/list result as the agent sees it:
// only the tools the policy may allow and that are not quarantined (fewer
// tokens in the model's context, and nothing listed that would be refused).
// Every listed tool's digest goes through the PinBook, hidden ones included.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcp/denial.hpp"
#include "mcp/policy.hpp"
#include "mcp/tool_pin.hpp"

namespace corral::mcp {

struct ListFilter {
    nlohmann::json result;                                        // the result with the visible tools only
    std::vector<std::string> hidden;                              // tools the policy never allows
    std::vector<std::string> quarantined;                         // tools whose digest changed
    std::vector<std::string> quarantined_digests;                 // their digests now, in the same order
    std::vector<std::pair<std::string, std::string>> first_seen;  // (tool, digest) recorded now
    std::optional<Denial> refusal;  // malformed_result: the whole answer is withheld
    bool ok() const { return !refusal; }
};

// `result` is taken by value: move it in to avoid a copy of every tool.
ListFilter filter_tools_list(nlohmann::json result, const std::string& server, const Policy& policy,
                             PinBook& pins);

// A tools/call of a quarantined tool: its refusal.
std::optional<Denial> quarantine_refusal(const PinBook& pins, const std::string& server, const std::string& tool);

}  // namespace corral::mcp
