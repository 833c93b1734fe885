// config/mcp_config.hpp — the [mcp] table of org.toml and worker.toml read
// into mcp::ToolsConfig (mcp/servers.hpp): the MCP servers (stdio or remote
// Streamable HTTP), the rules over their tools, the pinned tool digests and
// the call budgets. mcp_config.cpp reads [mcp] and its servers,
// mcp_rules.cpp the rules, pins and budgets, the merge and the checks across
// files. docs/tools.md "Configuration" is the reference for every key.
//
// Resolution per worker (merge_tools): servers by name (the worker's server
// replaces the organisation's of the same name), rules = org.toml's then
// worker.toml's (file order), pins and per-tool caps merged (the worker's
// win), log_arguments the worker's when written, budgets field by field.
#pragma once

#include <string>
#include <vector>

#include "config/checker.hpp"
#include "config/gateway_config.hpp"
#include "mcp/servers.hpp"

#include <toml.hpp>

namespace corral::config {

// The [mcp] table at `v`. Every problem is recorded in `c`; a rule, pin or
// cap with a problem is left out. Each rule is checked on its own with
// mcp::validate_rules (everything but the server it names, which needs the
// servers a worker has: check_tools). `credentials`: the names org.toml's
// [credentials.NAME] sections write (a server's secret_env values and
// credential must be one of them, when `complete`).
mcp::ToolsConfig check_mcp_table(const toml::value& v, const CredentialNames& credentials, Checker& c);

// A worker's tools: the organisation's with the worker's on top.
mcp::ToolsConfig merge_tools(const mcp::ToolsConfig& org, const mcp::ToolsConfig& worker);

// The checks of a whole tools configuration (the organisation's own, or a
// worker's merged one): mcp::validate_rules on its policy (a rule naming a
// server it does not have can never match), and every pin and per-tool cap
// naming one of its servers. Each problem is a Diagnostic at the FILE:LINE
// of the rule, pin or cap, with Diagnostic::worker = `worker` ("" = the
// organisation). `only_file` (when not "") keeps the problems of that file
// only: a worker's merged tools report the worker.toml's entries, org.toml's
// being checked (more strictly, against org.toml's servers) on their own.
// Compiles the policy's regexes in place.
void check_tools(mcp::ToolsConfig& tools, const std::string& worker, const std::string& only_file,
                 std::vector<Diagnostic>& errors);

// Internal to config/ (mcp_config.cpp and mcp_rules.cpp).
namespace mcp_toml {

// "FILE:LINE" split back into a Diagnostic's file and line.
void set_where(Diagnostic& d, const std::string& where);
// "server/tool" with a valid server name and tool name.
bool valid_tool_key(const std::string& key);
inline constexpr const char* tool_key_allowed =
    "\"SERVER/TOOL\" (a server name, '/', a tool name of 1..128 of A-Z a-z 0-9 _ . -)";
inline constexpr const char* server_name_allowed =
    "a server name: 1-64 of A-Z a-z 0-9 . _ -, starting with a letter or digit";

// [[mcp.rules]], [mcp.pins] and [mcp.budget], into `out`.
void check_rules(const toml::value& v, Checker& c, mcp::ToolsConfig& out);
void check_pins(const toml::value& v, Checker& c, mcp::ToolsConfig& out);
void check_call_budgets(const toml::value& v, Checker& c, mcp::ToolsConfig& out);

}  // namespace mcp_toml

}  // namespace corral::config
