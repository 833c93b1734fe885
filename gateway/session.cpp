// gateway/session.cpp — one client connection: the forward-proxy request,
// the grant and address decisions, then a blind tunnel, an inject-mode TLS
// session (request by request), or one plain-HTTP exchange.
//
// Every connection runs on its own strand with a watchdog coroutine beside it:
// the handler only moves a deadline (read timeout while a request head or body
// is arriving, idle timeout while waiting for bytes otherwise); the watchdog
// cancels the sockets when the deadline passes, and closes them if the handler
// has not finished two seconds later.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/x509.h>
#include <strings.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <charconv>
#include <chrono>
#include <optional>
#include <span>

#include "base/fd.hpp"
#include "base/log.hpp"
#include "gateway/headers.hpp"
#include "gateway/http_framing.hpp"
#include "gateway/internals.hpp"

namespace corral::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using namespace asio::experimental::awaitable_operators;
using asio::awaitable;
using Clock = std::chrono::steady_clock;
using ClientSocket = asio::generic::stream_protocol::socket;
using ClientTls = asio::ssl::stream<ClientSocket>;
using UpstreamTls = asio::ssl::stream<asio::ip::tcp::socket>;
using Request = http::request<http::string_body>;
using RequestParser = StrictRequestParser<http::string_body>;
using ResponseParser = StrictResponseParser<http::buffer_body>;

namespace {

constexpr auto nothrow = asio::as_tuple(asio::use_awaitable);

// Reason codes this file adds to the ledger's table (documented in docs/gateway.md).
constexpr std::string_view kCleartextInject = "cleartext_inject";      // 403: inject grant over plain http://
constexpr std::string_view kResponseTooLarge = "response_too_large";   // response cut at max_response_bytes
constexpr std::string_view kClientTls = "client_tls";                  // the box's TLS handshake failed
constexpr std::string_view kUpstreamProtocol = "upstream_protocol";    // 502: upstream sent no valid HTTP/1.1
constexpr std::string_view kLeafUnavailable = "leaf_unavailable";      // 500: no certificate for the CONNECT host
// The client read buffer holds one request head (at most max_header_bytes,
// read_head refuses more) plus one read; a body is parsed out of it as it
// arrives, so beyond that it only ever holds a chunk-size line or a trailer
// section, which Beast bounds by nothing but the buffer. Without this bound a
// chunk line that never ends grows the buffer without limit.
constexpr std::size_t kClientReadSlack = 16 * 1024;
// Each tunnel direction's pipe (F_SETPIPE_SZ; 1 MiB is Linux's default
// pipe-max-size, a smaller limit leaves the pipe at its default size). Bigger
// pipes mean fewer splice calls and wakeups per byte: relaying 1 GiB on
// loopback took ~250 ms of gateway CPU with 256 KiB pipes, ~200 ms with 1 MiB.
// Pages sit in the pipe only while bytes are in flight: idle tunnels hold none.
constexpr std::size_t kSplicePipeSize = 1024 * 1024;
constexpr std::size_t kChunkSize = 16 * 1024;
// Interim (1xx) responses relayed before the final one: 103 Early Hints is
// sent once or twice in practice; more is an upstream stalling or flooding.
constexpr int kMaxInterimResponses = 8;

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

bool has_token(std::string_view list, std::string_view token) {
    while (!list.empty()) {
        auto comma = list.find(',');
        auto item = list.substr(0, comma);
        while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
        while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
        if (iequals(item, token)) return true;
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
    }
    return false;
}

std::uint64_t ms_since(Clock::time_point t) {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count());
}

// ---------------------------------------------------------------------------
// Per-connection state shared by the handler and its watchdog.
struct Conn {
    Conn(Gateway::Internals& g, ClientSocket s, Identity i)
        : gw(g), id(std::move(i)), id_text(id.str()), client(std::move(s)), timer(client.get_executor()),
          deadline(Clock::now() + g.cfg.gateway.limits.read_timeout),
          buf(g.cfg.gateway.limits.max_header_bytes + kClientReadSlack) {}

    Gateway::Internals& gw;
    Identity id;
    std::string id_text;
    ClientSocket client;                      // moved into client_tls in inject mode
    std::unique_ptr<ClientTls> client_tls;
    std::shared_ptr<ServerTls> server_tls;    // keeps the SNI callback's host alive
    asio::ip::tcp::socket* upstream = nullptr;  // whichever upstream socket is in use, for the watchdog
    asio::steady_timer timer;
    Clock::time_point deadline;               // the first request's whole head is due by then
    Clock::time_point armed_for = Clock::time_point::max();
    bool done = false;
    bool timed_out = false;
    bool body_pending = false;                // a request body was announced and not read whole
    bool lingered = false;                    // refused, half-closed and drained: only close is left
    std::uint64_t identity_open = 0;          // connections the identity held when this one arrived, itself included
    beast::flat_buffer buf;                   // bytes read from the client, not yet consumed (bounded)
    std::unique_ptr<char[]> chunk;            // response body piece being relayed (inject/plain)
    std::string out;                          // the write being assembled for the client

    ClientSocket& client_socket() { return client_tls ? client_tls->next_layer() : client; }
    const config::GatewayLimits& limits() const { return gw.cfg.gateway.limits; }

    void arm(std::chrono::milliseconds d) {
        if (timed_out) return;
        deadline = Clock::now() + d;
        if (deadline < armed_for) timer.cancel();  // the watchdog sleeps too long: wake it to re-arm
    }
    void cancel_io() {
        boost::system::error_code ec;
        client_socket().cancel(ec);
        if (upstream) upstream->cancel(ec);
    }
    void close_io() {
        boost::system::error_code ec;
        client_socket().close(ec);
        if (upstream) upstream->close(ec);
    }
};

awaitable<void> watchdog(std::shared_ptr<Conn> c) {
    bool grace = false;
    while (!c->done) {
        // Never sleep past the shortest timeout: then a deadline that moves
        // earlier (idle → read timeout) is still caught without a timer cancel.
        auto cap = Clock::now() + std::min(c->limits().read_timeout, c->limits().idle_timeout);
        c->armed_for = std::min(c->deadline, cap);
        c->timer.expires_at(c->armed_for);
        co_await c->timer.async_wait(nothrow);
        c->armed_for = Clock::time_point::max();
        if (c->done) break;
        if (Clock::now() < c->deadline) continue;
        if (!grace) {
            // Let the handler answer 408/504 and write its ledger line.
            c->timed_out = true;
            c->cancel_io();
            c->deadline = Clock::now() + std::chrono::seconds(2);
            grace = true;
        } else {
            c->close_io();
            c->deadline = Clock::now() + std::chrono::seconds(3600);
        }
    }
}

// ---------------------------------------------------------------------------
// Answers.

const char* status_text(int status) {
    switch (status) {
        case 200: return "OK";
        case 400: return "Bad Request";
        case 403: return "Forbidden";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 413: return "Content Too Large";
        case 429: return "Too Many Requests";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        default: return "Error";
    }
}

