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

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "approval/attested.hpp"
#include "config/gateway_config.hpp"
#include "gateway/mcp_budget.hpp"
#include "gateway/secret_scrubber.hpp"
#include "mcp/servers.hpp"
#include "mcp/tool_pin.hpp"

namespace corral::gateway {

class StdioChannel;   // gateway/mcp_stdio.hpp
class StdioLauncher;

// One worker's governed tools as the gateway serves them, shared by all its
// connections (thread-safe): one run's (the embedded gateway's) or every run
// of the worker (the daemon's). Built once from the configuration; the pins
// of the configuration are trusted before first sight.
class McpTools {
public:
    // `across_runs`: the worker's tool_calls_per_worker budget (the daemon's;
    // null: none is enforced, and the embedded gateway refuses a configuration
    // that has one: run/egress.cpp).
    explicit McpTools(mcp::ToolsConfig tools, std::shared_ptr<WorkerCalls> across_runs = nullptr);
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
    bool serves(std::string_view name) const { return remote(name) || stdio(name) || is_builtin(name); }
    // corral's built-in server (gateway/mcp_builtin.hpp: report_outcome)
    // is served from now on, its allow rule in the policy. Before serving.
    void serve_builtin();
    bool is_builtin(std::string_view name) const;
    // Whether `name` may send the box requests of its own (the server's
    // allow_server_requests; never the built-in one).
    bool allows_server_requests(std::string_view name) const;
    // The last report_outcome of the run `identity` (its agent may report
    // again: the last word counts), if it made one. Thread-safe.
    void take_report(const std::string& identity, approval::AgentReport report);
    std::optional<approval::AgentReport> report(const std::string& identity) const;
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

    // The tool-call budgets and counts of the run `identity` ("worker/run",
    // gateway/mcp_budget.hpp), made on its first call.
    McpCalls& calls(const std::string& identity);
    // Its counts so far (none before its first call).
    ToolCallCounts counts(const std::string& identity) const;
    // The worker's budget across its runs (null: none); `corral budget` shows and resets it.
    WorkerCalls* across_runs() const { return across_runs_.get(); }

    // Called (on the connection's thread) after an answer showed a tool for
    // the first time or a run first saw a tool quarantined, with that run's
    // id: the daemon keeps its pins store up to date then (run/worker_tools.hpp),
    // the embedded gateway at the run's end instead. Set before serving.
    void on_sight(std::function<void(const std::string& run_id)> f) { on_sight_ = std::move(f); }
    void sighted(const std::string& run_id) const {
        if (on_sight_) on_sight_(run_id);
    }
    // Called by the daemon when a run of the worker asks for its counts (at
    // its start, before its box exists, and while it runs): the daemon then
    // takes up what `corral mcp trust` accepted in the pins store since
    // (run/worker_tools.hpp). Set before serving.
    void on_refresh(std::function<void()> f) { on_refresh_ = std::move(f); }
    void refresh() const {
        if (on_refresh_) on_refresh_();
    }

private:
    mcp::ToolsConfig tools_;
    std::shared_ptr<WorkerCalls> across_runs_;
    mutable std::mutex calls_mutex_;
    std::map<std::string, std::unique_ptr<McpCalls>, std::less<>> calls_;  // by identity
    std::function<void(const std::string&)> on_sight_;
    std::function<void()> on_refresh_;
    std::map<std::string, Remote, std::less<>> remotes_;
    std::map<std::string, std::unique_ptr<StdioChannel>, std::less<>> stdio_;
    std::mutex mutex_;
    mcp::PinBook pins_;
    std::shared_ptr<const ScrubPatterns> patterns_;
    bool builtin_ = false;
    std::map<std::string, approval::AgentReport, std::less<>> reports_;  // by identity, under calls_mutex_
};

// The grant an HTTP server's dial goes by: its host and port, its
// connect_to and upstream CA; special-purpose addresses are allowed only when
// connect_to names the address (the operator wrote it down), as for nothing
// else. Throws UsageError for a connect_to that is not host:port.
config::Grant grant_for_server(const mcp::HttpServer& s);

}  // namespace corral::gateway
