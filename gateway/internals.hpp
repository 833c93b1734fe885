// gateway/internals.hpp — shared state of one Gateway, used by the connection
// handlers (connection.cpp and the files it leads to). Not part of the
// gateway's public API.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gateway/approval_desk.hpp"
#include "gateway/gateway.hpp"
#include "gateway/metering/book.hpp"
#include "gateway/secret_scrubber.hpp"

namespace corral::gateway {

// The largest response head the gateway reads from an upstream.
inline constexpr std::size_t kMaxResponseHead = 64 * 1024;
// An upstream read buffer holds one response head plus one read; a body is
// parsed out of it piece by piece, so beyond that it only ever holds a
// chunk-size line or trailer, which Beast bounds by nothing but the buffer.
inline constexpr std::size_t kUpstreamReadBuffer = kMaxResponseHead + 16 * 1024;

// An idle keep-alive TLS connection to an upstream. It is pooled only with an
// empty `buf` after a complete response: bytes left over would otherwise be
// read as the answer to the next request, which may be another identity's.
struct UpstreamConn {
    UpstreamConn(const boost::asio::any_io_executor& ex, boost::asio::ssl::context& ctx) : stream(ex, ctx) {}
    boost::asio::ssl::stream<boost::asio::ip::tcp::socket> stream;
    boost::beast::flat_buffer buf{kUpstreamReadBuffer};
    std::string key;
    std::chrono::steady_clock::time_point idle_since;
};

// Idle upstream connections keyed by host|port|vetted addresses|trust store, so
// a connection is only reused for exactly the target it was vetted for.
class UpstreamPool {
public:
    std::unique_ptr<UpstreamConn> take(const std::string& key);
    void put(std::unique_ptr<UpstreamConn> c);
    // Closes every idle connection (while their event loop still exists).
    void clear();

    static constexpr std::size_t kMaxIdlePerKey = 32;
    static constexpr std::size_t kMaxIdle = 256;
    // Servers commonly close idle keep-alive connections after 60 s or more;
    // dropping ours earlier avoids most stale-connection retries.
    static constexpr std::chrono::seconds kMaxIdleTime{30};

private:
    std::mutex mutex_;
    std::multimap<std::string, std::unique_ptr<UpstreamConn>> idle_;
};

// Fixed-size relay buffers, borrowed only while data is moving so that idle
// tunnels hold no buffer memory (RSS stays small with many open tunnels).
class BufferPool {
public:
    static constexpr std::size_t kSize = 64 * 1024;
    std::unique_ptr<char[]> acquire();
    void release(std::unique_ptr<char[]> b);

private:
    std::mutex mutex_;
    std::vector<std::unique_ptr<char[]>> free_;
};

struct Gateway::Internals {
    Internals(const config::GatewayConfig& c, const std::map<std::string, std::string>& s, Ledger& l,
              const CertificateAuthority& ca, std::atomic<std::size_t>& a)
        : cfg(c), secrets(s), ledger(l), server_tls(ca), active(a), book(c), approvals(l) {}

    const config::GatewayConfig& cfg;
    const std::map<std::string, std::string>& secrets;
    Ledger& ledger;
    ServerTlsCache server_tls;
    ClientTlsCache client_tls;
    HostsTable hosts;
    UpstreamPool pool;
    BufferPool buffers;
    std::atomic<std::size_t>& active;
    std::atomic<bool> draining{false};   // Gateway::begin_drain
    // Model traffic: budgets, usage and cost per identity (gateway/model_traffic.hpp).
    metering::MeteringBook book;
    // Requests a person must approve first (grants with approval = true).
    ApprovalDesk approvals;

    // Per-identity budget: true (and counted) when `identity` may make one more
    // request or tunnel under limits.requests_per_identity.
    bool admit(const std::string& identity);
    std::uint64_t admitted(const std::string& identity) const;

    // Open connections per identity, for limits.max_connections_per_identity.
    // open_connection() counts one more and returns how many `identity` holds
    // with it; close_connection() undoes it (an identity holding none is
    // forgotten, so a daemon's table does not grow with every run it served).
    std::uint64_t open_connection(const std::string& identity);
    void close_connection(const std::string& identity);

    // What the gateway is, for vet_addresses: its listening endpoints and the
    // host's interface addresses. The latter are read (getifaddrs) when first
    // needed and again when older than a second, so a gateway that never
    // vets an address (a plain `corral run`) never reads them, and a
    // long-running daemon follows the host's address changes.
    SelfAddresses self();
    void add_listening(const boost::asio::ip::tcp::endpoint& ep);

    // Inject-mode responses are scrubbed of the injected credential
    // (gateway/response_scrub.hpp). Off only with the environment variable
    // CORRAL_GATEWAY_UNSAFE_NO_SCRUB=1 at start: for the benchmark's
    // on/off comparison, never for serving boxes.
    bool scrub_responses = true;
    // The compiled patterns of one grant's credential (its name and header
    // templates), built on first use and shared by every exchange after.
    std::shared_ptr<const ScrubPatterns> scrub_patterns(const config::CredentialSpec& granted, const std::string& secret);
    // New secrets (Gateway::install_secrets): patterns are rebuilt on next use.
    void forget_scrub_patterns();

private:
    mutable std::mutex budget_mutex_;
    std::map<std::string, std::uint64_t> admitted_;
    std::mutex open_mutex_;
    std::map<std::string, std::uint64_t, std::less<>> open_;
    std::mutex self_mutex_;
    SelfAddresses self_;
    std::optional<std::chrono::steady_clock::time_point> self_read_at_;
    std::mutex scrub_mutex_;
    std::map<std::string, std::shared_ptr<const ScrubPatterns>> scrub_patterns_;
};

// The connection handlers (gateway/first_request.cpp).
boost::asio::awaitable<void> serve_connection(Gateway::Internals& gw, boost::asio::generic::stream_protocol::socket s,
                                              Identity id);
// A captured connection (gateway/captured.cpp): `target` is the name and port
// its local address stands for, nullopt when none (refused, recorded).
boost::asio::awaitable<void> serve_captured_connection(Gateway::Internals& gw,
                                                       boost::asio::generic::stream_protocol::socket s, Identity id,
                                                       std::optional<Authority> target);
// The MCP endpoint's handler (gateway/mcp_exchange.cpp).
boost::asio::awaitable<void> serve_mcp_connection(Gateway::Internals& gw, boost::asio::generic::stream_protocol::socket s,
                                                  Identity id, std::shared_ptr<McpTools> tools);
// Answers a refusal without reading a request (Gateway::refuse).
boost::asio::awaitable<void> refuse_connection(Gateway::Internals& gw, boost::asio::generic::stream_protocol::socket s,
                                               Identity id, std::string code, std::string detail);

}  // namespace corral::gateway