int status_of(std::string_view reason_code) {
    if (reason_code == kCleartextInject) return 403;
    if (reason_code == kUpstreamProtocol) return 502;
    if (reason_code == kLeafUnavailable) return 500;
    return status_for_reason(reason_code);
}

// Request bytes the client sent (or announced) that the gateway has not read.
bool has_unread_input(Conn& c) {
    boost::system::error_code ec;
    return c.body_pending || c.buf.size() != 0 || c.client_socket().available(ec) != 0;
}

// After a refusal the connection closes; closing a socket that still has
// unread input makes the kernel answer with RST, which can destroy the refusal
// before the client (still sending its body) has read it. So: half-close
// (FIN after the answer), then read and discard what arrives until the client
// closes, kDrainBytes have passed or kDrainTime is up. Discarded bytes go
// nowhere: the upstream never sees them. For a TLS client the raw records are
// discarded: the TLS session is over anyway (no close_notify follows).
constexpr std::size_t kDrainBytes = 4 * 1024 * 1024;
constexpr std::chrono::seconds kDrainTime{2};

awaitable<void> drain_before_close(Conn& c) {
    auto& s = c.client_socket();
    boost::system::error_code ec;
    s.shutdown(asio::socket_base::shutdown_send, ec);
    c.lingered = true;
    if (ec) co_return;
    c.arm(kDrainTime);  // the watchdog cancels the read when it is up
    auto b = c.gw.buffers.acquire();
    for (std::size_t total = 0; total < kDrainBytes && !c.timed_out;) {
        auto [rec, n] = co_await s.async_read_some(asio::buffer(b.get(), BufferPool::kSize), nothrow);
        if (rec || n == 0) break;
        total += n;
    }
    c.gw.buffers.release(std::move(b));
}

// A refusal: status line, the reason code in X-Corral-Reason, one text line
// naming the reason and what was wrong. Then the connection closes (after a
// bounded drain when the client still has request bytes on the way).
template <class Stream>
awaitable<void> send_refusal(Conn& c, Stream& s, int status, std::string_view code, std::string_view detail) {
    std::string body = "corral gateway: " + std::to_string(status) + " " + std::string(code);
    if (!detail.empty()) body += ": " + std::string(detail);
    body += "\n";
    std::string head = "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) +
                       "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + std::to_string(body.size()) +
                       "\r\nConnection: close\r\nX-Corral-Reason: " + std::string(code) + "\r\n\r\n";
    if (c.timed_out) c.timed_out = false, c.deadline = Clock::now() + std::chrono::seconds(2);
    std::array<asio::const_buffer, 2> bufs{asio::buffer(head), asio::buffer(body)};
    bool unread = has_unread_input(c);
    auto [ec, n] = co_await asio::async_write(s, bufs, nothrow);
    if (!ec && unread) co_await drain_before_close(c);
}

// The line joins the ledger's pending batch; the first line of a batch posts
// the flush to this connection's event loop, where it runs once the handlers
// already queued there have run: lines of requests that finish together share
// one write(2). Posted to the socket's executor (the loop itself, not the
// connection's strand): the flush locks the ledger, any thread may run it.
void record(Conn& c, LedgerEntry e) {
    e.identity = c.id_text;
    if (!c.gw.ledger.append_batched(e)) return;
    asio::post(c.client_socket().get_executor(), [&ledger = c.gw.ledger] {
        if (ledger.flush()) log::error("ledger unwritable, refusing every new request: " + ledger.failure());
    });
}

// ---------------------------------------------------------------------------
// Reading a request head and body from the client.

enum class HeadStatus { ok, closed, refused };

struct HeadResult {
    HeadStatus status = HeadStatus::closed;
    std::size_t length = 0;
    std::string reason;
    std::string detail;
};

// Reads until the head is complete. `first` is true for a connection's first
// request (the read timeout runs from accept); later keep-alive requests get
// the idle timeout until their first byte, then the read timeout.
template <class Stream>
awaitable<HeadResult> read_head(Conn& c, Stream& s, bool first) {
    HeadResult r;
    const std::size_t max = c.limits().max_header_bytes;
    c.arm(first || c.buf.size() ? c.limits().read_timeout : c.limits().idle_timeout);
    for (;;) {
        auto data = c.buf.data();
        std::string_view text(static_cast<const char*>(data.data()), data.size());
        HeadScan scan = scan_head(text.substr(0, std::min(text.size(), max + 1)));
        if (scan.bare_lf) {
            r.status = HeadStatus::refused, r.reason = reason::smuggling, r.detail = "bare LF line ending";
            co_return r;
        }
        if (scan.end != std::string_view::npos) {
            r.status = HeadStatus::ok, r.length = scan.end;
            co_return r;
        }
        if (text.size() > max) {
            r.status = HeadStatus::refused, r.reason = reason::headers_too_large;
            r.detail = "request head exceeds max_header_bytes (" + std::to_string(max) + ")";
            co_return r;
        }
        bool had_bytes = text.size() != 0;
        auto [ec, n] = co_await s.async_read_some(c.buf.prepare(std::min<std::size_t>(8192, c.buf.max_size() - c.buf.size())), nothrow);
        if (ec || n == 0) {
            if (c.timed_out) {
                r.status = HeadStatus::refused, r.reason = reason::timeout;
                r.detail = "request head not complete within read_timeout";
            } else {
                r.status = HeadStatus::closed;
                if (had_bytes) r.status = HeadStatus::refused, r.reason = reason::bad_request, r.detail = "connection closed inside the request head";
            }
            co_return r;
        }
        c.buf.commit(n);
        if (!had_bytes && !first) c.arm(c.limits().read_timeout);
    }
}

struct ParsedRequest {
    std::optional<RequestParser> parser;
    std::string reason;
    std::string detail;
};

// The refusal for a request body that could not be read whole.
void refuse_body(Conn& c, const RequestParser& p, beast::error_code ec, std::string& reason, std::string& detail) {
    if (!p.refusal().reason.empty()) {
        reason = p.refusal().reason, detail = p.refusal().detail;
    } else if (ec == http::error::body_limit) {
        reason = reason::body_too_large;
        detail = "request body exceeds max_body_bytes (" + std::to_string(c.limits().max_body_bytes) + ")";
    } else if (ec == http::error::buffer_overflow) {
        // A chunk-size line (or trailer) that does not end within the read buffer.
        reason = reason::body_too_large;
        detail = "a chunk line exceeds the read buffer (" + std::to_string(c.buf.max_size()) + " bytes)";
    } else if (c.timed_out) {
        reason = reason::timeout, detail = "request body not complete within read_timeout";
    } else {
        reason = reason::bad_request, detail = "bad request body (" + ec.message() + ")";
    }
}

