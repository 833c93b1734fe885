// gateway/mcp_builtin.hpp — corral's own MCP server on the governed-tools
// endpoint, "/mcp/corral" (docs/approvals.md "The agent's report"): one tool,
// report_outcome, through which the agent says how its task ended
// (completed / failed / needs_review, with a short summary). The gateway
// answers it itself: nothing is forwarded, no credential is involved.
//
// It goes through the same path as any server's: read strictly, decided by
// the policy (a built-in allow rule the operator's rules cannot name: the
// name "corral" is reserved in [mcp.servers]), recorded in the ledger, its
// tools/list pinned and filtered. What the agent reports is kept beside the
// host's evidence and can only make the run's attested outcome worse
// (approval/attested.hpp).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "approval/attested.hpp"
#include "gateway/mcp_response.hpp"
#include "mcp/message.hpp"
#include "mcp/policy.hpp"
#include "mcp/servers.hpp"

namespace corral::gateway {

inline constexpr std::string_view kBuiltinServer = mcp::kBuiltinServerName;
inline constexpr std::string_view kReportOutcomeTool = "report_outcome";
inline constexpr std::size_t kMaxReportSummary = 2000;  // bytes of UTF-8

// The policy rule that lets report_outcome through ("corral (built-in)").
mcp::Rule builtin_rule();

// report_outcome's arguments read: the report, or the sentence saying what
// is wrong (status one of completed | failed | needs_review; summary a
// string of at most kMaxReportSummary bytes; nothing else).
std::variant<approval::AgentReport, std::string> read_report(const nlohmann::json& arguments);

// The built-in server's answer to the messages of one POST (initialize,
// notifications, ping, tools/list, tools/call report_outcome; anything else
// is "method not found"). Each report read is handed to `take`.
McpUpstreamAnswer answer_builtin(const mcp::ReadResult& read,
                                 const std::function<void(const approval::AgentReport&)>& take);

}  // namespace corral::gateway
