// run/bridge.hpp — the box's only way out: listening sockets on 127.0.0.1:3128
// and [::1]:3128 that live INSIDE the sandbox's network namespace but are
// created, owned and accepted by the root side.
//
//   Sandbox box = launch_sandbox(spec);                          // single-threaded up to here
//   BridgeListeners l = open_bridge_listeners(box.open_network_namespace().get());  // setns and back
//   Bridge bridge(ioc, std::move(l), handler);                   // handler: embedded gateway
//   bridge.start();                                              //   or relay_to_daemon
//   start_command(box); ... supervise ... bridge.stop(); teardown(box);
//
// Nothing of corral runs in the box for this: the box's processes connect to
// a socket whose other end is in our process. The identity of a connection is
// which Bridge accepted it (one per run), never anything the box sends, so a
// box cannot claim another run's identity. The bridge knows nothing of policy:
// the handler decides what happens to each accepted connection.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "base/checked.hpp"
#include "base/fd.hpp"
#include "gateway/daemon_protocol.hpp"

namespace corral::run {

inline constexpr std::uint16_t bridge_port = 3128;
// The box's MCP listener (127.0.0.1 and [::1]), opened only when the worker
// has MCP servers: plain HTTP POSTs to /mcp/NAME, served by the gateway's
// MCP endpoint (gateway/mcp_endpoint.hpp) from outside the box.
inline constexpr std::uint16_t mcp_bridge_port = 3129;
// A box may hold at most this many connections through its bridge at once;
// more are closed as they arrive. A `corral gateway` daemon serves every box
// on the host from one connection cap: this keeps one box from taking it all.
inline constexpr std::uint64_t kMaxConnectionsPerBox = 256;
// Transparent capture's DNS stub (docs/capture.md): UDP on 127.0.0.1 and
// [::1] in the box, which its /etc/resolv.conf names. TCP 53 has no listener.
inline constexpr std::uint16_t dns_stub_port = 53;

struct BridgeListeners {
    Fd ipv4;   // 127.0.0.1:port, listening
    Fd ipv6;   // [::1]:port, IPV6_V6ONLY, listening; invalid when the box's
               // namespace has no IPv6 (disabled on the host): then nothing
               // can reach [::1] in the box either
    Fd sock_diag;  // with_socket_owners: a NETLINK_SOCK_DIAG socket of the
                   // box's namespace, to ask who owns a connecting socket
                   // (gateway/socket_owner.hpp); else invalid
    Fd mcp_ipv4;   // with an mcp_port: 127.0.0.1:mcp_port, listening; else invalid
    Fd mcp_ipv6;   // [::1]:mcp_port, as ipv6
    Fd dns_ipv4;   // with dns: UDP 127.0.0.1:53, bound; else invalid
    Fd dns_ipv6;   // UDP [::1]:53, as ipv6
};

// Enters the network namespace `netns_fd` with setns on the calling thread
// (it changes only that thread's namespace), creates, binds and listens
// there, and switches back to the thread's own namespace before returning
// (aborts if it cannot: nothing may run on in the box's namespace). The
// sockets keep the namespace they were made in. Call it before starting the
// threads that should stay in the host's namespace. Throws SysError naming
// the failed call ("setns", "bind 127.0.0.1:3128", ...). With
// `with_socket_owners` (a session, whose box holds several roles' UIDs) it
// also makes the sock_diag socket the bridge names each connection's role with;
// with an `mcp_port` (not 0) also the MCP listeners, and with `dns` the DNS
// stub's UDP sockets (dns_stub_port), in the same visit.
BridgeListeners open_bridge_listeners(int netns_fd, std::uint16_t port = bridge_port, bool with_socket_owners = false,
                                      std::uint16_t mcp_port = 0, bool dns = false);

// Sockets made in a box's network namespace after its setup, while the run
// serves it (transparent capture's per-address listeners): the calling
// thread setns's into the namespace, makes `count` sockets of `family` and
// `type` (SOCK_CLOEXEC added), and switches back before returning (aborts if
// it cannot, as open_bridge_listeners). Only socket(2) runs in the box's
// namespace; the caller binds and listens back home (a socket keeps the
// namespace it was made in). Serialised by a lock: any thread may call it.
class BoxSockets {
public:
    explicit BoxSockets(Fd netns) : netns_(std::move(netns)) {}
    // Throws SysError naming the failed call.
    std::vector<Fd> make(int family, int type, std::size_t count);

private:
    std::mutex mutex_;
    Fd netns_;
};

// What to do with one accepted connection (the embedded gateway's serve() or
// relay_to_daemon). It owns the socket from then on.
using ConnectionHandler = std::function<boost::asio::awaitable<void>(boost::asio::ip::tcp::socket)>;

// Accepts on a run's listeners (ipv4 and ipv6; a run with MCP servers has a
// second Bridge on mcp_ipv4 and mcp_ipv6, moved into ipv4 and ipv6) and
// hands every connection to the handler.
// Not copyable or movable: the accept loops refer to it.
class Bridge {
public:
    Bridge(boost::asio::io_context& ioc, BridgeListeners listeners, ConnectionHandler handler);
    Bridge(const Bridge&) = delete;
    Bridge& operator=(const Bridge&) = delete;
    ~Bridge();

