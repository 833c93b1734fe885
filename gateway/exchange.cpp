#include "gateway/exchange.hpp"

#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>

#include <charconv>
#include <optional>
#include <span>

#include "gateway/relay.hpp"

namespace corral::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::awaitable;
using ResponseParser = StrictResponseParser<http::buffer_body>;

namespace {

constexpr std::size_t kChunkSize = 16 * 1024;
// Interim (1xx) responses relayed before the final one: 103 Early Hints is
// sent once or twice in practice; more is an upstream stalling or flooding.
constexpr int kMaxInterimResponses = 8;

bool is_hop_by_hop(std::string_view name) {
    for (std::string_view h : {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                               "upgrade", "proxy-authenticate", "proxy-authorization"})
        if (iequals(name, h)) return true;
    return false;
}

std::string response_head(const ResponseParser& rp, bool chunked, bool until_eof, bool upgraded) {
    const auto& res = rp.get();
    std::string head;
    head.reserve(512);  // before the first append: one allocation for a typical head
    head.append("HTTP/1.1 ").append(std::to_string(res.result_int())).append(" ").append(res.reason()).append("\r\n");
    for (const auto& f : res) {
        if (is_hop_by_hop(f.name_string()) && !(upgraded && iequals(f.name_string(), "upgrade"))) continue;
        head.append(f.name_string()).append(": ").append(f.value()).append("\r\n");
    }
    if (chunked) head += "Transfer-Encoding: chunked\r\n";
    if (upgraded) head += "Connection: Upgrade\r\n";
    else if (until_eof) head += "Connection: close\r\n";
    head += "\r\n";
    return head;
}

// Feeds the body bytes `buf` already holds to the parser (into the body piece
// it points at) without I/O. Beast's async_read_some does the same but, when
// it needs no I/O, posts its completion: one more trip through the event loop
// (and an epoll_wait) for every response whose body came with its head.
// Returns a parse error; "needs more bytes" and "piece full" are not errors.
beast::error_code parse_buffered(ResponseParser& rp, beast::flat_buffer& buf) {
    beast::error_code ec;
    while (buf.size() != 0 && !rp.is_done() && rp.get().body().size != 0) {
        std::size_t used = rp.put(buf.data(), ec);
        buf.consume(used);
        if (ec == http::error::need_more || ec == http::error::need_buffer) return {};
        if (ec || used == 0) break;
    }
    return ec;
}

// Whether more of the response is here already, so that reading it costs
// no wait for the network: bytes in a plain socket, or, from a TLS upstream,
// decrypted bytes in the engine or a whole record waiting in its input. An
// upstream that writes each few events in a record of its own (an SSE
// stream in a burst) then reaches the box in one write of up to kChunkSize,
// not one TLS record and send() per record: 33 696 sends for 16 MiB of
// 500-byte records before (docs/benchmarks.md, session 46). Whatever needs
// the network is flushed first, so a stream's events are never held back:
// only a record with no data in it (a TLS 1.3 session ticket or key update,
// which can only be told apart by reading it) can make the bytes wait for
// the next record.
bool more_is_buffered(asio::ip::tcp::socket& up) {
    beast::error_code ec;
    return up.available(ec) > 0 && !ec;
}

bool more_is_buffered(UpstreamTls& up) {
    SSL* ssl = up.native_handle();
    if (SSL_pending(ssl) > 0) return true;
    // Asio's engine feeds OpenSSL through a BIO pair: what waits in it is
    // ciphertext, a whole record only when its 5-byte header's length is there.
    BIO* in = SSL_get_rbio(ssl);
    const std::size_t waiting = BIO_ctrl_pending(in);
    if (waiting < 5) return false;
    char* head = nullptr;
    if (BIO_nread0(in, &head) < 5 || !head) return false;  // the header wraps the pair's ring: flush now
    const std::size_t record = 5 + ((static_cast<std::size_t>(static_cast<unsigned char>(head[3])) << 8) |
                                    static_cast<unsigned char>(head[4]));
    return waiting >= record;
}

// The one place response bytes are written to the box (WebSocket frames
// aside: relay_upgraded). One contiguous buffer per call: a TLS stream turns
// each buffer of a sequence into its own record and send(). With a scrub, the
// bytes given here have been through it.
template <class Client>
awaitable<bool> write_to_client(Client& client, std::string_view bytes) {
    auto [ec, n] = co_await asio::async_write(client, asio::buffer(bytes.data(), bytes.size()), nothrow);
    co_return !ec;
}

// Appends one piece of a response body as the client's framing wants it (a
// chunk of its own when re-chunking); nothing for an empty piece, which in a
// chunked body would be its end.
void append_body_piece(std::string& out, std::string_view piece, bool chunked) {
    if (piece.empty()) return;
    if (chunked) {
        char size_line[24];
        auto r = std::to_chars(size_line, size_line + 16, piece.size(), 16);
        *r.ptr++ = '\r', *r.ptr++ = '\n';
        out.append(size_line, r.ptr);
    }
    out.append(piece);
    if (chunked) out.append("\r\n");
}

// The state of one response being relayed.
struct Response {
    std::optional<ResponseParser> parser;
    bool upgraded = false;
    bool chunked = false;
    bool until_eof = false;  // framed by the connection's end: the client's connection closes after it
    std::string head;        // not yet written to the client
};

// Step 1: the request leaves in one buffer, so head and body leave in one TLS
// record and one send; a request without a body (most of them) needs no copy.
template <class Up>
awaitable<bool> send_request(Conn& c, Up& up, const OutgoingRequest& req, Exchange& x) {
    c.arm(c.limits().idle_timeout);
    std::string message;
    if (!req.body.empty()) {
        message.reserve(req.head.size() + req.body.size());
        message.append(req.head).append(req.body);
    }
    const std::string& bytes = req.body.empty() ? req.head : message;
    if (auto [ec, n] = co_await asio::async_write(up, asio::buffer(bytes), nothrow); ec) {
        x.reason = c.timed_out ? reason::timeout : reason::upstream_connect;
        x.detail = "upstream closed the connection while the request was sent";
        x.nothing_received = true;
        co_return false;
    }
    x.bytes_up = req.body.size();
    co_return true;
}

// The box went away while the exchange waited on the upstream
// (ClientDepartureWatch cancelled the upstream read): said as such, not as
// the upstream's fault or a timeout.
bool departed(const Conn& c, Exchange& x) {
    if (!c.client_departed) return false;
    x.reason = reason::client_gone;
    x.detail = "the client went away while the response was awaited";
    return true;
}

// Step 2: reads response heads until the final one, relaying interim (1xx)
// ones (103 Early Hints) as they come. They count as response bytes (an
// endless stream of them must hit max_response_bytes like any body) and only
// a few are allowed per request.
template <class Client, class Up>
awaitable<bool> read_final_head(Conn& c, Client& client, Up& up, beast::flat_buffer& upbuf, bool head_request,
                                ResponseScrub* scrub, Response& r, Exchange& x) {
    const std::uint64_t cap = c.limits().max_response_bytes;
    for (int interim_count = 0;; ++interim_count) {
        auto& rp = r.parser.emplace();
        rp.header_limit(kMaxResponseHead);
        rp.body_limit(boost::none);
        if (head_request) rp.skip(true);
        c.arm(c.limits().idle_timeout);
        auto [ec, n] = co_await http::async_read_header(up, upbuf, rp, nothrow);
        if (ec) {
            if (departed(c, x)) co_return false;
            x.nothing_received = interim_count == 0 &&
                                 (ec == http::error::end_of_stream || ec == asio::error::eof ||
                                  ec == asio::error::connection_reset || ec == asio::ssl::error::stream_truncated) &&
                                 upbuf.size() == 0;
            x.reason = c.timed_out ? reason::timeout
                                   : (x.nothing_received ? reason::upstream_connect : reason::upstream_protocol);
            x.detail = c.timed_out ? "no response within idle_timeout"
                                   : "upstream sent no valid response (" + ec.message() + ")";
            co_return false;
        }
        int status = rp.get().result_int();
        if (status < 100 || status >= 200 || status == 101) co_return true;
        if (interim_count == kMaxInterimResponses) {
            x.reason = reason::upstream_protocol;
            x.detail = "more than " + std::to_string(kMaxInterimResponses) + " interim (1xx) responses";
            co_return false;  // nothing final was sent: the client gets a 502 after the interim ones
        }
        std::string interim = response_head(rp, false, false, false);
        if (scrub) scrub->scrub_head(interim);
        if (x.bytes_down + interim.size() > cap) {
            x.reason = reason::response_too_large, x.status = status;
            x.detail = "interim responses exceed max_response_bytes (" + std::to_string(cap) + ")";
            c.close_io();
            co_return false;
        }
        if (!co_await write_to_client(client, interim)) {
            x.reason = reason::client_gone, x.detail = "client went away", x.status = status;
            co_return false;
        }
        x.bytes_down += interim.size();
    }
}

// Step 3: the final head is acceptable (a 101 only for the WebSocket upgrade
// the box asked for) and how the body is framed. The head goes out with the
// first body bytes (one TLS record, one send) when those are already here;
// otherwise at once, so a client waiting for headers (an SSE stream before
// its first event) is not held back. With a scrub, a response the scrubber
// could not read (a WebSocket extension, a compressed body) is refused before
// any of it is sent, and the head is scrubbed.
template <class Client>
awaitable<bool> start_response(Client& client, beast::flat_buffer& upbuf, const OutgoingRequest& req, Response& r,
                               Exchange& x) {
    const bool websocket = req.websocket;
    ResponseScrub* scrub = req.scrub;
    auto& rp = *r.parser;
    auto& res = rp.get();
    r.upgraded = res.result_int() == 101;
    if (r.upgraded && !(websocket && contains_token(res[http::field::upgrade], "websocket"))) {
        x.reason = reason::upstream_protocol;
        x.detail = websocket ? "101 Switching Protocols to something other than WebSocket"
                             : "101 Switching Protocols without a WebSocket upgrade request";
        co_return false;  // a failed exchange: the connection is dropped, never pooled
    }
    if (scrub && r.upgraded && res.find(http::field::sec_websocket_extensions) != res.end()) {
        x.reason = reason::upstream_protocol;
        x.detail = "101 Switching Protocols with a WebSocket extension the gateway did not offer";
        co_return false;
    }
    if (scrub && !rp.is_done()) {
        // A body the scrubber cannot read is never passed on (the request asked for identity).
        auto [enc, enc_end] = res.equal_range(http::field::content_encoding);
        for (; enc != enc_end; ++enc) {
            if (auto why = unscannable_encoding(enc->value()); !why.empty()) {
                x.reason = reason::upstream_encoding, x.detail = why;
                co_return false;  // nothing sent yet: the box gets a 502, the connection is dropped
            }
        }
    }
    x.status = res.result_int();
    if (req.observer) req.observer->on_head(x.status, res[http::field::content_type]);
    r.chunked = rp.chunked();
    r.until_eof = !r.upgraded && !rp.is_done() && !r.chunked && !rp.content_length();
    r.head = response_head(rp, r.chunked, r.until_eof, r.upgraded);
    if (scrub) scrub->scrub_head(r.head);
    if (r.upgraded || rp.is_done() || upbuf.size() == 0) {
        if (!co_await write_to_client(client, r.head)) {
            x.reason = reason::client_gone, x.detail = "client went away";
            co_return false;
        }
        r.head.clear();
    }
    co_return true;
}

// Step 4a, an upgraded connection: leftovers first (an upstream may send a
// frame right behind its 101, the box right behind its request), then both
// directions until either closes. With a scrub the upstream's frames
// (leftovers included) pass its WebSocket scrubber; a frame it cannot scan
// cuts the connection (upstream_protocol).
template <class Client, class Up>
awaitable<void> relay_upgrade(Conn& c, Client& client, Up& up, beast::flat_buffer& upbuf, ResponseScrub* scrub,
                              ResponseObserver* observer, Exchange& x) {
    if (upbuf.size()) {
        std::string scrubbed;
        std::string_view left(static_cast<const char*>(upbuf.data().data()), upbuf.size());
        if (observer) observer->on_upgraded(left);
        if (scrub) {
            if (auto why = scrub->websocket.feed(left, scrubbed); !why.empty()) {
                x.reason = reason::upstream_protocol, x.detail = std::string(why);
                c.close_io();
                co_return;
            }
            left = scrubbed;
        }
        auto [ec, n] = co_await asio::async_write(client, asio::buffer(left.data(), left.size()), nothrow);
        if (!ec) x.bytes_down += upbuf.size();
        upbuf.consume(upbuf.size());
    }
    if (c.buf.size()) {
        auto [ec, n] = co_await asio::async_write(up, c.buf.data(), nothrow);
        if (!ec) x.bytes_up += n;
        c.buf.consume(c.buf.size());
    }
    std::string problem;
    co_await relay_upgraded(c, client, up, x.bytes_up, x.bytes_down, scrub ? &scrub->websocket : nullptr, &problem,
                            observer);
    if (!problem.empty()) x.reason = reason::upstream_protocol, x.detail = problem;
}

// Step 4b: the body, piece by piece as it arrives, re-framed (chunked stays
// chunked), cut hard at max_response_bytes; with a scrub, each piece as the
// scrubber lets it through.
template <class Client, class Up>
awaitable<bool> relay_body(Conn& c, Client& client, Up& up, beast::flat_buffer& upbuf, ResponseScrub* scrub,
                           ResponseObserver* observer, Response& r, Exchange& x) {
    const std::uint64_t cap = c.limits().max_response_bytes;
    auto& rp = *r.parser;
    // Per-connection buffers: allocated on the first response, reused after.
    if (!c.chunk) c.chunk = std::make_unique_for_overwrite<char[]>(kChunkSize);
    std::span<char> chunk(c.chunk.get(), kChunkSize);
    std::string& out = c.out;
    out.reserve(kChunkSize + r.head.size() + 32);
    std::size_t got = 0;  // body bytes in `chunk`, not yet relayed
    while (!rp.is_done()) {
        rp.get().body().data = chunk.data() + got;
        rp.get().body().size = chunk.size() - got;
        beast::error_code ec = parse_buffered(rp, upbuf);
        if (!ec && !rp.is_done() && rp.get().body().size == chunk.size() - got) {
            c.arm(c.limits().idle_timeout);
            auto [rec, n] = co_await http::async_read_some(up, upbuf, rp, nothrow);
            ec = rec == http::error::need_buffer ? beast::error_code{} : rec;
        }
        got = chunk.size() - rp.get().body().size;
        // More is here already: gather it into this write (more_is_buffered).
        // (What `upbuf` still holds after parse_buffered is a part the parser
        // needs more bytes for: not a reason to wait.)
        if (!ec && !rp.is_done() && got < chunk.size() && more_is_buffered(up)) continue;
        if (got) {
            if (x.bytes_down + got > cap) {
                // Hard cut: the client sees a truncated message and a closed connection.
                x.reason = reason::response_too_large;
                x.detail = "response exceeds max_response_bytes (" + std::to_string(cap) + ")";
                c.close_io();
                co_return false;
            }
            std::string_view piece(chunk.data(), got);
            if (observer) observer->on_body(piece);
            if (scrub) {
                // The scrubber may hold back the start of a possible match
                // (never more than a form's length): those bytes follow with
                // the next piece or at the end, Content-Length stays right.
                c.scrubbed.clear();
                scrub->body.feed(piece, c.scrubbed);
                piece = c.scrubbed;
            }
            out.assign(r.head);
            r.head.clear();
            append_body_piece(out, piece, r.chunked);
            if (!out.empty()) {  // empty: the scrubber holds the whole piece back for now
                if (!co_await write_to_client(client, out)) {
                    x.reason = reason::client_gone, x.detail = "client went away during the response";
                    co_return false;
                }
            }
            x.bytes_down += got;
            got = 0;
        }
        if (ec == http::error::end_of_stream && r.until_eof) break;
        if (ec) {
            if (departed(c, x)) {
                c.close_io();
                co_return false;
            }
            // A cut, not a refusal: the head (and maybe some body) is already out.
            x.reason = c.timed_out ? reason::timeout : reason::upstream_protocol;
            x.detail = c.timed_out                          ? "upstream stalled for idle_timeout"
                       : !rp.refusal().reason.empty()        ? std::string(rp.refusal().detail)
                       : ec == http::error::buffer_overflow ? "a chunk line exceeds the upstream read buffer"
                                                            : "response broke off (" + ec.message() + ")";
            c.close_io();
            co_return false;
        }
    }
    co_return true;
}

// Step 5: the end of the message (a chunked body's last chunk, or a head
// still held back, and with a scrub the bytes it still held back), and
// whether either connection can carry another one.
template <class Client>
awaitable<void> finish_response(Conn& c, Client& client, beast::flat_buffer& upbuf, ResponseScrub* scrub, Response& r,
                                Exchange& x) {
    if (scrub) {
        c.scrubbed.clear();
        scrub->body.finish(c.scrubbed);
        append_body_piece(r.head, c.scrubbed, r.chunked);
    }
    if (r.chunked) r.head += "0\r\n\r\n";
    if (!r.head.empty()) {
        // Not `a && co_await b`: GCC 12 miscompiles co_await in a short-circuit operand.
        bool written = co_await write_to_client(client, r.head);
        if (!written) {
            x.reason = reason::client_gone, x.detail = "client went away";
            co_return;
        }
    }
    // Bytes behind a complete response are not an answer to anything we sent:
    // a connection holding them is never used again.
    x.upstream_reusable = r.parser->keep_alive() && !r.until_eof && upbuf.size() == 0;
    x.client_reusable = !r.until_eof;
}

}  // namespace