// Framing checks on the raw head, then Beast parses it (and, if present, the
// body, capped at max_body_bytes: a declared length over the cap is refused
// before anything is read or forwarded).
template <class Stream>
awaitable<void> parse_request(Conn& c, Stream& s, std::size_t head_len, ParsedRequest& out, bool read_body) {
    auto data = c.buf.data();
    std::string_view head(static_cast<const char*>(data.data()), head_len);
    if (auto why = check_request_framing(head, &out.detail); !why.empty()) {
        out.reason = why;
        co_return;
    }
    auto& p = out.parser.emplace();
    p.header_limit(static_cast<std::uint32_t>(std::min<std::uint64_t>(c.limits().max_header_bytes + 4, UINT32_MAX)));
    p.body_limit(c.limits().max_body_bytes);
    p.eager(false);
    beast::error_code ec;
    std::size_t used = p.put(asio::buffer(data.data(), head_len), ec);
    if (ec == http::error::body_limit) {
        c.body_pending = true;  // the client may be sending it already
        out.reason = reason::body_too_large;
        out.detail = "Content-Length exceeds max_body_bytes (" + std::to_string(c.limits().max_body_bytes) + ")";
        co_return;
    }
    if (!p.refusal().reason.empty()) {
        out.reason = p.refusal().reason, out.detail = p.refusal().detail;
        co_return;
    }
    if (ec || !p.is_header_done()) {
        out.reason = reason::bad_request;
        out.detail = ec ? "malformed request head (" + ec.message() + ")" : "malformed request head";
        co_return;
    }
    c.buf.consume(used);
    c.body_pending = !p.is_done();
    if (!read_body || p.is_done()) co_return;
    auto [rec, n] = co_await http::async_read(s, c.buf, p, nothrow);
    (void)n;
    if (!rec) c.body_pending = false;
    if (rec) refuse_body(c, p, rec, out.reason, out.detail);
}

// ---------------------------------------------------------------------------
// Name resolution and dialling.

struct Target {
    HostName host;
    std::uint16_t port = 0;
    const config::Grant* grant = nullptr;
    std::vector<asio::ip::address> addresses;  // vetted; dial only these
    std::uint16_t dial_port = 0;
};

// Answers for `name`: the hosts table first, then the system resolver (run
// by Asio off the event loop). An address literal is its own answer.
awaitable<std::vector<asio::ip::address>> resolve(Conn& c, const std::string& name, bool is_ip) {
    std::vector<asio::ip::address> out;
    if (is_ip) {
        boost::system::error_code ec;
        auto a = asio::ip::make_address(name, ec);
        if (!ec) out.push_back(a);
        co_return out;
    }
    if (auto it = c.gw.hosts.find(name); it != c.gw.hosts.end()) co_return it->second;
    asio::ip::tcp::resolver resolver(c.client_socket().get_executor());
    auto [ec, results] = co_await resolver.async_resolve(name, "", nothrow);
    if (!ec)
        for (const auto& r : results) out.push_back(r.endpoint().address());
    co_return out;
}

// Grant, resolution and address vetting for host:port. Returns the refusal
// reason ("" = allowed) and fills `t`.
awaitable<std::string> decide_target(Conn& c, const Authority& a, Target& t, std::string& detail) {
    t.host = a.host;
    t.port = a.port;
    t.grant = find_grant(c.gw.cfg, c.id, a.host, a.port);
    if (!t.grant) {
        detail = a.host.text + ":" + std::to_string(a.port) + " is not granted to " + c.id_text;
        co_return std::string(reason::not_granted);
    }
    std::string dial_host = a.host.text;
    bool dial_is_ip = a.host.is_ip_literal;
    t.dial_port = a.port;
    if (!t.grant->connect_to.empty()) {
        auto hc = normalize_host(t.grant->connect_host);
        if (!hc.host) {
            detail = "grant's connect_to host is not usable";
            co_return std::string(reason::bad_host);
        }
        dial_host = hc.host->text;
        dial_is_ip = hc.host->is_ip_literal;
        t.dial_port = t.grant->connect_port;
    }
    c.arm(c.limits().read_timeout);
    auto answers = co_await resolve(c, dial_host, dial_is_ip);
    AddressDecision d = vet_addresses(*t.grant, t.dial_port, answers, c.gw.self());
    if (!d.allowed) {
        detail = d.reason == reason::dns_failure ? "no address for " + dial_host
                                                 : dial_host + " resolves to a refused address";
        co_return d.reason;
    }
    t.addresses = std::move(d.usable);
    co_return std::string();
}

void set_nodelay(asio::ip::tcp::socket& s) {
    boost::system::error_code ec;
    s.set_option(asio::ip::tcp::no_delay(true), ec);
}

// Connects to the first vetted address that answers. Never resolves.
awaitable<bool> dial(Conn& c, asio::ip::tcp::socket& s, const Target& t) {
    c.upstream = &s;
    c.arm(c.limits().read_timeout);
    for (const auto& addr : t.addresses) {
        boost::system::error_code ec;
        s.close(ec);
        auto [cec] = co_await s.async_connect(asio::ip::tcp::endpoint(addr, t.dial_port), nothrow);
        if (!cec) {
            set_nodelay(s);
            co_return true;
        }
        if (c.timed_out) break;
    }
    co_return false;
}

std::string pool_key(const Target& t, const std::string& ca_file) {
    std::string key = t.host.text + "|" + std::to_string(t.port) + "|" + std::to_string(t.dial_port);
    for (const auto& a : t.addresses) key += "|" + a.to_string();
    return key + "|" + ca_file;
}

const std::string& trust_store(Conn& c, const Target& t) {
    return t.grant->upstream_ca_file.empty() ? c.gw.cfg.gateway.upstream_ca_file : t.grant->upstream_ca_file;
}

// A new verified TLS connection to the target's upstream.
awaitable<std::unique_ptr<UpstreamConn>> open_upstream(Conn& c, const Target& t, std::string& code, std::string& detail) {
    auto ctx = c.gw.client_tls.get(trust_store(c, t));
    auto up = std::make_unique<UpstreamConn>(c.client_socket().get_executor(), *ctx);
    up->key = pool_key(t, trust_store(c, t));
    if (!co_await dial(c, up->stream.next_layer(), t)) {
        code = c.timed_out ? reason::timeout : reason::upstream_connect;
        detail = "cannot connect to " + t.host.text + ":" + std::to_string(t.port);
        co_return nullptr;
    }
    if (!set_upstream_identity(up->stream.native_handle(), t.host.text, t.host.is_ip_literal)) {
        code = reason::upstream_tls, detail = "cannot set the upstream's expected name";
        co_return nullptr;
    }
    c.arm(c.limits().read_timeout);
    auto [ec] = co_await up->stream.async_handshake(asio::ssl::stream_base::client, nothrow);
    if (ec) {
        code = c.timed_out ? reason::timeout : reason::upstream_tls;
        long verify = SSL_get_verify_result(up->stream.native_handle());
        detail = "TLS to " + t.host.text + " failed: " +
                 (verify != X509_V_OK ? std::string(X509_verify_cert_error_string(verify)) : ec.message());
        co_return nullptr;
    }
    co_return up;
}

// ---------------------------------------------------------------------------
// Relays.

