// run/capture_service.hpp — transparent capture in a run (docs/capture.md):
// the box's DNS stub, served from here, and the captured listeners its
// answers bring into being; their connections go to the run's gateway (the
// embedded one, or the node's daemon: CaptureEndpoint) as the CONNECT they
// stand for.
//
//   box: getaddrinfo("api.example.com") ── UDP 127.0.0.1:53 ──► answer(): capture::resolve
//        (a granted name gets 198.18.x.y; before the answer leaves, a listener on
//         198.18.x.y:P for each port P a grant names for it is made in the box)
//   box: connect(198.18.x.y:443) ──► captured listener ──► getsockname → name
//        ──► Gateway::serve_captured(socket, identity, name:443)
//
// Everything runs on the run's one event-loop thread. The work per datagram
// is bounded (one parse of at most 512 bytes, one grant lookup, at most one
// name's listeners), the only queue is the socket's receive buffer (kept
// small), and past kDnsQueriesPerSecond queries are read and dropped.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include "base/fd.hpp"
#include "capture/resolver.hpp"
#include "capture/synthetic_addresses.hpp"
#include "gateway/gateway.hpp"
#include "run/bridge.hpp"

namespace corral::run {

// Captured listeners one run may hold (sockets: one per name, port and
// family). Each is a descriptor of corral's own process; past this a new
// name is answered REFUSED (synthetic_addresses_exhausted).
inline constexpr std::size_t kMaxCapturedListeners = 1024;
// Queries answered per second (a token bucket as deep); more are dropped
// unread, with one dns_rate_limited ledger line per second at most.
inline constexpr unsigned kDnsQueriesPerSecond = 1000;
// Refused names written to the ledger per second at most (a bucket as deep),
// and each (name, reason) at most once per kDnsLineRepeat.
inline constexpr unsigned kDnsLedgerLinesPerSecond = 20;
inline constexpr std::chrono::seconds kDnsLineRepeat{10};

class ConnectionRoles;  // run/egress.hpp

// Where the stub's questions and the captured connections go.
struct CaptureEndpoint {
    // The ports the identity's grants give a name (none: NXDOMAIN).
    std::function<std::vector<std::uint16_t>(const gateway::Identity&, const names::HostName&)> granted_ports;
    // One captured connection, the name and port its address stands for
    // (nullopt: none, refused and recorded there).
    std::function<boost::asio::awaitable<void>(boost::asio::ip::tcp::socket, gateway::Identity,
                                               std::optional<names::Authority>)>
        serve;
    // A refused query's ledger line (mode "dns").
    std::function<void(const gateway::LedgerEntry&)> record;
};
// The gateway embedded in the supervisor: its grants, serve_captured, its ledger.
CaptureEndpoint embedded_capture(gateway::Gateway& gw);
// The node's `corral gateway` daemon at `socket_path` (--gateway unix:PATH):
// CORRAL-GRANTED asked (each name's answer kept kGrantedAnswerFor), captured
// connections relayed as CORRAL-CAPTURED, refusals sent as CORRAL-DNS
// (gateway/daemon_protocol.hpp). A daemon that does not answer grants
// nothing: the name gets NXDOMAIN.
CaptureEndpoint daemon_capture(std::string socket_path);
inline constexpr std::chrono::seconds kGrantedAnswerFor{2};

class CaptureService {
public:
    // `dns4`/`dns6`: the stub's UDP sockets (open_bridge_listeners with dns;
    // dns6 invalid when the box has no IPv6, whose AAAA then get no address).
    // `roles`: a session's (each connection served as its socket owner's
    // role), null for a run.
    CaptureService(boost::asio::io_context& ioc, CaptureEndpoint endpoint, gateway::Identity id, std::string hostname,
                   Fd netns, Fd dns4, Fd dns6, std::shared_ptr<const ConnectionRoles> roles);
    ~CaptureService();
    CaptureService(const CaptureService&) = delete;
    CaptureService& operator=(const CaptureService&) = delete;

    // Starts the stub's receive loops and the listeners' bridge on the loop.
    void start();
    // Closes the stub's sockets and every captured listener (connections
    // already accepted are the gateway's), on the loop. Thread-safe.
    // Destroy only once the loop has stopped.
    void stop();

    std::size_t listeners() const { return listeners_made_; }

private:
    struct Stub;
    boost::asio::awaitable<void> serve_dns(boost::asio::ip::udp::socket& sock);
    std::vector<std::uint8_t> answer(const std::uint8_t* data, std::size_t size);
    bool take_query_token();
    // The listeners of a name just answered with an address of `family`;
    // false when they cannot be made (the answer is then REFUSED).
    bool ensure_listeners(const names::HostName& name, int family, std::string& problem);
    void ledger_refusal(const capture::Resolution& r, bool rate_line = false);

    boost::asio::io_context& ioc_;
    CaptureEndpoint endpoint_;
    gateway::Identity id_;
    capture::ResolverContext ctx_;
    capture::SyntheticAddresses addresses_;
    BoxSockets sockets_;
    std::unique_ptr<Bridge> captured_;
    std::vector<std::shared_ptr<Stub>> stubs_;
    std::map<std::pair<std::string, int>, std::set<std::uint16_t>> listening_;  // (name, family) → ports listened on
    std::size_t listeners_made_ = 0;
    // Rate limits (the loop's thread only).
    std::chrono::steady_clock::time_point refilled_ = std::chrono::steady_clock::now();
    double query_tokens_ = kDnsQueriesPerSecond;
    double line_tokens_ = kDnsLedgerLinesPerSecond;
    std::uint64_t dropped_ = 0;
    std::chrono::steady_clock::time_point dropped_said_{};
    std::map<std::string, std::chrono::steady_clock::time_point> said_;  // "reason name" → last line
};

}  // namespace corral::run
