#include "gateway/mcp_forward.hpp"

#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include "gateway/exchange.hpp"
#include "gateway/headers.hpp"
#include "gateway/http_framing.hpp"
#include "gateway/upstream.hpp"

namespace corral::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::awaitable;

namespace {

// The only fields of the box's request that reach the server.
constexpr std::string_view kPassedFields[] = {"mcp-session-id", "mcp-protocol-version", "mcp-method", "mcp-name",
                                              "last-event-id"};

// The request as it leaves for the server; with the credential injected
// (rewrite_request_headers) when the server names one. A refusal when the
// credential is named but not installed (fail closed: never sent without).
std::optional<Refusal> outgoing_request(Conn& c, const McpTools::Remote& remote, const Request& box, Request& out,
                                        std::string& credential) {
    const mcp::HttpServer& s = *remote.server;
    out.method(http::verb::post);
    out.target(s.path);
    out.version(11);
    out.set(http::field::host, s.port == 443 ? s.host : s.host + ":" + std::to_string(s.port));
    out.set(http::field::content_type, "application/json");
    out.set(http::field::accept, "application/json, text/event-stream");
    for (const auto& f : box)
        for (auto name : kPassedFields)
            if (iequals(f.name_string(), name)) out.insert(f.name_string(), f.value());
    out.body() = box.body();
    if (s.credential.empty()) return std::nullopt;
    auto ci = c.gw.cfg.credentials.find(s.credential);
    auto si = c.gw.secrets.find(s.credential);
    if (ci == c.gw.cfg.credentials.end() || si == c.gw.secrets.end())
        return Refusal{std::string(reason::upstream_connect),
                       "credential " + s.credential + " of MCP server " + s.url + " is not installed", Phase::upstream};
    const config::CredentialSpec spec = config::credential_for_grant(ci->second, remote.grant);
    rewrite_request_headers(static_cast<http::fields&>(out), spec, si->second);
    request_scannable_response(static_cast<http::fields&>(out));
    credential = s.credential;
    return std::nullopt;
}

// How one exchange on an upstream connection ended.
struct McpExchange {
    std::optional<Refusal> refusal;
    bool nothing_received = false;  // the connection failed before a byte of an answer
    bool reusable = false;          // a whole answer, keep-alive: the connection may go back to the pool
};

// Reads the whole answer, its body capped at max_response_bytes.
awaitable<McpExchange> read_server_answer(Conn& c, UpstreamConn& up, McpUpstreamAnswer& a) {
    McpExchange x;
    StrictResponseParser<http::string_body> rp;
    rp.header_limit(kMaxResponseHead);
    rp.body_limit(c.limits().max_response_bytes);
    c.arm(c.limits().idle_timeout);
    auto [ec, n] = co_await http::async_read(up.stream, up.buf, rp, nothrow);
    if (ec == http::error::body_limit) {
        a.oversize = true;
        a.status = rp.get().result_int();
        co_return x;
    }
    if (ec) {
        x.nothing_received = n == 0 && !c.timed_out;
        x.refusal = Refusal{std::string(c.timed_out ? reason::timeout : reason::upstream_protocol),
                            c.timed_out ? "no answer within idle_timeout" : "no valid answer (" + ec.message() + ")",
                            Phase::upstream};
        co_return x;
    }
    auto& res = rp.get();
    for (auto [enc, end] = res.equal_range(http::field::content_encoding); enc != end; ++enc)
        if (auto why = unscannable_encoding(enc->value()); !why.empty()) {
            x.refusal = Refusal{std::string(reason::upstream_encoding), why, Phase::upstream};
            co_return x;
        }
    a.status = res.result_int();
    a.content_type = res[http::field::content_type];
    a.session_id = res["mcp-session-id"];
    a.body = std::move(res.body());
    x.reusable = res.keep_alive() && res.result_int() != 101;
    co_return x;
}

// One exchange: the request written, the answer read.
awaitable<McpExchange> exchange_mcp(Conn& c, UpstreamConn& up, const std::string& bytes, McpUpstreamAnswer& a) {
    c.arm(c.limits().idle_timeout);
    if (auto [ec, n] = co_await asio::async_write(up.stream, asio::buffer(bytes), nothrow); ec) {
        McpExchange x;
        x.nothing_received = !c.timed_out;
        x.refusal = Refusal{std::string(c.timed_out ? reason::timeout : reason::upstream_connect),
                            "the server closed the connection while the request was sent", Phase::upstream};
        co_return x;
    }
    co_return co_await read_server_answer(c, up, a);
}

}  // namespace

// The connection comes from the gateway's pool when one to exactly this
// vetted target is idle (loop_pool_key), else it is opened; a whole
// keep-alive answer puts it back. Without the pool every message paid a TCP
// and TLS handshake (docs/benchmarks.md "MCP calls"). A pooled connection
// that fails before any byte of an answer (the server closed it while idle)
// is retried once on a new one, as inject mode does: nothing was answered,
// so the server did not act on it as far as HTTP can tell.
awaitable<McpForward> forward_mcp(Conn& c, const McpTools::Remote& remote, const Request& box) {
    McpForward f;
    Request out;
    if ((f.refusal = outgoing_request(c, remote, box, out, f.credential))) co_return f;
    auto host = names::normalize_host(remote.server->host);
    if (!host.host) {
        f.refusal = Refusal{host.reason, "MCP server " + remote.server->url + " has no usable host", Phase::upstream};
        co_return f;
    }
    Target t{*host.host};
    t.port = remote.server->port;
    t.grant = &remote.grant;
    if ((f.refusal = co_await resolve_target(c, t))) co_return f;
    const std::string key = loop_pool_key(c, t);
    const std::string bytes = request_head(out, out.target(), false, true) + out.body();
    for (int attempt = 0; attempt < 2; ++attempt) {
        auto up = c.gw.pool.take(key);
        if (up && !upstream_is_quiet(*up)) up.reset();
        const bool reused = up != nullptr;
        if (!up && !(up = co_await open_upstream(c, t, f.refusal))) co_return f;
        c.upstream = &up->stream.next_layer();
        f.answer = McpUpstreamAnswer{};
        McpExchange x = co_await exchange_mcp(c, *up, bytes, f.answer);
        c.upstream = nullptr;
        f.refusal = std::move(x.refusal);
        if (x.reusable && !f.answer.oversize) c.gw.pool.put(std::move(up));
        if (!f.refusal || !(reused && x.nothing_received)) break;
    }
    co_return f;
}

}  // namespace corral::gateway