// One direction of a blind tunnel between plain sockets. Waits for
// readability without holding a buffer; borrows one only while bytes move.
template <class From, class To>
awaitable<void> pump_sockets(Conn& c, From& from, To& to, std::uint64_t& count) {
    boost::system::error_code ec;
    from.non_blocking(true, ec);
    bool finished = false;
    while (!finished) {
        auto [wec] = co_await from.async_wait(asio::socket_base::wait_read, nothrow);
        if (wec) break;
        auto b = c.gw.buffers.acquire();
        for (;;) {
            boost::system::error_code rec;
            std::size_t n = from.read_some(asio::buffer(b.get(), BufferPool::kSize), rec);
            if (rec == asio::error::would_block || rec == asio::error::try_again) break;
            if (rec || n == 0) {
                finished = true;
                if (rec && rec != asio::error::eof) c.cancel_io();  // reset: end the other direction too
                break;
            }
            c.arm(c.limits().idle_timeout);
            auto [werr, wn] = co_await asio::async_write(to, asio::buffer(b.get(), n), nothrow);
            if (werr) {
                finished = true;
                c.cancel_io();
                break;
            }
            count += wn;
            if (n < BufferPool::kSize) break;  // drained; skip the EAGAIN read
        }
        c.gw.buffers.release(std::move(b));
    }
    from.shutdown(asio::socket_base::shutdown_receive, ec);
    to.shutdown(asio::socket_base::shutdown_send, ec);
}

// One direction of a blind tunnel through a pipe with splice(2): the bytes
// never enter user space (no copy, no buffer in our RSS). Returns false if no
// pipe could be made (fd pressure), so the caller falls back to pump_sockets.
template <class From, class To>
awaitable<void> pump_splice(Conn& c, From& from, To& to, std::uint64_t& count, Fd pipe_r, Fd pipe_w) {
    boost::system::error_code ec;
    from.non_blocking(true, ec);
    to.non_blocking(true, ec);
    std::size_t in_pipe = 0;
    bool failed = false;
    for (;;) {
        ssize_t n = ::splice(from.native_handle(), nullptr, pipe_w.get(), nullptr, kSplicePipeSize,
                             SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n == 0) break;  // EOF from this side
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN) {
                failed = true;
                break;
            }
            auto [wec] = co_await from.async_wait(asio::socket_base::wait_read, nothrow);
            if (wec) {
                failed = true;
                break;
            }
            continue;
        }
        in_pipe += static_cast<std::size_t>(n);
        c.arm(c.limits().idle_timeout);
        while (in_pipe > 0) {
            ssize_t m = ::splice(pipe_r.get(), nullptr, to.native_handle(), nullptr, in_pipe,
                                 SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (m > 0) {
                in_pipe -= static_cast<std::size_t>(m);
                count += static_cast<std::uint64_t>(m);
                continue;
            }
            if (m < 0 && errno == EINTR) continue;
            if (m < 0 && errno == EAGAIN) {
                auto [wec] = co_await to.async_wait(asio::socket_base::wait_write, nothrow);
                if (!wec) continue;
            }
            failed = true;
            break;
        }
        if (failed) break;
    }
    if (failed) c.cancel_io();  // a reset or cut ends the other direction too
    from.shutdown(asio::socket_base::shutdown_receive, ec);
    to.shutdown(asio::socket_base::shutdown_send, ec);
}

// Both directions of a blind tunnel: splice when pipes are available, else
// user-space copies through pooled buffers.
template <class A, class B>
awaitable<void> relay_sockets(Conn& c, A& a, B& b, std::uint64_t& a_to_b, std::uint64_t& b_to_a) {
    int p1[2] = {-1, -1}, p2[2] = {-1, -1};
    if (::pipe2(p1, O_CLOEXEC | O_NONBLOCK) == 0 && ::pipe2(p2, O_CLOEXEC | O_NONBLOCK) == 0) {
        Fd r1(p1[0]), w1(p1[1]), r2(p2[0]), w2(p2[1]);
        ::fcntl(w1.get(), F_SETPIPE_SZ, static_cast<int>(kSplicePipeSize));
        ::fcntl(w2.get(), F_SETPIPE_SZ, static_cast<int>(kSplicePipeSize));
        co_await (pump_splice(c, a, b, a_to_b, std::move(r1), std::move(w1)) &&
                  pump_splice(c, b, a, b_to_a, std::move(r2), std::move(w2)));
        co_return;
    }
    if (p1[0] >= 0) ::close(p1[0]), ::close(p1[1]);
    co_await (pump_sockets(c, a, b, a_to_b) && pump_sockets(c, b, a, b_to_a));
}

// One direction of an upgraded (WebSocket) connection between TLS streams.
template <class From, class To>
awaitable<void> pump_streams(Conn& c, From& from, To& to, std::uint64_t& count) {
    std::vector<char> b(16 * 1024);
    for (;;) {
        auto [ec, n] = co_await from.async_read_some(asio::buffer(b), nothrow);
        if (ec || n == 0) break;
        c.arm(c.limits().idle_timeout);
        auto [wec, wn] = co_await asio::async_write(to, asio::buffer(b.data(), n), nothrow);
        if (wec) break;
        count += wn;
    }
    c.cancel_io();  // either side closing ends the upgraded connection
}

// ---------------------------------------------------------------------------
// One HTTP exchange with an upstream: send the (already rewritten) request,
// stream the response to the client as it arrives.

struct Exchange {
    std::string reason;        // "" = completed
    std::string detail;
    int status = 0;            // status forwarded to the client
    std::uint64_t bytes_up = 0, bytes_down = 0;
    bool nothing_received = false;  // failed before any response byte: safe to retry on a new connection
    bool upstream_reusable = false;
    bool client_reusable = false;
};

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

