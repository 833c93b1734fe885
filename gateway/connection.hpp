// gateway/connection.hpp — one client connection's state, its watchdog, and
// the two ways anything is said to the box outside a relayed response: a
// ledger line (record) and a refusal (refuse).
//
// Every connection runs on its own strand with a watchdog coroutine beside it:
// the handler only moves a deadline (read timeout while a request head or body
// is arriving, idle timeout while waiting for bytes otherwise); the watchdog
// cancels the sockets when the deadline passes, and closes them if the handler
// has not finished kTimeoutGrace later.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "gateway/internals.hpp"
#include "gateway/refusal.hpp"

namespace corral::gateway {

using Clock = std::chrono::steady_clock;
using ClientSocket = boost::asio::generic::stream_protocol::socket;
using ClientTls = boost::asio::ssl::stream<ClientSocket>;
using UpstreamTls = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

inline constexpr auto nothrow = boost::asio::as_tuple(boost::asio::use_awaitable);

// The client read buffer holds one request head (at most max_header_bytes,
// read_head refuses more) plus one read; a body is parsed out of it as it
// arrives, so beyond that it only ever holds a chunk-size line or a trailer
// section, which Beast bounds by nothing but the buffer. Without this bound a
// chunk line that never ends grows the buffer without limit.
inline constexpr std::size_t kClientReadSlack = 16 * 1024;
// After a timeout, how long the handler has to answer 408/504 and write its
// ledger line before the watchdog closes the sockets under it.
inline constexpr std::chrono::seconds kTimeoutGrace{2};

// Per-connection state shared by the handler and its watchdog.
struct Conn {
    Conn(Gateway::Internals& g, ClientSocket s, Identity i);

    Gateway::Internals& gw;
    Identity id;
    std::string id_text;
    ClientSocket client;                      // moved into client_tls in inject mode
    std::unique_ptr<ClientTls> client_tls;
    std::shared_ptr<ServerTls> server_tls;    // keeps the SNI callback's host alive
    boost::asio::ip::tcp::socket* upstream = nullptr;  // whichever upstream socket is in use, for the watchdog
    boost::asio::steady_timer timer;
    Clock::time_point deadline;               // the first request's whole head is due by then
    Clock::time_point armed_for = Clock::time_point::max();
    bool done = false;
    bool timed_out = false;
    bool body_pending = false;                // a request body was announced and not read whole
    bool lingered = false;                    // refused, half-closed and drained: only close is left
    bool client_gone = false;                 // the box's TLS ended without close_notify: none can follow
    bool client_departed = false;             // the box closed while an exchange waited on the upstream
    std::uint64_t identity_open = 0;          // connections the identity held when this one arrived, itself included
    boost::beast::flat_buffer buf;            // bytes read from the client, not yet consumed (bounded)
    std::unique_ptr<char[]> chunk;            // response body piece being relayed (inject/plain)
    std::string out;                          // the write being assembled for the client
    std::string scrubbed;                     // a response piece after the scrubber (inject grants)
    bool captured = false;                    // a captured connection (docs/capture.md): its lines say so
    std::unique_ptr<config::Grant> asked_grant;  // --ask: the grant an unlisted host got (Target::grant points here)

    ClientSocket& client_socket() { return client_tls ? client_tls->next_layer() : client; }
    const config::GatewayLimits& limits() const { return gw.cfg.gateway.limits; }

    // Moves the deadline to now + d (the watchdog is woken when that is earlier
    // than it sleeps). No effect once timed out.
    void arm(std::chrono::milliseconds d);
    void cancel_io();
    void close_io();
};

// Watches the box's side of a connection while an exchange waits on the
// upstream (a model thinking before its first byte, an idle stream): a box
// that has closed its socket (FIN seen: POLLRDHUP) cancels the exchange's
// I/O at once and sets Conn::client_departed, so the upstream request ends,
// its ledger line is written and a budget's reservation settles now, not at
// idle_timeout. One async_wait on the socket per exchange, no read: bytes
// the box sends meanwhile (a pipelined request) stay where they are; when
// they come without a FIN it looks again a few times (a TLS close_notify
// arrives just before its FIN), then stops watching. stop() (and the
// destructor) cancel the wait: only while no other operation of the
// exchange is pending on the box's socket.
class ClientDepartureWatch {
public:
    explicit ClientDepartureWatch(Conn& c);
    ~ClientDepartureWatch() { stop(); }
    ClientDepartureWatch(const ClientDepartureWatch&) = delete;
    ClientDepartureWatch& operator=(const ClientDepartureWatch&) = delete;
    void stop();
    struct State;  // shared with the pending wait's handler (connection.cpp)

private:
    std::shared_ptr<State> s_;
};

// The ledger line joins the ledger's pending batch, flushed from the
// connection's event loop (see record() in connection.cpp). Fills e.identity.
void record(Conn& c, LedgerEntry e);

// The answer to a refusal: status line, the reason code in X-Corral-Reason,
// one text line naming the reason and what was wrong (or, for a model
// request, the provider's error object with that line as its message:
// refusal_body). Then the connection
// closes (after a bounded drain when the client still has request bytes on
// the way). Stream: ClientSocket or ClientTls.
template <class Stream>
boost::asio::awaitable<void> send_refusal(Conn& c, Stream& s, int status, std::string_view code, std::string_view detail,
                                          ErrorShape shape = ErrorShape::text);

// Every refusal of a request: `e` marked refused for `r` (reason, status by
// r's phase, duration since `started`), recorded, and answered on `s`.
// Callers pass named values, never temporaries: GCC 12 destroys a temporary
// in a co_await's full-expression twice.
template <class Stream>
boost::asio::awaitable<void> refuse(Conn& c, Stream& s, LedgerEntry e, const Refusal& r, Clock::time_point started);

// Half-closes the client and discards what it still sends, bounded in bytes
// and time, so a refusal is not destroyed by a reset (connection.cpp).
boost::asio::awaitable<void> drain_before_close(Conn& c);

// Runs `work` (a handler of `cp`) with the watchdog beside it, counted among
// the open connections, and ends the connection however `work` ends.
boost::asio::awaitable<void> run_watched(std::shared_ptr<Conn> cp, boost::asio::awaitable<void> work);

std::uint64_t ms_since(Clock::time_point t);

// The leaf certificate for `host` into c.server_tls, before the box's TLS is
// answered (a CONNECT's 200, a captured ClientHello): nullopt, or the
// leaf_unavailable refusal naming why, which the caller sends while it still
// can be read.
std::optional<Refusal> take_server_leaf(Conn& c, const HostName& host);

}  // namespace corral::gateway
