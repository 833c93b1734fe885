// mcp/tools_list.hpp — a server's tools/list result as the agent sees it:
// only the tools the policy may allow and that are not quarantined (fewer
// tokens in the model's context, and nothing listed that would be refused).
// Every listed tool's digest goes through the PinBook, hidden ones included.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcp/denial.hpp"
#include "mcp/policy.hpp"
#include "mcp/tool_pin.hpp"

namespace corral::mcp {

// Where one tool lies in the text of the message that listed it: [begin, end).
struct ToolSpan {
    std::size_t begin = 0, end = 0;
};

struct ListFilter {
    nlohmann::json result;                                        // the result with the visible tools only
    std::vector<ToolSpan> visible_spans;                          // their spans, when spans were given
    std::vector<std::string> hidden;                              // tools the policy never allows
    std::vector<std::string> quarantined;                         // tools whose digest changed
    std::vector<std::string> quarantined_digests;                 // their digests now, in the same order
    std::vector<std::pair<std::string, std::string>> first_seen;  // (tool, digest) recorded now
    std::optional<Denial> refusal;  // malformed_result: the whole answer is withheld
    bool ok() const { return !refusal; }
};

// `result` is taken by value: move it in to avoid a copy of every tool.
// With `text` and `spans` (tool_spans of the message's text, one per tool of
// result.tools), the PinBook compares each tool's bytes, not its tree.
// `outlined`: result.tools' objects hold their "name" only (the message was
// read with parse_tools_list_outline); a tool whose bytes the PinBook has
// not seen is then read whole from its span for its digest.
ListFilter filter_tools_list(nlohmann::json result, const std::string& server, const Policy& policy,
                             PinBook& pins, std::string_view text = {}, const std::vector<ToolSpan>& spans = {},
                             bool outlined = false);

// The spans of result.tools' elements in `message`, the text of one JSON-RPC
// message already read the strict way (so each key is there once), in
// order; nullopt when the text alone cannot tell (a key written with an
// escape, no result.tools array).
std::optional<std::vector<ToolSpan>> tool_spans(std::string_view message);

// Whether `text` (a JSON value as a server wrote it) reads the same to the
// secret scrubber as nlohmann's dump of it would: on one line, and no escape
// but those dump writes itself (\" \\ \b \f \n \r \t, \u00XX for a control
// character), so no secret hides behind "\u0073" or "\/". Such a text may
// go to the box as the server wrote it.
bool reads_as_dumped(std::string_view text);

// A tools/call of a quarantined tool: its refusal.
std::optional<Denial> quarantine_refusal(const PinBook& pins, const std::string& server, const std::string& tool);

}  // namespace corral::mcp