template <class Client, class Up>
awaitable<Exchange> exchange(Conn& c, Client& client, Up& up, beast::flat_buffer& upbuf, const std::string& head,
                             const std::string& body, bool head_request, bool websocket) {
    Exchange x;
    c.arm(c.limits().idle_timeout);
    // One buffer, so head and body leave in one TLS record and one send; a
    // request without a body (most of them) needs no copy for that.
    std::string message;
    if (!body.empty()) {
        message.reserve(head.size() + body.size());
        message.append(head).append(body);
    }
    const std::string& request = body.empty() ? head : message;
    if (auto [ec, n] = co_await asio::async_write(up, asio::buffer(request), nothrow); ec) {
        x.reason = c.timed_out ? reason::timeout : reason::upstream_connect;
        x.detail = "upstream closed the connection while the request was sent";
        x.nothing_received = true;
        co_return x;
    }
    x.bytes_up = body.size();

    const std::uint64_t cap = c.limits().max_response_bytes;
    std::optional<ResponseParser> rp;
    for (int interim_count = 0;; ++interim_count) {
        rp.emplace();
        rp->header_limit(kMaxResponseHead);
        rp->body_limit(boost::none);
        if (head_request) rp->skip(true);
        c.arm(c.limits().idle_timeout);
        auto [ec, n] = co_await http::async_read_header(up, upbuf, *rp, nothrow);
        if (ec) {
            x.nothing_received = interim_count == 0 &&
                                 (ec == http::error::end_of_stream || ec == asio::error::eof ||
                                  ec == asio::error::connection_reset || ec == asio::ssl::error::stream_truncated) &&
                                 upbuf.size() == 0;
            x.reason = c.timed_out ? reason::timeout : (x.nothing_received ? reason::upstream_connect : kUpstreamProtocol);
            x.detail = c.timed_out ? "no response within idle_timeout" : "upstream sent no valid response (" + ec.message() + ")";
            co_return x;
        }
        int status = rp->get().result_int();
        if (status >= 100 && status < 200 && status != 101) {
            // Interim responses (103 Early Hints) pass through; the final one
            // follows. They count as response bytes (an endless stream of
            // them must hit max_response_bytes like any body) and only a few
            // are allowed per request.
            if (interim_count == kMaxInterimResponses) {
                x.reason = kUpstreamProtocol;
                x.detail = "more than " + std::to_string(kMaxInterimResponses) + " interim (1xx) responses";
                co_return x;  // nothing final was sent: the client gets a 502 after the interim ones
            }
            std::string interim = response_head(*rp, false, false, false);
            if (x.bytes_down + interim.size() > cap) {
                x.reason = kResponseTooLarge, x.status = status;
                x.detail = "interim responses exceed max_response_bytes (" + std::to_string(cap) + ")";
                c.close_io();
                co_return x;
            }
            if (auto [wec, wn] = co_await asio::async_write(client, asio::buffer(interim), nothrow); wec) {
                x.reason = reason::bad_request, x.detail = "client went away", x.status = status;
                co_return x;
            }
            x.bytes_down += interim.size();
            continue;
        }
        break;
    }
    auto& res = rp->get();
    bool upgraded = res.result_int() == 101;
    if (upgraded && !(websocket && has_token(res[http::field::upgrade], "websocket"))) {
        x.reason = kUpstreamProtocol;
        x.detail = websocket ? "101 Switching Protocols to something other than WebSocket"
                             : "101 Switching Protocols without a WebSocket upgrade request";
        co_return x;  // a failed exchange: the connection is dropped, never pooled
    }
    x.status = res.result_int();
    bool chunked = rp->chunked();
    bool until_eof = !upgraded && !rp->is_done() && !chunked && !rp->content_length();
    std::string rhead = response_head(*rp, chunked, until_eof, upgraded);
    // The head goes out with the first body bytes (one TLS record, one send)
    // when those are already here; otherwise at once, so a client waiting for
    // headers (an SSE stream before its first event) is not held back.
    if (upgraded || rp->is_done() || upbuf.size() == 0) {
        if (auto [ec, n] = co_await asio::async_write(client, asio::buffer(rhead), nothrow); ec) {
            x.reason = reason::bad_request, x.detail = "client went away";
            co_return x;
        }
        rhead.clear();
    }

    if (upgraded) {
        // Leftovers first (an upstream may send a frame right behind its 101),
        // then both directions until either closes.
        if (upbuf.size()) {
            auto [ec, n] = co_await asio::async_write(client, upbuf.data(), nothrow);
            if (!ec) x.bytes_down += n;
            upbuf.consume(upbuf.size());
        }
        if (c.buf.size()) {
            auto [ec, n] = co_await asio::async_write(up, c.buf.data(), nothrow);
            if (!ec) x.bytes_up += n;
            c.buf.consume(c.buf.size());
        }
        co_await (pump_streams(c, client, up, x.bytes_up) && pump_streams(c, up, client, x.bytes_down));
        co_return x;
    }

    // Per-connection buffers: allocated on the first response, reused after.
    if (!c.chunk) c.chunk = std::make_unique_for_overwrite<char[]>(kChunkSize);
    std::span<char> chunk(c.chunk.get(), kChunkSize);
    std::string& out = c.out;
    out.reserve(kChunkSize + rhead.size() + 32);
    while (!rp->is_done()) {
        rp->get().body().data = chunk.data();
        rp->get().body().size = chunk.size();
        beast::error_code ec = parse_buffered(*rp, upbuf);
        if (!ec && !rp->is_done() && rp->get().body().size == chunk.size()) {
            c.arm(c.limits().idle_timeout);
            auto [rec, n] = co_await http::async_read_some(up, upbuf, *rp, nothrow);
            ec = rec == http::error::need_buffer ? beast::error_code{} : rec;
        }
        std::size_t got = chunk.size() - rp->get().body().size;
        if (got) {
            if (x.bytes_down + got > cap) {
                // Hard cut: the client sees a truncated message and a closed connection.
                x.reason = kResponseTooLarge;
                x.detail = "response exceeds max_response_bytes (" + std::to_string(cap) + ")";
                c.close_io();
                co_return x;
            }
            // One contiguous piece per write: a TLS stream turns each buffer of a
            // sequence into its own record and send().
            out.assign(rhead);
            rhead.clear();
            if (chunked) {
                char size_line[24];
                auto r = std::to_chars(size_line, size_line + 16, got, 16);
                *r.ptr++ = '\r', *r.ptr++ = '\n';
                out.append(size_line, r.ptr);
            }
            out.append(chunk.data(), got);
            if (chunked) out.append("\r\n");
            auto [wec, wn] = co_await asio::async_write(client, asio::buffer(out), nothrow);
            if (wec) {
                x.reason = reason::bad_request, x.detail = "client went away during the response";
                co_return x;
            }
            x.bytes_down += got;
        }
        if (ec == http::error::end_of_stream && until_eof) break;
        if (ec) {
            // A cut, not a refusal: the head (and maybe some body) is already out.
            x.reason = c.timed_out ? reason::timeout : kUpstreamProtocol;
            x.detail = c.timed_out                        ? "upstream stalled for idle_timeout"
                       : !rp->refusal().reason.empty()    ? std::string(rp->refusal().detail)
                       : ec == http::error::buffer_overflow ? "a chunk line exceeds the upstream read buffer"
                                                          : "response broke off (" + ec.message() + ")";
            c.close_io();
            co_return x;
        }
    }
    if (chunked) rhead += "0\r\n\r\n";
    if (!rhead.empty()) {
        if (auto [ec, n] = co_await asio::async_write(client, asio::buffer(rhead), nothrow); ec) {
            x.reason = reason::bad_request, x.detail = "client went away";
            co_return x;
        }
    }
    // Bytes behind a complete response are not an answer to anything we sent:
    // a connection holding them is never used again.
    x.upstream_reusable = rp->keep_alive() && !until_eof && upbuf.size() == 0;
    x.client_reusable = !until_eof;
    co_return x;
}

// The upstream request head: origin-form target, hop-by-hop fields removed,
// the body framed by Content-Length (the body is complete in memory).
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
    return up != req.end() && has_token(up->value(), "websocket");
}

// True when an idle upstream connection has sent nothing since its last
// complete response. Anything it did send (a late or unsolicited response, a
// close_notify) would be read as the answer to the next request, which may be
// another identity's: such a connection is dropped, not reused. One ioctl.
bool upstream_is_quiet(UpstreamConn& up) {
    boost::system::error_code ec;
    return up.buf.size() == 0 && SSL_pending(up.stream.native_handle()) == 0 &&
           up.stream.next_layer().available(ec) == 0 && !ec;
}

// Methods refused in inject and plain mode. TRACE (and IIS's TRACK) make the
// upstream echo the request back, injected credential included; CONNECT
// inside a tunnel would ask the upstream to open a tunnel no grant names.
// Compared without case: some servers read methods that way.
bool is_never_forwarded(std::string_view method) {
    return iequals(method, "TRACE") || iequals(method, "TRACK") || iequals(method, "CONNECT");
}