template <class Client, class Up>
awaitable<Exchange> exchange(Conn& c, Client& client, Up& up, beast::flat_buffer& upbuf, const OutgoingRequest& req) {
    Exchange x;
    Response r;
    if (!co_await send_request(c, up, req, x)) co_return x;
    // From here until the body is relayed the exchange waits on the upstream:
    // a box that leaves meanwhile ends it now (departed()).
    ClientDepartureWatch watch(c);
    if (!co_await read_final_head(c, client, up, upbuf, req.head_request, req.scrub, r, x)) co_return x;
    if (!co_await start_response(client, upbuf, req, r, x)) co_return x;
    if (r.upgraded) {
        watch.stop();  // the upgraded relay reads the box itself
        co_await relay_upgrade(c, client, up, upbuf, req.scrub, req.observer, x);
        co_return x;
    }
    if (!co_await relay_body(c, client, up, upbuf, req.scrub, req.observer, r, x)) co_return x;
    watch.stop();
    co_await finish_response(c, client, upbuf, req.scrub, r, x);
    co_return x;
}

template awaitable<Exchange> exchange(Conn&, ClientTls&, UpstreamTls&, beast::flat_buffer&, const OutgoingRequest&);
template awaitable<Exchange> exchange(Conn&, ClientSocket&, asio::ip::tcp::socket&, beast::flat_buffer&,
                                      const OutgoingRequest&);

std::string request_head(const Request& req, std::string_view target, bool websocket, bool has_body) {
    std::string head;
    head.reserve(1024);
    head.append(req.method_string()).append(" ").append(target).append(" HTTP/1.1\r\n");
    for (const auto& f : req) {
        auto name = f.name_string();
        if (iequals(name, "content-length") || iequals(name, "expect")) continue;
        if (is_hop_by_hop(name) && !(websocket && iequals(name, "upgrade"))) continue;
        head.append(name).append(": ").append(f.value()).append("\r\n");
    }
    if (websocket) head += "Connection: Upgrade\r\n";
    if (has_body) head.append("Content-Length: ").append(std::to_string(req.body().size())).append("\r\n");
    head += "\r\n";
    return head;
}

bool is_websocket_upgrade(const Request& req) {
    if (req.method() != http::verb::get) return false;
    auto up = req.find(http::field::upgrade);
    return up != req.end() && contains_token(up->value(), "websocket");
}

bool request_has_body(const Request& req) {
    return req.find(http::field::content_length) != req.end() || req.find(http::field::transfer_encoding) != req.end();
}

}  // namespace corral::gateway
