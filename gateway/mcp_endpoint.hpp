// gateway/mcp_endpoint.hpp — corral's MCP endpoint for one worker's remote
// Streamable HTTP servers (mcp::HttpServer): the box POSTs JSON-RPC to
// "/mcp/NAME" on a plain-HTTP listener served from outside the box; the
// gateway reads the message (both eras), decides it by the worker's policy
// and pins, records the decision, forwards an allowed message over verified
// TLS with the server's credential injected, and answers with the server's
// response scrubbed of every secret it holds, size-capped, its tools/list
// filtered and pinned. A refusal is a JSON-RPC error with HTTP 200 (never a
// bare 403). docs/tools.md "The gateway's MCP endpoint".
//
// Entry: Gateway::serve_mcp (gateway.hpp) with an accepted connection, the
// identity its acceptor vouches for, and the worker's McpTools.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "config/gateway_config.hpp"
#include "gateway/mcp_budget.hpp"
#include "gateway/secret_scrubber.hpp"
#include "mcp/servers.hpp"
#include "mcp/tool_pin.hpp"

namespace corral::gateway {

class StdioChannel;   // gateway/mcp_stdio.hpp
class StdioLauncher;

// One worker's governed tools as the gateway serves them, shared by all its
// connections (thread-safe). Built once from the configuration; the pins of
// the configuration are trusted before first sight.
class McpTools {
public:
    explicit McpTools(mcp::ToolsConfig tools);
    ~McpTools();

    const mcp::ToolsConfig& config() const { return tools_; }
    const mcp::Policy& policy() const { return tools_.policy; }

    // The HTTP server named `name`, with the grant its dial is vetted and
    // verified by (host, port, connect_to, upstream CA); nullptr for a name
    // the worker does not have or a stdio server.
    struct Remote {
        const mcp::HttpServer* server = nullptr;
        config::Grant grant;
    };
    const Remote* remote(std::string_view name) const;

    // The stdio server named `name` (gateway/mcp_stdio.hpp), once
    // serve_stdio installed a launcher; nullptr otherwise.
    StdioChannel* stdio(std::string_view name) const;
    // Whether `name` is a server this gateway serves: a remote one, or a
    // stdio one with a launcher. Any other is unknown_server.
    bool serves(std::string_view name) const { return remote(name) || stdio(name); }
    // Serves the worker's stdio servers through `launcher` (the run's), each
    // answer line at most `max_line` bytes. Before any connection is served.
    void serve_stdio(std::shared_ptr<StdioLauncher> launcher, std::size_t max_line);

    // The PinBook, under this object's lock for the duration of `f(book)`.
    template <class F>
    auto with_pins(F&& f) {
        std::lock_guard lock(mutex_);
        return f(pins_);
    }

    // The scrub patterns of every secret in `secrets` (the gateway's), built
    // on first use and kept (the gateway's secrets are installed once,
    // before serving).
    std::shared_ptr<const ScrubPatterns> scrub_patterns(const std::map<std::string, std::string>& secrets);

    // The run's tool-call budgets and counts (gateway/mcp_budget.hpp).
    McpCalls& calls() { return calls_; }
    const McpCalls& calls() const { return calls_; }

private:
    mcp::ToolsConfig tools_;
    McpCalls calls_;
    std::map<std::string, Remote, std::less<>> remotes_;
    std::map<std::string, std::unique_ptr<StdioChannel>, std::less<>> stdio_;
    std::mutex mutex_;
    mcp::PinBook pins_;
    std::shared_ptr<const ScrubPatterns> patterns_;
};

// The grant an HTTP server's dial goes by: its host and port, its
// connect_to and upstream CA; special-purpose addresses are allowed only when
// connect_to names the address (the operator wrote it down), as for nothing
// else. Throws UsageError for a connect_to that is not host:port.
config::Grant grant_for_server(const mcp::HttpServer& s);

}  // namespace corral::gateway