bool request_has_body(const Request& req) {
    return req.find(http::field::content_length) != req.end() || req.find(http::field::transfer_encoding) != req.end();
}

// ---------------------------------------------------------------------------
// Inject mode: TLS terminated with the host's leaf, then request by request.

// Expects c.server_tls to hold the CONNECT host's context (made before the 200).
awaitable<void> serve_inject(std::shared_ptr<Conn> cp, Target t) {
    Conn& c = *cp;
    c.client_tls = std::make_unique<ClientTls>(std::move(c.client), c.server_tls->ctx);
    ClientTls& tls = *c.client_tls;
    c.arm(c.limits().read_timeout);
    // Bytes the client sent right behind its CONNECT are the start of its ClientHello.
    auto [hec, used] = co_await tls.async_handshake(asio::ssl::stream_base::server, c.buf.data(), nothrow);
    if (hec) {
        LedgerEntry e;
        e.mode = "inject", e.method = "CONNECT", e.host = t.host.text, e.port = t.port;
        e.decision = Decision::refuse;
        bool sni = sni_mismatch(tls.native_handle(), t.host.text);
        e.reason = sni ? std::string(reason::sni_mismatch) : (c.timed_out ? std::string(reason::timeout) : std::string(kClientTls));
        record(c, e);
        co_return;
    }
    c.buf.consume(used);

    const config::CredentialSpec* cred = nullptr;
    const std::string* secret = nullptr;
    config::CredentialSpec granted;  // the credential with this grant's headers (credential_for_grant)
    if (!t.grant->credential.empty()) {
        auto ci = c.gw.cfg.credentials.find(t.grant->credential);
        auto si = c.gw.secrets.find(t.grant->credential);
        if (ci != c.gw.cfg.credentials.end() && si != c.gw.secrets.end()) {
            granted = config::credential_for_grant(ci->second, *t.grant);
            cred = &granted, secret = &si->second;
        }
    }
    std::unique_ptr<UpstreamConn> up;
    // Pooled connections are shared only within this connection's event loop:
    // a socket taken by a connection on another loop would complete its I/O on
    // the wrong thread (and wake that loop for every operation).
    auto& loop = asio::query(c.client_socket().get_executor(), asio::execution::context);
    const std::string key =
        pool_key(t, trust_store(c, t)) + "|loop" + std::to_string(reinterpret_cast<std::uintptr_t>(&loop));

    for (bool first = true;; first = false) {
        auto started = Clock::now();
        HeadResult h = co_await read_head(c, tls, false);
        (void)first;
        if (h.status == HeadStatus::closed) break;
        LedgerEntry e;
        e.mode = "inject", e.host = t.host.text, e.port = t.port;
        e.credential = cred ? cred->name : "";
        auto refuse = [&](std::string_view code, std::string detail) -> awaitable<void> {
            e.decision = Decision::refuse, e.reason = std::string(code), e.status = status_of(code);
            e.duration_ms = ms_since(started);
            e.credential.clear();
            record(c, e);
            co_await send_refusal(c, tls, e.status, code, detail);
        };
        if (h.status == HeadStatus::refused) {
            co_await refuse(h.reason, h.detail);
            break;
        }
        if (!c.gw.ledger.healthy()) {
            co_await refuse(reason::ledger_unwritable, "the ledger cannot be written: " + c.gw.ledger.failure());
            break;
        }
        // Head checks first, body later: a refused request's body is never read.
        ParsedRequest pr;
        co_await parse_request(c, tls, h.length, pr, false);
        std::string_view path_refusal;
        std::optional<std::string_view> path;
        if (pr.parser) {
            // Also for a head refused at its Content-Length (the request line is parsed by
            // then): the ledger line names what was refused.
            e.method = std::string(pr.parser->get().method_string());
            std::string_view raw_target = pr.parser->get().target();
            path = canonical_route_path(raw_target, &path_refusal);
            e.path = std::string((path ? *path : raw_target).substr(0, 256));
        }
        if (!pr.reason.empty()) {
            co_await refuse(pr.reason, pr.detail);
            break;
        }
        Request& req = pr.parser->get();
        std::string_view target = req.target();
        if (req.version() != 11) {
            co_await refuse(reason::bad_request, "only HTTP/1.1 is served inside a tunnel");
            break;
        }
        if (is_never_forwarded(req.method_string())) {
            co_await refuse(reason::unsupported_method, std::string(req.method_string()) + " is not forwarded");
            break;
        }
        // Exactly one Host, naming the CONNECT host (and its port, if given).
        auto host_count = std::distance(req.equal_range(http::field::host).first, req.equal_range(http::field::host).second);
        if (host_count != 1) {
            co_await refuse(reason::bad_request, "expected exactly one Host header");
            break;
        }
        auto ha = split_authority(req[http::field::host], t.port);
        if (!ha.authority || ha.authority->host.text != t.host.text || ha.authority->port != t.port) {
            co_await refuse(reason::host_mismatch, "Host does not name the CONNECT host " + t.host.text);
            break;
        }
        if (!path) {
            co_await refuse(reason::non_canonical_path, "request path is not canonical: " + std::string(path_refusal));
            break;
        }
        if (!route_allowed(*t.grant, req.method_string(), *path)) {
            co_await refuse(reason::route_denied, std::string(req.method_string()) + " " + std::string(*path) + " is not in the grant's routes");
            break;
        }
        if (!c.gw.admit(c.id_text)) {
            co_await refuse(reason::budget_exhausted, "request budget of " + c.id_text + " is spent");
            break;
        }
        if (!pr.parser->is_done()) {
            if (auto ex = req.find(http::field::expect); ex != req.end() && iequals(ex->value(), "100-continue"))
                co_await asio::async_write(tls, asio::buffer("HTTP/1.1 100 Continue\r\n\r\n", 25), nothrow);
            c.arm(c.limits().read_timeout);
            auto [rec, rn] = co_await http::async_read(tls, c.buf, *pr.parser, nothrow);
            (void)rn;
            if (!rec) c.body_pending = false;
            if (rec) {
                std::string code, why;
                refuse_body(c, *pr.parser, rec, code, why);
                co_await refuse(code, why);
                break;
            }
        }
        bool websocket = is_websocket_upgrade(req);
        bool client_keep_alive = req.keep_alive();
        if (cred) rewrite_request_headers(static_cast<http::fields&>(req), *cred, *secret);
        const std::string head = request_head(req, target, websocket, request_has_body(req) || req.body().size());

        Exchange x;
        for (int attempt = 0; attempt < 2; ++attempt) {
            bool reused = false;
            if (!up) up = c.gw.pool.take(key);
            if (up && !upstream_is_quiet(*up)) up.reset();
            reused = up != nullptr;
            if (!up) {
                std::string code, detail;
                up = co_await open_upstream(c, t, code, detail);
                if (!up) {
                    x.reason = code, x.detail = detail;
                    break;
                }
            }
            c.upstream = &up->stream.next_layer();
            x = co_await exchange(c, tls, up->stream, up->buf, head, req.body(), req.method() == http::verb::head, websocket);
            if (x.reason.empty() || !(reused && x.nothing_received)) break;
            up.reset();  // a stale keep-alive connection: retry once on a fresh one
            c.upstream = nullptr;
        }
        e.status = x.status, e.bytes_up = x.bytes_up, e.bytes_down = x.bytes_down;
        e.duration_ms = ms_since(started);
        if (!x.reason.empty()) {
            e.reason = x.reason;
            if (x.status == 0) {
                // Nothing was forwarded to the client yet: answer with the refusal.
                e.decision = Decision::refuse;
                e.status = status_of(x.reason);
                if (x.reason == reason::timeout) e.status = 504;
                record(c, e);
                co_await send_refusal(c, tls, e.status, x.reason, x.detail);
            } else {
                record(c, e);
            }
            break;
        }
        record(c, e);
        if (x.status == 101) break;
        if (x.upstream_reusable && up) {
            // Keep the connection for this tunnel's next request.
        } else {
            up.reset();
        }
        c.upstream = nullptr;
        if (!client_keep_alive || !x.client_reusable) break;
    }
    if (up && c.upstream == nullptr) {
        c.gw.pool.put(std::move(up));  // hand the idle connection to other tunnels
    }
    c.upstream = nullptr;
    boost::system::error_code ec;
    if (!c.lingered) {
        c.arm(std::chrono::seconds(2));
        co_await tls.async_shutdown(nothrow);
    }
    tls.next_layer().close(ec);
}

