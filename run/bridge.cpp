#include "run/bridge.hpp"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <thread>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "base/log.hpp"
#include "base/sys_error.hpp"
#include "gateway/socket_owner.hpp"

namespace corral::run {

namespace asio = boost::asio;
using asio::ip::tcp;
constexpr auto nothrow = asio::as_tuple(asio::use_awaitable);

namespace {

// Runs in the box's namespace (helper thread). Returns an invalid Fd and
// sets `err` / `call` on failure.
Fd listen_on(int family, std::uint16_t port, std::string& call, int& err, int type = SOCK_STREAM) {
    Fd s(::socket(family, type | SOCK_CLOEXEC, 0));
    const char* where = family == AF_INET ? "127.0.0.1" : "[::1]";
    if (!s.valid()) {
        call = std::string("socket ") + where;
        err = errno;
        return {};
    }
    int one = 1;
    ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // The listeners are opened while the init is still setting up the box,
    // possibly before it brings `lo` up (loopback addresses appear only
    // then): FREEBIND lets the bind name the address before it exists.
    bool freebind_ok = family == AF_INET
                           ? ::setsockopt(s.get(), IPPROTO_IP, IP_FREEBIND, &one, sizeof one) == 0
                           : ::setsockopt(s.get(), IPPROTO_IPV6, IPV6_FREEBIND, &one, sizeof one) == 0;
    if (!freebind_ok) {
        call = family == AF_INET ? "setsockopt IP_FREEBIND" : "setsockopt IPV6_FREEBIND";
        err = errno;
        return {};
    }
    int rc;
    if (family == AF_INET) {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        rc = ::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
        // v6-only so that the v4 listener alone owns 127.0.0.1 (no mapped-address overlap).
        if (::setsockopt(s.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) != 0) {
            call = "setsockopt IPV6_V6ONLY";
            err = errno;
            return {};
        }
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(port);
        a.sin6_addr = in6addr_loopback;
        rc = ::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    if (rc != 0) {
        call = std::string("bind ") + where + ":" + std::to_string(port);
        err = errno;
        return {};
    }
    if (type == SOCK_STREAM && ::listen(s.get(), 128) != 0) {
        call = std::string("listen ") + where;
        err = errno;
        return {};
    }
    return s;
}

// One port's two listeners, opened in the box's namespace; checked (and
// thrown about) only once the thread is back in its own.
struct ListenerPair {
    Fd ipv4, ipv6;
    std::string call4, call6;
    int err4 = 0, err6 = 0;

    void open(std::uint16_t port, int type = SOCK_STREAM) {
        ipv4 = listen_on(AF_INET, port, call4, err4, type);
        ipv6 = listen_on(AF_INET6, port, call6, err6, type);
    }
    void check() const {
        if (!ipv4.valid()) throw SysError(call4, "in the sandbox's network namespace", err4);
        if (ipv6.valid()) return;
        // Only a namespace without IPv6 is acceptable: then no [::1] exists to reach.
        if (err6 != EADDRNOTAVAIL && err6 != EAFNOSUPPORT)
            throw SysError(call6, "in the sandbox's network namespace", err6);
        log::debug("bridge: no IPv6 loopback in the sandbox (" + call6 + ": " + errno_text(err6) + "); IPv4 only");
    }
};

}  // namespace

BridgeListeners open_bridge_listeners(int netns_fd, std::uint16_t port, bool with_socket_owners, std::uint16_t mcp_port,
                                      bool dns) {
    BridgeListeners out;
    ListenerPair proxy, mcp, stub;
    std::string diag_problem;
    // setns affects only the calling thread, and the sockets keep the
    // namespace they were made in. Done on this thread and switched back,
    // rather than on a helper thread: a new thread waits for a CPU slot, which
    // on a loaded host cost up to tens of ms of every run's start.
    Fd home(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!home.valid()) throw SysError("open", "/proc/thread-self/ns/net", errno);
    if (::setns(netns_fd, CLONE_NEWNET) != 0)
        throw SysError("setns", "CLONE_NEWNET (the sandbox's network namespace)", errno);
    proxy.open(port);
    if (mcp_port != 0) mcp.open(mcp_port);
    if (dns) stub.open(dns_stub_port, SOCK_DGRAM);
    if (with_socket_owners) {
        try {
            out.sock_diag = gateway::open_sock_diag_socket();
        } catch (const std::exception& e) {
            diag_problem = e.what();
        }
    }
    // Back before anything else runs: threads started later (the gateway's)
    // inherit this thread's namespace. Failing that, nothing may go on here.
    if (::setns(home.get(), CLONE_NEWNET) != 0) {
        log::error("bridge: setns back to the host's network namespace failed: " + errno_text(errno));
        std::abort();
    }
    proxy.check();
    if (!diag_problem.empty()) throw std::runtime_error(diag_problem + " (in the sandbox's network namespace)");
    if (mcp_port != 0) mcp.check();
    if (dns) stub.check();
    out.ipv4 = std::move(proxy.ipv4);
    out.dns_ipv4 = std::move(stub.ipv4);
    out.dns_ipv6 = std::move(stub.ipv6);
    out.ipv6 = std::move(proxy.ipv6);
    out.mcp_ipv4 = std::move(mcp.ipv4);
    out.mcp_ipv6 = std::move(mcp.ipv6);
    return out;
}

std::vector<Fd> BoxSockets::make(int family, int type, std::size_t count) {
    std::lock_guard lock(mutex_);
    std::vector<Fd> out;
    Fd home(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!home.valid()) throw SysError("open", "/proc/thread-self/ns/net", errno);
    if (::setns(netns_.get(), CLONE_NEWNET) != 0)
        throw SysError("setns", "CLONE_NEWNET (the sandbox's network namespace)", errno);
    int err = 0;
    for (std::size_t i = 0; i < count && err == 0; ++i) {
        Fd s(::socket(family, type | SOCK_CLOEXEC, 0));
        if (!s.valid()) err = errno;
        out.push_back(std::move(s));
    }
    // Back before anything else runs on this thread (it may be a gateway's).
    if (::setns(home.get(), CLONE_NEWNET) != 0) {
        log::error("bridge: setns back to the host's network namespace failed: " + errno_text(errno));
        std::abort();
    }
    if (err != 0) throw SysError("socket", "in the sandbox's network namespace", err);
    return out;
}

struct Bridge::Acceptor {
    tcp::acceptor acceptor;
    explicit Acceptor(asio::io_context& ioc) : acceptor(ioc) {}
};

namespace {

// One connection's handler, counted while it runs.
asio::awaitable<void> counted(asio::awaitable<void> work, std::shared_ptr<std::atomic<std::uint64_t>> open) {
    struct Release {
        std::atomic<std::uint64_t>& n;
        ~Release() { n.fetch_sub(1); }
    } release{*open};
    co_await std::move(work);
}

asio::awaitable<void> accept_loop(std::shared_ptr<tcp::acceptor> keep, tcp::acceptor& acceptor,
                                  ConnectionHandler handler, std::shared_ptr<std::atomic<std::uint64_t>> accepted,
                                  std::shared_ptr<std::atomic<std::uint64_t>> open) {
    bool said_full = false;
    for (;;) {
        auto [ec, s] = co_await acceptor.async_accept(nothrow);
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
        if (ec) {
            // EMFILE and the like: don't spin; the box retries.
            log::warn("bridge: accept: " + ec.message());
            asio::steady_timer t(acceptor.get_executor(), std::chrono::milliseconds(50));
            co_await t.async_wait(nothrow);
            continue;
        }
        accepted->fetch_add(1);
        if (open->load() >= kMaxConnectionsPerBox) {
            // The box's share of the gateway (a daemon serves every box on
            // the host) is used up: this one is closed at once, not queued.
            if (!said_full)
                log::warn("bridge: the box holds " + std::to_string(kMaxConnectionsPerBox) +
                          " open connections; closing new ones until some end");
            said_full = true;
            boost::system::error_code ignored;
            s.close(ignored);
            continue;
        }
        said_full = false;
        // Without it, a streamed answer relayed in small writes (SSE events,
        // a daemon's relay) waits on the box's delayed ACK: 40 ms a request
        // on keep-alive (tools/bench/scale.sh, docs/benchmarks.md).
        boost::system::error_code ignored;
        s.set_option(tcp::no_delay(true), ignored);
        open->fetch_add(1);
        asio::co_spawn(acceptor.get_executor(), counted(handler(std::move(s)), open), asio::detached);
    }
    (void)keep;
}

}  // namespace

Bridge::Bridge(asio::io_context& ioc, BridgeListeners listeners, ConnectionHandler handler)
    : ioc_(ioc),
      handler_(std::move(handler)),
      accepted_(std::make_shared<std::atomic<std::uint64_t>>(0)),
      open_(std::make_shared<std::atomic<std::uint64_t>>(0)) {
    auto adopt = [&](Fd fd, tcp protocol) {
        if (!fd.valid()) return;
        auto a = std::make_shared<Acceptor>(ioc_);
        a->acceptor.assign(protocol, fd.release());
        acceptors_.push_back(std::move(a));
    };
    adopt(std::move(listeners.ipv4), tcp::v4());
    adopt(std::move(listeners.ipv6), tcp::v6());
}

Bridge::~Bridge() { stop(); }

void Bridge::start() {
    std::lock_guard lock(acceptors_mutex_);
    for (auto& a : acceptors_) {
        // The aliasing shared_ptr keeps the Acceptor alive as long as its loop runs.
        std::shared_ptr<tcp::acceptor> keep(a, &a->acceptor);
        asio::co_spawn(ioc_, accept_loop(keep, a->acceptor, handler_, accepted_, open_), asio::detached);
    }
}

void Bridge::add_listener(Fd fd, tcp protocol) {
    std::lock_guard lock(acceptors_mutex_);
    if (stopped_) return;  // the Fd closes here
    auto a = std::make_shared<Acceptor>(ioc_);
    a->acceptor.assign(protocol, fd.release());
    acceptors_.push_back(a);
    std::shared_ptr<tcp::acceptor> keep(a, &a->acceptor);
    asio::co_spawn(ioc_, accept_loop(keep, a->acceptor, handler_, accepted_, open_), asio::detached);
}

void Bridge::stop() {
    std::lock_guard lock(acceptors_mutex_);
    stopped_ = true;
    for (auto& a : acceptors_) {
        // Closing from another thread would race the pending accept: do it on the loop.
        asio::post(ioc_, [a] {
            boost::system::error_code ec;
            a->acceptor.close(ec);
        });
    }
}

namespace {

template <typename From, typename To>
asio::awaitable<void> pump(From& from, To& to) {
    char buf[16384];
    for (;;) {
        auto [ec, n] = co_await from.async_read_some(asio::buffer(buf), nothrow);
        if (n > 0) {
            auto [wec, wn] = co_await asio::async_write(to, asio::buffer(buf, n), nothrow);
            if (wec) break;
        }
        if (ec) break;
    }
    // Half-close: the other direction may still carry the answer.
    boost::system::error_code ignored;
    to.shutdown(asio::socket_base::shutdown_send, ignored);
}

// SO_PEERCRED of a connected Unix socket: the other end runs as root.
bool peer_is_root(int fd) {
    ucred cred{};
    socklen_t len = sizeof cred;
    return ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof cred && cred.uid == 0;
}

// How long a box's connection waits for room in a loaded daemon's queue of
// connections not yet accepted, before it is given up.
constexpr std::chrono::seconds kDaemonQueueWait{10};

// Connects `daemon` to the Unix socket at `path`. A listener whose queue is
// full answers EAGAIN, not EINPROGRESS: Asio's async_connect would then call
// the socket connected although it is not (and SO_PEERCRED reads no one).
// So the connect is made here, non-blocking, and on EAGAIN tried again with
// a growing pause (1 ms to 100 ms) for up to kDaemonQueueWait: a daemon
// falling behind under load delays the box's connection, never drops it.
asio::awaitable<boost::system::error_code> connect_when_queue_has_room(asio::local::stream_protocol::socket& daemon,
                                                                       const std::string& path) {
    boost::system::error_code ec;
    const asio::local::stream_protocol::endpoint ep(path);
    daemon.open(ep.protocol(), ec);
    if (!ec) daemon.non_blocking(true, ec);
    if (ec) co_return ec;
    const auto deadline = std::chrono::steady_clock::now() + kDaemonQueueWait;
    std::chrono::milliseconds pause{1};
    for (;;) {
        if (::connect(daemon.native_handle(), ep.data(), static_cast<socklen_t>(ep.size())) == 0) co_return ec;
        const int err = errno;
        if (err == EINTR) continue;
        if (err != EAGAIN || std::chrono::steady_clock::now() + pause > deadline)
            co_return boost::system::error_code(err, boost::system::system_category());
        asio::steady_timer t(daemon.get_executor(), pause);
        auto [tec] = co_await t.async_wait(nothrow);
        if (tec) co_return tec;
        pause = std::min(pause * 2, std::chrono::milliseconds(100));
    }
}

}  // namespace

asio::awaitable<void> relay_to_daemon(tcp::socket client, std::string socket_path, gateway::Identity id,
                                      DaemonListener listener) {
    std::string line = listener == DaemonListener::mcp ? gateway::mcp_announcement(id) : gateway::identity_announcement(id);
    co_await relay_to_daemon(std::move(client), std::move(socket_path), std::move(line));
}

asio::awaitable<void> relay_to_daemon(tcp::socket client, std::string socket_path, std::string line) {
    using namespace asio::experimental::awaitable_operators;
    try {
        asio::local::stream_protocol::socket daemon(client.get_executor());
        const auto cec = co_await connect_when_queue_has_room(daemon, socket_path);
        if (cec) {
            log::warn("bridge: cannot reach the gateway daemon at " + socket_path + ": " + cec.message() +
                      (cec.value() == EAGAIN ? " (its queue of connections stayed full for " +
                                                   std::to_string(kDaemonQueueWait.count()) + " s)"
                                             : std::string()));
            co_return;
        }
        // Only a root daemon gets the box's traffic and identity: a socket
        // someone else put at this path is refused.
        if (!peer_is_root(daemon.native_handle())) {
            log::warn("bridge: the gateway daemon at " + socket_path + " is not root's; connection refused");
            co_return;
        }
        auto [wec, wn] = co_await asio::async_write(daemon, asio::buffer(line), nothrow);
        if (wec) co_return;
        co_await (pump(client, daemon) && pump(daemon, client));
    } catch (const std::exception& e) {
        log::warn(std::string("bridge: relay to the gateway daemon: ") + e.what());
    }
}

Checked<std::string> ask_daemon(const std::string& socket_path, const std::string& line,
                                std::chrono::milliseconds timeout) {
    auto fail = [](std::string why) { return Failed{std::move(why)}; };
    Fd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s.valid()) return fail("socket: " + errno_text(errno));
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    ::setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(s.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (socket_path.size() >= sizeof addr.sun_path) return fail("socket path too long");
    std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
    if (::connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
        return fail("connect: " + errno_text(errno));
    if (!peer_is_root(s.get())) return fail("the daemon is not root's");
    if (::send(s.get(), line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size()))
        return fail("send: " + errno_text(errno));
    std::string answer;
    char buf[256];
    while (answer.find('\n') == std::string::npos && answer.size() < 64 * 1024) {
        ssize_t n = ::recv(s.get(), buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail("recv: " + errno_text(errno));
        if (n == 0) break;
        answer.append(buf, static_cast<std::size_t>(n));
    }
    return answer;
}

Checked<gateway::DaemonCounts> query_daemon_counts(const std::string& socket_path, const gateway::Identity& id,
                                                   std::chrono::milliseconds timeout) {
    auto fail = [&](const std::string& why) {
        return Failed{"gateway daemon at " + socket_path + ": no counts for " + id.str() + ": " + why};
    };
    auto answer = ask_daemon(socket_path, gateway::counts_request(id), timeout);
    if (!answer) return fail(answer.problem());
    auto counts = gateway::parse_counts_answer(*answer);
    if (!counts) return fail(counts.problem());
    return counts;
}

}  // namespace corral::run
