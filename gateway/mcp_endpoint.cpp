#include "gateway/mcp_endpoint.hpp"

#include "base/sys_error.hpp"
#include "config/gateway_values.hpp"
#include "gateway/mcp_builtin.hpp"
#include "gateway/mcp_stdio.hpp"

namespace corral::gateway {

config::Grant grant_for_server(const mcp::HttpServer& s) {
    config::Grant g;
    g.port = s.port;
    g.mode = config::GrantMode::inject;
    g.credential = s.credential;
    g.upstream_ca_file = s.upstream_ca_file;
    if (!s.connect_to.empty()) {
        auto hp = config::parse_host_port(s.connect_to, names::PortZero::refused);
        if (!hp)
            throw UsageError("MCP server " + s.url + ": connect_to " + json_quoted(s.connect_to) +
                             " is not \"host:port\" or \"[v6]:port\" (port 1..65535)");
        g.connect_to = s.connect_to;
        g.connect_host = hp->host;
        g.connect_port = hp->port;
        // The operator wrote this address down for this server: a loopback
        // or private address is what was meant, as a grant's allow_private.
        g.allow_private = true;
    }
    return g;
}

McpTools::McpTools(mcp::ToolsConfig tools, std::shared_ptr<WorkerCalls> across_runs)
    : tools_(std::move(tools)), across_runs_(std::move(across_runs)) {
    for (const auto& [name, server] : tools_.servers)
        if (const auto* http = std::get_if<mcp::HttpServer>(&server.transport))
            remotes_.emplace(name, Remote{http, grant_for_server(*http)});
    for (const auto& [key, digest] : tools_.pins) {
        auto slash = key.find('/');
        if (slash != std::string::npos) pins_.pin(key.substr(0, slash), key.substr(slash + 1), digest);
    }
}

McpTools::~McpTools() = default;

void McpTools::serve_builtin() {
    builtin_ = true;
    tools_.policy.servers.insert(std::string(kBuiltinServer));
    tools_.policy.rules.push_back(builtin_rule());
}

bool McpTools::is_builtin(std::string_view name) const { return builtin_ && name == kBuiltinServer; }

bool McpTools::allows_server_requests(std::string_view name) const {
    auto it = tools_.servers.find(std::string(name));
    return it != tools_.servers.end() && it->second.allow_server_requests;
}

void McpTools::take_report(const std::string& identity, approval::AgentReport report) {
    std::lock_guard lock(calls_mutex_);
    reports_[identity] = std::move(report);
}

std::optional<approval::AgentReport> McpTools::report(const std::string& identity) const {
    std::lock_guard lock(calls_mutex_);
    auto it = reports_.find(identity);
    if (it == reports_.end()) return std::nullopt;
    return it->second;
}

McpCalls& McpTools::calls(const std::string& identity) {
    std::lock_guard lock(calls_mutex_);
    auto& c = calls_[identity];
    if (!c) c = std::make_unique<McpCalls>(tools_.budgets, across_runs_);
    return *c;
}

ToolCallCounts McpTools::counts(const std::string& identity) const {
    std::lock_guard lock(calls_mutex_);
    auto it = calls_.find(identity);
    return it == calls_.end() ? ToolCallCounts{} : it->second->counts();
}

StdioChannel* McpTools::stdio(std::string_view name) const {
    auto it = stdio_.find(name);
    return it == stdio_.end() ? nullptr : it->second.get();
}

void McpTools::serve_stdio(std::shared_ptr<StdioLauncher> launcher, std::size_t max_line) {
    for (const auto& [name, server] : tools_.servers)
        if (const auto* s = std::get_if<mcp::StdioServer>(&server.transport))
            stdio_.emplace(name, std::make_unique<StdioChannel>(name, *s, launcher, max_line));
}

const McpTools::Remote* McpTools::remote(std::string_view name) const {
    auto it = remotes_.find(name);
    return it == remotes_.end() ? nullptr : &it->second;
}

std::shared_ptr<const ScrubPatterns> McpTools::scrub_patterns(const std::map<std::string, std::string>& secrets) {
    std::lock_guard lock(mutex_);
    if (!patterns_) {
        std::vector<std::string> all;
        for (const auto& [name, value] : secrets) all.push_back(value);
        patterns_ = std::make_shared<const ScrubPatterns>(all);
    }
    return patterns_;
}

}  // namespace corral::gateway
