// agents/mcp_client.cpp — the agent CLIs' MCP client configuration
// (agents/mcp_client.hpp).
#include "agents/mcp_client.hpp"

#include <nlohmann/json.hpp>

#include "base/sys_error.hpp"

namespace corral::agents {

namespace {

void require_port(const McpClientInputs& in) {
    if (!in.servers.empty() && (in.port == 0 || in.port > 65535))
        throw UsageError("MCP endpoints: the bridge port " + std::to_string(in.port) + " is not a TCP port (1-65535)");
}

// A JSON string literal is a TOML basic string (same escapes, ASCII only).
std::string toml_string(const std::string& s) { return nlohmann::json(s).dump(-1, ' ', true); }

}  // namespace

std::string mcp_endpoint_url(unsigned port, const std::string& server) {
    return "http://127.0.0.1:" + std::to_string(port) + "/mcp/" + server;
}

std::string claude_mcp_config_json(const McpClientInputs& in) {
    require_port(in);
    nlohmann::json servers = nlohmann::json::object();
    for (const auto& name : in.servers) servers[name] = {{"type", "http"}, {"url", mcp_endpoint_url(in.port, name)}};
    return nlohmann::json{{"mcpServers", servers}}.dump(2) + "\n";
}

std::vector<std::string> claude_mcp_flags(const McpClientInputs& in, const std::string& file_in_box) {
    if (in.servers.empty()) return {};
    return {"--mcp-config", file_in_box, "--strict-mcp-config"};
}

std::string codex_mcp_servers_toml(const McpClientInputs& in) {
    require_port(in);
    std::string t;
    for (const auto& name : in.servers) {
        t += "\n[mcp_servers." + toml_string(name) + "]\n";
        t += "url = " + toml_string(mcp_endpoint_url(in.port, name)) + "\n";
    }
    return t;
}

}  // namespace corral::agents
