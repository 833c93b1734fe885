#include "gateway/connection.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/write.hpp>

#include <poll.h>

#include <array>

#include "base/log.hpp"

namespace corral::gateway {

namespace asio = boost::asio;
using asio::awaitable;

Conn::Conn(Gateway::Internals& g, ClientSocket s, Identity i)
    : gw(g), id(std::move(i)), id_text(id.str()), client(std::move(s)), timer(client.get_executor()),
      deadline(Clock::now() + g.cfg.gateway.limits.read_timeout),
      buf(g.cfg.gateway.limits.max_header_bytes + kClientReadSlack) {}

void Conn::arm(std::chrono::milliseconds d) {
    if (timed_out) return;
    deadline = Clock::now() + d;
    if (deadline < armed_for) timer.cancel();  // the watchdog sleeps too long: wake it to re-arm
}

void Conn::cancel_io() {
    boost::system::error_code ec;
    client_socket().cancel(ec);
    if (upstream) upstream->cancel(ec);
}

void Conn::close_io() {
    boost::system::error_code ec;
    client_socket().close(ec);
    if (upstream) upstream->close(ec);
}

struct ClientDepartureWatch::State {
    Conn* c;
    bool stopped = false;
    int looks_left = 3;
    std::unique_ptr<asio::steady_timer> again;  // made on the first bytes without a FIN
};

namespace {

// Has the box closed its side? Asked of the kernel without reading.
bool peer_closed(int fd) {
    struct pollfd p {fd, POLLRDHUP, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

void look_at_client(const std::shared_ptr<ClientDepartureWatch::State>& s) {
    if (s->stopped) return;
    if (peer_closed(s->c->client_socket().native_handle())) {
        s->c->client_departed = true;
        s->stopped = true;
        s->c->cancel_io();
        return;
    }
    // Readable without a FIN: the box sent bytes (waiting in the socket).
    // Waiting for readability again would return at once; look again later.
    if (s->looks_left-- <= 0) return;
    if (!s->again) s->again = std::make_unique<asio::steady_timer>(s->c->client_socket().get_executor());
    s->again->expires_after(std::chrono::milliseconds(50));
    s->again->async_wait([s](boost::system::error_code ec) {
        if (!ec) look_at_client(s);
    });
}

void watch_departure(const std::shared_ptr<ClientDepartureWatch::State>& s) {
    s->c->client_socket().async_wait(asio::socket_base::wait_read, [s](boost::system::error_code ec) {
        if (!ec) look_at_client(s);
    });
}

}  // namespace

ClientDepartureWatch::ClientDepartureWatch(Conn& c) : s_(std::make_shared<State>(State{&c})) {
    if (c.lingered || c.client_gone) {
        s_->stopped = true;
        return;
    }
    watch_departure(s_);
}

void ClientDepartureWatch::stop() {
    if (!s_ || s_->stopped) return;
    s_->stopped = true;
    boost::system::error_code ec;
    s_->c->client_socket().cancel(ec);
    if (s_->again) s_->again->cancel();
}

std::uint64_t ms_since(Clock::time_point t) {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count());
}

std::optional<Refusal> take_server_leaf(Conn& c, const HostName& host) {
    std::string failure;
    try {
        c.server_tls = c.gw.server_tls.get(host);
    } catch (const std::exception& ex) {
        failure = ex.what();
    }
    if (c.server_tls) return std::nullopt;
    return Refusal{std::string(reason::leaf_unavailable), "no TLS certificate for " + host.text() + ": " + failure};
}

namespace {

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
            c->deadline = Clock::now() + kTimeoutGrace;
            grace = true;
        } else {
            c->close_io();
            c->deadline = Clock::now() + std::chrono::seconds(3600);
        }
    }
}

const char* status_text(int status) {
    switch (status) {
        case 200: return "OK";
        case 400: return "Bad Request";
        case 403: return "Forbidden";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 413: return "Content Too Large";
        case 426: return "Upgrade Required";
        case 429: return "Too Many Requests";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        default: return "Error";
    }
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

}  // namespace

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

template <class Stream>
awaitable<void> send_refusal(Conn& c, Stream& s, int status, std::string_view code, std::string_view detail,
                             ErrorShape shape) {
    const RefusalBody body = refusal_body(shape, status, code, detail);
    // A provider-shaped refusal is final: the SDKs honour x-should-retry
    // over their own status rules, so a budget or policy refusal is never
    // retried however it is classified.
    std::string head = "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) +
                       "\r\nContent-Type: " + body.content_type + "\r\nContent-Length: " +
                       std::to_string(body.body.size()) + "\r\nConnection: close\r\nX-Corral-Reason: " +
                       std::string(code) + (shape == ErrorShape::text ? "" : "\r\nx-should-retry: false") + "\r\n\r\n";
    if (c.timed_out) c.timed_out = false, c.deadline = Clock::now() + kTimeoutGrace;
    std::array<asio::const_buffer, 2> bufs{asio::buffer(head), asio::buffer(body.body)};
    bool unread = has_unread_input(c);
    auto [ec, n] = co_await asio::async_write(s, bufs, nothrow);
    if (!ec && unread) co_await drain_before_close(c);
}

template <class Stream>
awaitable<void> refuse(Conn& c, Stream& s, LedgerEntry e, const Refusal& r, Clock::time_point started) {
    e.decision = Decision::refuse;
    e.reason = std::string(r.reason);
    e.status = r.status();
    e.duration_ms = ms_since(started);
    record(c, e);
    co_await send_refusal(c, s, e.status, r.reason, r.detail, r.shape);
}

template awaitable<void> send_refusal(Conn&, ClientSocket&, int, std::string_view, std::string_view, ErrorShape);
template awaitable<void> send_refusal(Conn&, ClientTls&, int, std::string_view, std::string_view, ErrorShape);
template awaitable<void> refuse(Conn&, ClientSocket&, LedgerEntry, const Refusal&, Clock::time_point);
template awaitable<void> refuse(Conn&, ClientTls&, LedgerEntry, const Refusal&, Clock::time_point);

// The line joins the ledger's pending batch; the first line of a batch posts
// the flush to this connection's event loop, where it runs once the handlers
// already queued there have run: lines of requests that finish together share
// one write(2). Posted to the socket's executor (the loop itself, not the
// connection's strand): the flush locks the ledger, any thread may run it.
void record(Conn& c, LedgerEntry e) {
    e.identity = c.id_text;
    e.role = c.id.role;
    e.captured = c.captured;
    if (!c.gw.ledger.append_batched(e)) return;
    asio::post(c.client_socket().get_executor(), [&ledger = c.gw.ledger] {
        if (ledger.flush()) log_ledger_unwritable(ledger.failure());
    });
}

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

}  // namespace corral::gateway
