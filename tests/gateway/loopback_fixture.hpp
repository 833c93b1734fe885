// tests/gateway/loopback_fixture.hpp — the world of the gateway_loopback
// cases: a real Gateway (in process, on 127.0.0.1:0) in front of real
// in-process TLS upstreams on 127.0.0.1, driven by real TLS clients. Nothing
// here dials anything but 127.0.0.1: every name comes from the test's own
// hosts file, and refused targets are refused before any connection is
// attempted. The cases: test_loopback_relay.cpp (inject and tunnel),
// test_loopback_limits.cpp (limits and refusals), test_loopback_daemon.cpp
// (`corral gateway` as a daemon).
#pragma once

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gateway/ca.hpp"
#include "gateway/gateway.hpp"

namespace corral::test::loopback {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using asio::ip::tcp;
using gateway::CertificateAuthority;
using gateway::Gateway;
using gateway::Identity;
using gateway::LeafCertificate;

inline constexpr auto nothrow = asio::as_tuple(asio::use_awaitable);
inline const std::string kSecret = "sk-real-7f3a9c1e-DO-NOT-LEAK";
inline const std::string kSentinel = "sk-sentinel-placeholder";

struct TempDir {
    std::string path;
    TempDir();
    ~TempDir();
};

std::string slurp(const std::string& path);

// Opens, binds and listens `acceptor` on 127.0.0.1, a free port; returns the port.
unsigned short listen_on_loopback(tcp::acceptor& acceptor);

// A TLS HTTP/1.1 upstream with a few behaviours the gateway must relay.
struct Upstream {
    asio::io_context ioc;
    asio::ssl::context ctx{asio::ssl::context::tls_server};
    tcp::acceptor acceptor{ioc};
    std::thread thread;
    std::uint16_t port = 0;
    std::atomic<int> connections{0};
    std::atomic<int> requests{0};
    std::atomic<bool> sse_released{false};
    std::atomic<bool> sse_waited_for_client{false};
    std::mutex mutex;
    std::vector<std::string> heads;  // every request head the upstream received
    std::uint64_t body_bytes = 0;

    explicit Upstream(const LeafCertificate& leaf);
    ~Upstream();
    std::string all_heads();

private:
    asio::awaitable<void> accept_loop();
    asio::awaitable<void> session(asio::ssl::stream<tcp::socket> s);
};

// The gateway under test, on its own io_context thread.
struct GatewayUnderTest {
    // Declared before the io_context, so destroyed after it: the connections'
    // coroutine frames, destroyed with the io_context, give their pooled
    // buffers back to the gateway (as corral run and the daemon order them).
    std::unique_ptr<Gateway> gw;
    asio::io_context ioc;
    tcp::acceptor acceptor{ioc};
    tcp::acceptor acceptor_b{ioc};  // a second box: its connections are served as id_b
    std::thread thread;
    std::uint16_t port = 0;
    std::uint16_t port_b = 0;
    Identity id{"worker-a", "run-1"};
    std::string refuse_with;  // a reason code: every connection is refused with it (Gateway::refuse)
    Identity id_b{"worker-b", "run-1"};

    GatewayUnderTest(config::GatewayConfig cfg, std::map<std::string, std::string> secrets, std::string refusal = "");
    ~GatewayUnderTest();
    // Waits (up to 5 s) until the gateway holds exactly `n` connections: a
    // client's connect() returns before the gateway has accepted and counted it.
    bool wait_for_active(std::size_t n) const;

private:
    std::uint16_t listen(tcp::acceptor& a);
    asio::awaitable<void> accept_loop(tcp::acceptor& a, Identity who);
};

// A blocking client: proxy request, then optionally TLS through the tunnel.
struct Client {
    asio::io_context ioc;
    tcp::socket sock{ioc};
    asio::ssl::context ctx{asio::ssl::context::tls_client};
    std::unique_ptr<asio::ssl::stream<tcp::socket>> tls;
    beast::flat_buffer buf;

    explicit Client(std::uint16_t port);
    void write(const std::string& data);
    // Reads one response (head and body); the parser's error is returned in ec.
    http::response<http::string_body> read_response(beast::error_code& ec, bool head_only = false);
    // write() then read_response(), which must succeed.
    http::response<http::string_body> roundtrip(const std::string& request);
    // The CONNECT's status, -1 if no response head arrived.
    int connect_tunnel(const std::string& authority);
    // TLS through the tunnel; `sni` is what the client asks for, `verify_host`
    // what the certificate must name.
    beast::error_code start_tls(const std::string& sni, const std::string& verify_host, const std::string& ca_file);
    std::string alpn() const;
};

// Fixture: two CAs (corral's and the upstream's), upstreams, config.
struct World {
    TempDir dir;
    CertificateAuthority upstream_ca = CertificateAuthority::load_or_create(dir.path + "/upstream-ca");
    CertificateAuthority stranger_ca = CertificateAuthority::load_or_create(dir.path + "/stranger-ca");
    Upstream good{*upstream_ca.mint_leaf("up.test")};
    Upstream wrong_name{*upstream_ca.mint_leaf("other.test")};
    Upstream untrusted{*stranger_ca.mint_leaf("untrusted.test")};

    World();
    std::string corral_ca() const { return dir.path + "/state/ca/ca.crt"; }
    std::string ledger() const { return dir.path + "/ledger.jsonl"; }

    static config::Route route(std::string method, std::string path, bool prefix = false);
    config::GatewayConfig config() const;
    std::map<std::string, std::string> secrets() const { return {{"k", kSecret}}; }
};

std::string up_authority(const World& w);
// A client whose TLS to up.test (an inject grant) goes through the gateway.
std::unique_ptr<Client> inject_client(const World& w, const GatewayUnderTest& g);
// A GET of `path` to up.test, `extra` header lines added.
std::string get(const World& w, const std::string& path, const std::string& extra = "");

}  // namespace corral::test::loopback