    // Starts the accept loops on `ioc` (runs when the io_context runs).
    void start();
    // Closes the listeners (a pending accept ends); established connections
    // are left to their handlers. Thread-safe; idempotent.
    void stop();
    // Adopts one more listening socket and starts its accept loop, on the
    // loop's thread after start() (transparent capture's listeners, made
    // as names get addresses); closed by stop() with the others.
    void add_listener(Fd fd, boost::asio::ip::tcp protocol);
    std::uint64_t accepted() const { return accepted_->load(); }

private:
    struct Acceptor;
    boost::asio::io_context& ioc_;
    ConnectionHandler handler_;
    std::mutex acceptors_mutex_;  // add_listener (the loop's thread) against stop() (any thread)
    bool stopped_ = false;
    std::vector<std::shared_ptr<Acceptor>> acceptors_;
    std::shared_ptr<std::atomic<std::uint64_t>> accepted_;
    std::shared_ptr<std::atomic<std::uint64_t>> open_;   // handlers still running
};

// Which of the box's listeners a relayed connection came in on: the daemon
// serves the proxy listener's as its proxy, the MCP listener's as the
// worker's MCP endpoint.
enum class DaemonListener { proxy, mcp };

// Connects to the daemon's Unix socket, sends the announcement for `id` and
// `listener` (gateway/daemon_protocol.hpp: CORRAL-IDENTITY or CORRAL-MCP)
// before any byte of the client's, then relays both ways until both sides are
// done. Never throws: a daemon that cannot be reached closes the client's
// connection (the box sees a reset, nothing else).
boost::asio::awaitable<void> relay_to_daemon(boost::asio::ip::tcp::socket client, std::string socket_path,
                                             gateway::Identity id, DaemonListener listener = DaemonListener::proxy);
// The same with the first line given (a captured connection's CORRAL-CAPTURED).
boost::asio::awaitable<void> relay_to_daemon(boost::asio::ip::tcp::socket client, std::string socket_path,
                                             std::string first_line);

// One line to a root-owned daemon's Unix socket and its one-line answer
// (blocking, `timeout` per step), or why it could not be asked.
Checked<std::string> ask_daemon(const std::string& socket_path, const std::string& line,
                                std::chrono::milliseconds timeout);

// Asks the daemon at `socket_path` for what it counted for `id` (a root peer
// only). Blocking, bounded by `timeout` per step; the problem, one line
// naming the socket and identity, if the daemon cannot be asked or answers
// otherwise.
Checked<gateway::DaemonCounts> query_daemon_counts(const std::string& socket_path, const gateway::Identity& id,
                                                   std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));

}  // namespace corral::run
