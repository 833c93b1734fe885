// gateway/mcp_dispatch.cpp — where an allowed MCP message goes
// (forward_to_server, gateway/mcp_forward.hpp): a remote server's over TLS,
// or a stdio server's over its pipes. Either way the answer comes back as an
// McpUpstreamAnswer for govern_answer.
#include <boost/beast/http.hpp>

#include "gateway/mcp_builtin.hpp"
#include "gateway/mcp_forward.hpp"
#include "gateway/mcp_stdio.hpp"

namespace corral::gateway {

namespace asio = boost::asio;
using asio::awaitable;

namespace {

awaitable<McpForward> forward_stdio(Conn& c, StdioChannel& channel, const Request& box, const mcp::ReadResult& read) {
    std::optional<std::string> session;
    if (auto it = box.find("mcp-session-id"); it != box.end()) session = std::string(it->value());
    McpForward f;
    StdioRequest request;
    try {
        request = stdio_request(box.body(), read.messages, read.batch, std::move(session));
    } catch (const std::exception& e) {
        // read_message read it strictly; nlohmann reading it otherwise is a bug, said so.
        f.refusal = Refusal{std::string(reason::upstream_protocol),
                            std::string("the message could not be written as one line: ") + e.what(), Phase::upstream};
    }
    if (f.refusal) co_return f;
    request.deadline = std::chrono::steady_clock::now() + c.limits().idle_timeout;
    // The connection's watchdog waits longer than the exchange's own deadline.
    c.arm(c.limits().idle_timeout + std::chrono::seconds(5));
    StdioResult r = co_await channel.exchange_async(std::move(request));
    f.refusal = std::move(r.refusal);
    f.answer = std::move(r.answer);
    co_return f;
}

}  // namespace

awaitable<McpForward> forward_to_server(Conn& c, McpTools& tools, const std::string& server, const Request& box,
                                        const mcp::ReadResult& read) {
    if (const auto* remote = tools.remote(server)) co_return co_await forward_mcp(c, *remote, box);
    if (auto* channel = tools.stdio(server)) co_return co_await forward_stdio(c, *channel, box, read);
    if (tools.is_builtin(server)) {  // answered here: nothing to forward
        McpForward f;
        const std::string identity = c.id.str();
        f.answer = answer_builtin(read, [&](const approval::AgentReport& r) { tools.take_report(identity, r); });
        co_return f;
    }
    McpForward f;  // check_request let through only a server tools.serves(): never here
    f.refusal = Refusal{std::string(reason::upstream_connect), "MCP server " + server + " is not served", Phase::upstream};
    co_return f;
}

}  // namespace corral::gateway
