#include "gateway/relay.hpp"

#include <fcntl.h>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/write.hpp>

#include <vector>

#include "base/fd.hpp"

namespace corral::gateway {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
using asio::awaitable;

namespace {

// Each tunnel direction's pipe (F_SETPIPE_SZ; 1 MiB is Linux's default
// pipe-max-size, a smaller limit leaves the pipe at its default size). Bigger
// pipes mean fewer splice calls and wakeups per byte: relaying 1 GiB on
// loopback took ~250 ms of gateway CPU with 256 KiB pipes, ~200 ms with 1 MiB.
// Pages sit in the pipe only while bytes are in flight: idle tunnels hold none.
constexpr std::size_t kSplicePipeSize = 1024 * 1024;

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
// never enter user space (no copy, no buffer in our RSS).
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

// One direction of an upgraded (WebSocket) connection.
// With `scrub` (the upstream → box direction of an inject grant) the frames
// are scrubbed on the way; a frame it cannot scan ends the connection, with
// what was wrong in `problem`. `count` is the bytes read from `from`.
template <class From, class To>
awaitable<void> pump_streams(Conn& c, From& from, To& to, std::uint64_t& count, WebSocketScrubber* scrub = nullptr,
                             std::string* problem = nullptr, ResponseObserver* observer = nullptr) {
    std::vector<char> b(16 * 1024);
    std::string scrubbed;
    for (;;) {
        auto [ec, n] = co_await from.async_read_some(asio::buffer(b), nothrow);
        if (ec || n == 0) break;
        c.arm(c.limits().idle_timeout);
        std::string_view piece(b.data(), n);
        if (observer) observer->on_upgraded(piece);
        if (scrub) {
            scrubbed.clear();
            if (auto why = scrub->feed(piece, scrubbed); !why.empty()) {
                if (problem) *problem = std::string(why);
                break;
            }
            piece = scrubbed;
            if (piece.empty()) continue;  // a frame header still arriving
        }
        auto [wec, wn] = co_await asio::async_write(to, asio::buffer(piece.data(), piece.size()), nothrow);
        if (wec) break;
        count += n;
    }
    c.cancel_io();  // either side closing ends the upgraded connection
}

}  // namespace

awaitable<void> relay_sockets(Conn& c, ClientSocket& a, asio::ip::tcp::socket& b, std::uint64_t& a_to_b,
                              std::uint64_t& b_to_a) {
    int p1[2] = {-1, -1}, p2[2] = {-1, -1};
    if (::pipe2(p1, O_CLOEXEC | O_NONBLOCK) == 0 && ::pipe2(p2, O_CLOEXEC | O_NONBLOCK) == 0) {
        Fd r1(p1[0]), w1(p1[1]), r2(p2[0]), w2(p2[1]);
        ::fcntl(w1.get(), F_SETPIPE_SZ, static_cast<int>(kSplicePipeSize));
        ::fcntl(w2.get(), F_SETPIPE_SZ, static_cast<int>(kSplicePipeSize));
        co_await (pump_splice(c, a, b, a_to_b, std::move(r1), std::move(w1)) &&
                  pump_splice(c, b, a, b_to_a, std::move(r2), std::move(w2)));
        co_return;
    }
    // No pipe could be made (fd pressure): copy through pooled buffers.
    if (p1[0] >= 0) ::close(p1[0]), ::close(p1[1]);
    co_await (pump_sockets(c, a, b, a_to_b) && pump_sockets(c, b, a, b_to_a));
}

template <class Client, class Up>
awaitable<void> relay_upgraded(Conn& c, Client& client, Up& up, std::uint64_t& bytes_up, std::uint64_t& bytes_down,
                               WebSocketScrubber* scrub, std::string* problem, ResponseObserver* observer) {
    co_await (pump_streams(c, client, up, bytes_up) &&
              pump_streams(c, up, client, bytes_down, scrub, problem, observer));
}

template awaitable<void> relay_upgraded(Conn&, ClientTls&, UpstreamTls&, std::uint64_t&, std::uint64_t&,
                                        WebSocketScrubber*, std::string*, ResponseObserver*);
template awaitable<void> relay_upgraded(Conn&, ClientSocket&, asio::ip::tcp::socket&, std::uint64_t&, std::uint64_t&,
                                        WebSocketScrubber*, std::string*, ResponseObserver*);

}  // namespace corral::gateway