// ---------------------------------------------------------------------------
// Tunnel mode: connect first (so failures are a 502), then a blind relay.

awaitable<void> serve_tunnel(std::shared_ptr<Conn> cp, Target t, Clock::time_point started) {
    Conn& c = *cp;
    LedgerEntry e;
    e.mode = "tunnel", e.method = "CONNECT", e.host = t.host.text, e.port = t.port;
    asio::ip::tcp::socket up(c.client.get_executor());
    if (!co_await dial(c, up, t)) {
        std::string code(c.timed_out ? reason::timeout : reason::upstream_connect);
        e.decision = Decision::refuse, e.reason = code, e.status = code == reason::timeout ? 504 : 502;
        e.duration_ms = ms_since(started);
        record(c, e);
        co_await send_refusal(c, c.client, e.status, code, "cannot connect to " + t.host.text + ":" + std::to_string(t.port));
        co_return;
    }
    static const char kEstablished[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
    c.arm(c.limits().idle_timeout);
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

// ---------------------------------------------------------------------------
// Absolute-form http:// — one exchange per connection over plain TCP.

struct AbsoluteTarget {
    std::string authority;
    std::string path;  // origin-form, "/" when empty
};

std::optional<AbsoluteTarget> split_absolute_http(std::string_view target) {
    constexpr std::string_view scheme = "http://";
    if (target.size() < scheme.size() || !iequals(target.substr(0, scheme.size()), scheme)) return std::nullopt;
    target.remove_prefix(scheme.size());
    auto end = target.find_first_of("/?#");
    AbsoluteTarget a;
    a.authority = std::string(target.substr(0, end));
    if (a.authority.find('@') != std::string::npos) return std::nullopt;  // userinfo: refuse, never forward
    a.path = end == std::string_view::npos ? "/" : std::string(target.substr(end));
    if (a.path.front() != '/') a.path.insert(0, "/");
    return a;
}

awaitable<void> serve_plain(std::shared_ptr<Conn> cp, Target t, ParsedRequest& pr, std::string path,
                            Clock::time_point started) {
    Conn& c = *cp;
    Request& req = pr.parser->get();
    LedgerEntry e;
    e.mode = "tunnel", e.method = std::string(req.method_string()), e.host = t.host.text, e.port = t.port;
    std::string route_reason;
    auto norm = normalize_route_path(path, &route_reason);
    e.path = norm ? *norm : path.substr(0, 256);
    auto refuse = [&](std::string_view code, std::string detail) -> awaitable<void> {
        e.decision = Decision::refuse, e.reason = std::string(code), e.status = status_of(code);
        if (code == reason::timeout) e.status = 504;
        e.duration_ms = ms_since(started);
        record(c, e);
        co_await send_refusal(c, c.client, e.status, code, detail);
    };
    if (!pr.parser->is_done()) {
        c.arm(c.limits().read_timeout);
        auto [rec, rn] = co_await http::async_read(c.client, c.buf, *pr.parser, nothrow);
        (void)rn;
        if (!rec) c.body_pending = false;
        if (rec) {
            std::string code, why;
            refuse_body(c, *pr.parser, rec, code, why);
            co_await refuse(code, why);
            co_return;
        }
    }
    // The Host header must name the target too: an upstream that routes by Host
    // must not be steered to another virtual host than the one granted.
    req.set(http::field::host, t.port == 80 ? t.host.text : t.host.text + ":" + std::to_string(t.port));
    asio::ip::tcp::socket up(c.client.get_executor());
    if (!co_await dial(c, up, t)) {
        std::string_view code = c.timed_out ? reason::timeout : reason::upstream_connect;
        co_await refuse(code, "cannot connect to " + t.host.text);
        co_return;
    }
    bool websocket = is_websocket_upgrade(req);
    std::string head = request_head(req, path, websocket, request_has_body(req) || req.body().size());
    beast::flat_buffer upbuf(kUpstreamReadBuffer);
    Exchange x = co_await exchange(c, c.client, up, upbuf, head, req.body(), req.method() == http::verb::head, websocket);
    e.status = x.status, e.bytes_up = x.bytes_up, e.bytes_down = x.bytes_down;
    if (!x.reason.empty() && x.status == 0) {
        co_await refuse(x.reason, x.detail);
        co_return;
    }
    e.reason = x.reason;
    e.duration_ms = ms_since(started);
    record(c, e);
    boost::system::error_code ec;
    c.client.shutdown(asio::socket_base::shutdown_send, ec);
    c.upstream = nullptr;
}

// ---------------------------------------------------------------------------
// The first request on a connection: what is the client asking for?

awaitable<void> handle(std::shared_ptr<Conn> cp) {
    Conn& c = *cp;
    auto started = Clock::now();
    LedgerEntry e;
    auto refuse = [&](std::string_view code, std::string detail) -> awaitable<void> {
        e.decision = Decision::refuse, e.reason = std::string(code), e.status = status_of(code);
        if (code == reason::timeout) e.status = 408;
        e.duration_ms = ms_since(started);
        record(c, e);
        co_await send_refusal(c, c.client, e.status, code, detail);
    };

    // The identity's own share first: a box at its cap is told so, and it is
    // refused before it can take the daemon-wide slots every box shares.
    if (c.identity_open > c.limits().max_connections_per_identity) {
        co_await refuse(reason::identity_connection_cap,
                        c.id_text + " holds more than max_connections_per_identity (" +
                            std::to_string(c.limits().max_connections_per_identity) + ") open connections");
        co_return;
    }
    if (c.gw.active.load() > c.limits().max_connections) {
        co_await refuse(reason::too_many_connections,
                        "more than max_connections (" + std::to_string(c.limits().max_connections) + ") open");
        co_return;
    }
    HeadResult h = co_await read_head(c, c.client, true);
    if (h.status == HeadStatus::closed) co_return;
    if (h.status == HeadStatus::refused) {
        co_await refuse(h.reason, h.detail);
        co_return;
    }
    if (!c.gw.ledger.healthy()) {
        co_await refuse(reason::ledger_unwritable, "the ledger cannot be written: " + c.gw.ledger.failure());
        co_return;
    }
    ParsedRequest pr;
    co_await parse_request(c, c.client, h.length, pr, false);
    if (pr.parser) e.method = std::string(pr.parser->get().method_string());
    if (!pr.reason.empty()) {
        if (pr.parser) {
            // The request line is parsed even when a header was refused: name the target.
            std::string_view rt = pr.parser->get().target();
            auto abs = split_absolute_http(rt);
            e.host = abs ? abs->authority.substr(0, 256) : std::string(rt.substr(0, 256));
            if (abs) e.path = abs->path.substr(0, 256);
        }
        co_await refuse(pr.reason, pr.detail);
        co_return;
    }
    Request& req = pr.parser->get();
    std::string_view target = req.target();
    bool is_connect = req.method() == http::verb::connect;
    std::optional<AbsoluteTarget> absolute;
    AuthorityCheck ac;
    if (is_connect) {
        ac = split_authority(target);
    } else {
        absolute = split_absolute_http(target);
        if (!absolute) {
            e.path = std::string(target.substr(0, 256));
            co_await refuse(reason::unsupported_method,
                            "expected CONNECT host:port or an absolute http:// request target");
            co_return;
        }
        ac = split_authority(absolute->authority, 80);
        if (is_never_forwarded(req.method_string())) {
            e.host = absolute->authority.substr(0, 256), e.path = absolute->path.substr(0, 256);
            co_await refuse(reason::unsupported_method, std::string(req.method_string()) + " is not forwarded");
            co_return;
        }
    }
    if (!ac.authority) {
        e.host = std::string((absolute ? std::string_view(absolute->authority) : target).substr(0, 256));
        co_await refuse(ac.reason, "cannot use the requested host");
        co_return;
    }
    e.host = ac.authority->host.text;
    e.port = ac.authority->port;
    if (absolute) e.path = absolute->path.substr(0, 256);

    Target t;
    std::string detail;
    std::string code = co_await decide_target(c, *ac.authority, t, detail);
    if (t.grant) e.mode = std::string(to_string(t.grant->mode));
    if (!code.empty()) {
        co_await refuse(code, detail);
        co_return;
    }
    if (!is_connect && t.grant->mode == config::GrantMode::inject) {
        co_await refuse(kCleartextInject, "this host is granted in inject mode, which requires CONNECT and TLS");
        co_return;
    }
    if (is_connect && t.grant->mode == config::GrantMode::tunnel && !c.gw.admit(c.id_text)) {
        co_await refuse(reason::budget_exhausted, "request budget of " + c.id_text + " is spent");
        co_return;
    }
    if (!is_connect && !c.gw.admit(c.id_text)) {
        co_await refuse(reason::budget_exhausted, "request budget of " + c.id_text + " is spent");
        co_return;
    }
    if (!is_connect) {
        co_await serve_plain(cp, std::move(t), pr, absolute->path, started);
    } else if (t.grant->mode == config::GrantMode::tunnel) {
        co_await serve_tunnel(cp, std::move(t), started);
    } else {
        // The leaf first: once the 200 is out, a failure could only be a
        // silent close. Before it, it is a refusal the box can read.
        std::string leaf_failure;
        try {
            c.server_tls = c.gw.server_tls.get(t.host.text);
        } catch (const std::exception& ex) {
            leaf_failure = ex.what();
        }
        if (!c.server_tls) {
            co_await refuse(kLeafUnavailable, "no TLS certificate for " + t.host.text + ": " + leaf_failure);
            co_return;
        }
        static const char kEstablished[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
        if (auto [ec, n] = co_await asio::async_write(c.client, asio::buffer(kEstablished, sizeof kEstablished - 1), nothrow); ec)
            co_return;
        co_await serve_inject(cp, std::move(t));
    }
}

// Refused by whoever accepted the connection: nothing of it has been read,
// so a request may be arriving as the answer goes out; the drain is what
// keeps that request from turning the answer into a reset.
awaitable<void> answer_refusal(std::shared_ptr<Conn> cp, std::string code, std::string detail) {
    Conn& c = *cp;
    LedgerEntry e;
    e.decision = Decision::refuse, e.reason = code, e.status = status_of(code);
    record(c, e);
    co_await send_refusal(c, c.client, e.status, code, detail);
    if (!c.lingered) co_await drain_before_close(c);
}

// Runs `work` (a handler of `cp`) with the watchdog beside it, counted among
// the open connections, and ends the connection however `work` ends.
awaitable<void> run_watched(std::shared_ptr<Conn> cp, awaitable<void> work) {
    struct Count {
        std::atomic<std::size_t>& n;
        explicit Count(std::atomic<std::size_t>& a) : n(a) { ++n; }
        ~Count() { --n; }
    } count(cp->gw.active);
    struct IdentityCount {
        Gateway::Internals& gw;
        std::string id;
        std::uint64_t open;
        IdentityCount(Gateway::Internals& g, std::string i) : gw(g), id(std::move(i)), open(g.open_connection(id)) {}
        ~IdentityCount() { gw.close_connection(id); }
    } identity_count(cp->gw, cp->id.str());
    // Ends the connection however this frame goes: returning, or destroyed
    // unfinished (an exception thrown inside an I/O completion leaves the
    // event loop, and Asio then destroys the suspended coroutine). Without it
    // the watchdog would keep the connection's state alive forever.
    struct End {
        std::shared_ptr<Conn> c;
        ~End() {
            c->upstream = nullptr;  // the upstream socket lived in a handler frame that is gone
            c->done = true;
            try {
                c->timer.cancel();
            } catch (const std::exception&) {
                // The watchdog then wakes at its deadline and sees `done`.
            }
            boost::system::error_code ec;
            c->client_socket().close(ec);
        }
    } end{std::move(cp)};
    end.c->identity_open = identity_count.open;
    auto ex = co_await asio::this_coro::executor;
    asio::co_spawn(ex, watchdog(end.c), asio::detached);
    try {
        co_await std::move(work);
    } catch (const std::exception&) {
        // Handlers report through the ledger; anything escaping is a closed socket.
    }
}

}  // namespace

awaitable<void> serve_connection(Gateway::Internals& gw, ClientSocket s, Identity id) {
    auto c = std::make_shared<Conn>(gw, std::move(s), std::move(id));
    co_await run_watched(c, handle(c));
}

awaitable<void> refuse_connection(Gateway::Internals& gw, ClientSocket s, Identity id, std::string code,
                                  std::string detail) {
    auto c = std::make_shared<Conn>(gw, std::move(s), std::move(id));
    co_await run_watched(c, answer_refusal(c, std::move(code), std::move(detail)));
}

}  // namespace corral::gateway
