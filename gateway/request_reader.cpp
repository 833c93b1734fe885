#include "gateway/request_reader.hpp"

#include <boost/asio/ssl/error.hpp>
#include <boost/beast/http/read.hpp>

namespace corral::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::awaitable;

template <class Stream>
awaitable<HeadResult> read_head(Conn& c, Stream& s, bool first) {
    HeadResult r;
    if (!first && c.buf.size() == 0 && c.gw.draining.load(std::memory_order_relaxed)) {
        r.closed = true;  // the daemon is stopping: no next request on this connection
        co_return r;
    }
    const std::size_t max = c.limits().max_header_bytes;
    c.arm(first || c.buf.size() ? c.limits().read_timeout : c.limits().idle_timeout);
    for (;;) {
        auto data = c.buf.data();
        std::string_view text(static_cast<const char*>(data.data()), data.size());
        HeadScan scan = scan_head(text.substr(0, std::min(text.size(), max + 1)));
        if (scan.bare_lf) {
            r.refusal = Refusal{std::string(reason::smuggling), "bare LF line ending"};
            co_return r;
        }
        if (scan.end != std::string_view::npos) {
            r.length = scan.end;
            co_return r;
        }
        if (text.size() > max) {
            r.refusal = Refusal{std::string(reason::headers_too_large),
                                "request head exceeds max_header_bytes (" + std::to_string(max) + ")"};
            co_return r;
        }
        bool had_bytes = text.size() != 0;
        auto [ec, n] = co_await s.async_read_some(c.buf.prepare(std::min<std::size_t>(8192, c.buf.max_size() - c.buf.size())), nothrow);
        if (ec || n == 0) {
            if (c.timed_out)
                r.refusal = Refusal{std::string(reason::timeout), "request head not complete within read_timeout"};
            else if (had_bytes)
                r.refusal = Refusal{std::string(reason::bad_request), "connection closed inside the request head"};
            else
                r.closed = true;
            // A raw end of stream (the box's process is gone, or cut its TCP
            // side) brings no close_notify: waiting for one would only hold
            // the connection, and in daemon mode the run's end, until the
            // shutdown's bound.
            if (ec == asio::ssl::error::stream_truncated) c.client_gone = true;
            co_return r;
        }
        c.buf.commit(n);
        if (!had_bytes && !first) c.arm(c.limits().read_timeout);
    }
}

void parse_request_head(Conn& c, std::size_t head_len, ParsedRequest& out) {
    auto data = c.buf.data();
    std::string_view head(static_cast<const char*>(data.data()), head_len);
    if (auto refused = check_request_framing(head)) {
        out.refusal = std::move(*refused);
        return;
    }
    auto& p = out.parser.emplace();
    p.header_limit(static_cast<std::uint32_t>(std::min<std::uint64_t>(c.limits().max_header_bytes + 4, UINT32_MAX)));
    p.body_limit(c.limits().max_body_bytes);
    p.eager(false);
    beast::error_code ec;
    std::size_t used = p.put(asio::buffer(data.data(), head_len), ec);
    if (ec == http::error::body_limit) {
        c.body_pending = true;  // the client may be sending it already
        out.refusal = Refusal{std::string(reason::body_too_large),
                              "Content-Length exceeds max_body_bytes (" + std::to_string(c.limits().max_body_bytes) + ")"};
        return;
    }
    if (!p.refusal().reason.empty()) {
        out.refusal = Refusal{std::string(p.refusal().reason), std::string(p.refusal().detail)};
        return;
    }
    if (ec || !p.is_header_done()) {
        out.refusal = Refusal{std::string(reason::bad_request),
                              ec ? "malformed request head (" + ec.message() + ")" : "malformed request head"};
        return;
    }
    c.buf.consume(used);
    c.body_pending = !p.is_done();
}

namespace {

// The refusal for a request body that could not be read whole.
Refusal body_refusal(Conn& c, const RequestParser& p, beast::error_code ec) {
    if (!p.refusal().reason.empty()) return {std::string(p.refusal().reason), std::string(p.refusal().detail)};
    if (ec == http::error::body_limit)
        return {std::string(reason::body_too_large),
                "request body exceeds max_body_bytes (" + std::to_string(c.limits().max_body_bytes) + ")"};
    if (ec == http::error::buffer_overflow)
        // A chunk-size line (or trailer) that does not end within the read buffer.
        return {std::string(reason::body_too_large),
                "a chunk line exceeds the read buffer (" + std::to_string(c.buf.max_size()) + " bytes)"};
    if (c.timed_out) return {std::string(reason::timeout), "request body not complete within read_timeout"};
    return {std::string(reason::bad_request), "bad request body (" + ec.message() + ")"};
}

}  // namespace

template <class Stream>
awaitable<std::optional<Refusal>> read_body(Conn& c, Stream& s, RequestParser& p) {
    if (p.is_done()) co_return std::nullopt;
    c.arm(c.limits().read_timeout);
    auto [ec, n] = co_await http::async_read(s, c.buf, p, nothrow);
    (void)n;
    if (ec) co_return body_refusal(c, p, ec);
    c.body_pending = false;
    co_return std::nullopt;
}

template awaitable<HeadResult> read_head(Conn&, ClientSocket&, bool);
template awaitable<HeadResult> read_head(Conn&, ClientTls&, bool);
template awaitable<std::optional<Refusal>> read_body(Conn&, ClientSocket&, RequestParser&);
template awaitable<std::optional<Refusal>> read_body(Conn&, ClientTls&, RequestParser&);

}  // namespace corral::gateway
