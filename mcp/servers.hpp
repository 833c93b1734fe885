// mcp/servers.hpp — a worker's governed tools as data: the MCP servers it
// has (each a stdio command corral starts outside the agent's box, or a
// remote Streamable HTTP server reached through the gateway), the policy
// over their tools, the pinned tool digests and the call budgets. config/
// reads org.toml and worker.toml into it (worker wins per server name);
// the gateway and the run only read it. docs/tools.md "Configuration".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "mcp/policy.hpp"

namespace corral::mcp {

// The server name corral's own tools answer on ("/mcp/corral": report_outcome,
// gateway/mcp_builtin.hpp): reserved, no [mcp.servers.NAME] may take it.
inline constexpr std::string_view kBuiltinServerName = "corral";

// A server corral starts as a child outside the agent's box. Its
// environment's secrets are read by the host from credential sources and
// never enter the agent's box.
struct StdioServer {
    std::vector<std::string> argv;                     // argv[0] absolute
    std::map<std::string, std::string> env;            // plain values
    std::map<std::string, std::string> secret_env;     // VARIABLE -> [credentials.NAME]
    std::string cwd;                                   // "" = "/"
};

// A remote Streamable HTTP server. The box never holds its credential: the
// gateway injects it as for a model host (the credential's header template).
struct HttpServer {
    std::string url;                    // "https://host[:port]/path", as written
    std::string host;                   // normalised host of url
    std::uint16_t port = 443;
    std::string path = "/";             // path of url ("/mcp")
    std::string credential;             // [credentials.NAME]; "" = none injected
    std::string connect_to;             // as Grant::connect_to: dial this instead of resolving host
    std::string upstream_ca_file;       // "" = [gateway].upstream_ca_file
};

struct Server {
    std::string name;                   // [mcp.servers.NAME]: a tool-name-like word
    std::string where;                  // "FILE:LINE" of its table
    std::variant<StdioServer, HttpServer> transport;
    // Server→client requests (sampling, elicitation) pass only when set.
    bool allow_server_requests = false;
};

struct CallBudgets {
    std::optional<std::uint64_t> per_run;              // [mcp.budget] tool_calls_per_run
    std::optional<std::uint64_t> per_worker;           // tool_calls_per_worker (daemon, persistent)
    std::map<std::string, std::uint64_t> per_tool;     // "server/tool" -> calls per run
};

struct ToolsConfig {
    std::map<std::string, Server> servers;             // by name
    Policy policy;                                     // servers = keys of `servers`; rules in file order
    std::map<std::string, std::string> pins;           // "server/tool" -> "sha256:<64 hex>"
    bool log_arguments = false;                        // arguments and results kept whole, not as digests
    CallBudgets budgets;
    // Where config keys were written: "mcp.log_arguments", "mcp.pins.\"S/T\"",
    // "mcp.budget.per_tool.\"S/T\"" -> "FILE:LINE". A worker's log_arguments
    // replaces the organisation's only when written; a pin or a per-tool cap
    // naming a server the worker does not have is an error at that line.
    std::map<std::string, std::string> key_where;
    bool empty() const { return servers.empty(); }
};

}  // namespace corral::mcp
