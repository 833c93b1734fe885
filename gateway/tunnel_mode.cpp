#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include "gateway/exchange.hpp"
#include "gateway/grants.hpp"
#include "gateway/modes.hpp"
#include "gateway/relay.hpp"

namespace corral::gateway {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::awaitable;

awaitable<void> serve_tunnel(std::shared_ptr<Conn> cp, Target t, Clock::time_point started) {
    Conn& c = *cp;
    LedgerEntry e;
    e.mode = "tunnel", e.method = "CONNECT", e.host = t.host.text(), e.port = t.port;
    asio::ip::tcp::socket up(c.client.get_executor());
    if (!co_await dial(c, up, t)) {
        const Refusal r = dial_refusal(c, t);  // named: see refuse() in connection.hpp
        co_await refuse(c, c.client, e, r, started);
        co_return;
    }
    static const char kEstablished[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
    c.arm(c.limits().idle_timeout);
    // A captured connection asked for no tunnel: its first bytes (in c.buf) are the upstream's.
    if (!c.captured)
        if (auto [ec, n] = co_await asio::async_write(c.client, asio::buffer(kEstablished, sizeof kEstablished - 1), nothrow); ec)
            co_return;
    e.status = 200;
    if (c.buf.size()) {
        auto [ec, n] = co_await asio::async_write(up, c.buf.data(), nothrow);
        if (!ec) e.bytes_up += n;
        c.buf.consume(c.buf.size());
    }
    co_await relay_sockets(c, c.client, up, e.bytes_up, e.bytes_down);
    if (c.timed_out) e.reason = reason::timeout;
    e.duration_ms = ms_since(started);
    record(c, e);
    c.upstream = nullptr;
}

awaitable<void> serve_plain(std::shared_ptr<Conn> cp, Target t, ParsedRequest& pr, std::string path,
                            Clock::time_point started) {
    Conn& c = *cp;
    Request& req = pr.parser->get();
    LedgerEntry e;
    e.mode = "tunnel", e.method = std::string(req.method_string()), e.host = t.host.text(), e.port = t.port;
    auto norm = normalize_route_path(path);
    e.path = norm ? *norm : path.substr(0, 256);
    if (auto r = co_await read_body(c, c.client, *pr.parser)) {
        co_await refuse(c, c.client, e, *r, started);
        co_return;
    }
    // The Host header must name the target too: an upstream that routes by Host
    // must not be steered to another virtual host than the one granted.
    req.set(http::field::host, t.port == 80 ? t.host.text() : t.host.text() + ":" + std::to_string(t.port));
    asio::ip::tcp::socket up(c.client.get_executor());
    if (!co_await dial(c, up, t)) {
        const Refusal r = dial_refusal(c, t);  // named: see refuse() in connection.hpp
        co_await refuse(c, c.client, e, r, started);
        co_return;
    }
    bool websocket = is_websocket_upgrade(req);
    std::string head = request_head(req, path, websocket, request_has_body(req) || req.body().size());
    boost::beast::flat_buffer upbuf(kUpstreamReadBuffer);
    const OutgoingRequest out{head, req.body(), req.method() == http::verb::head, websocket};
    Exchange x = co_await exchange(c, c.client, up, upbuf, out);
    e.status = x.status, e.bytes_up = x.bytes_up, e.bytes_down = x.bytes_down;
    if (box_gets_refusal(x)) {
        const Refusal r = refusal_of(x);
        co_await refuse(c, c.client, e, r, started);
        co_return;
    }
    e.reason = x.reason;
    e.duration_ms = ms_since(started);
    record(c, e);
    boost::system::error_code ec;
    c.client.shutdown(asio::socket_base::shutdown_send, ec);
    c.upstream = nullptr;
}

}  // namespace corral::gateway
