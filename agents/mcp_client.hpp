// agents/mcp_client.hpp — what an agent CLI is told about its MCP servers:
// only corral's endpoints, one per server the worker has, on the box's
// bridge (http://127.0.0.1:PORT/mcp/NAME, served from outside the box by the
// gateway, which applies the tool policy and holds the servers' secrets).
// claude gets a --mcp-config file and --strict-mcp-config (so nothing the
// project or the user's files declare is loaded); codex gets
// [mcp_servers.NAME] tables in the config.toml corral writes; pi has no MCP
// client (a program in its box may use the endpoints directly). Pure.
// docs/agents.md "Governed tools".
#pragma once

#include <string>
#include <vector>

namespace corral::agents {

struct McpClientInputs {
    std::vector<std::string> servers;  // names, as in [mcp.servers.NAME]; empty = no MCP
    unsigned port = 0;                 // the box's bridge port; required when servers is not empty
};

// "http://127.0.0.1:PORT/mcp/NAME": where a box reaches server NAME.
std::string mcp_endpoint_url(unsigned port, const std::string& server);

// claude's --mcp-config file: {"mcpServers": {NAME: {"type": "http", "url": ...}}}.
std::string claude_mcp_config_json(const McpClientInputs& in);

// The flags before claude's "--": --mcp-config FILE --strict-mcp-config
// (none when there are no servers).
std::vector<std::string> claude_mcp_flags(const McpClientInputs& in, const std::string& file_in_box);

// The [mcp_servers."NAME"] tables appended to codex's config.toml ("" when none).
std::string codex_mcp_servers_toml(const McpClientInputs& in);

}  // namespace corral::agents
