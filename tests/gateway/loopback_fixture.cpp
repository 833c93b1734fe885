#include "tests/gateway/loopback_fixture.hpp"

#include <openssl/ssl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

namespace corral::test::loopback {

namespace fs = std::filesystem;

namespace {

std::string to_hex(std::size_t n) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%zx", n);
    return buf;
}

}  // namespace

TempDir::TempDir() {
    char tmpl[] = "/tmp/corral-gw-loopback.XXXXXX";
    path = ::mkdtemp(tmpl);
}

TempDir::~TempDir() { fs::remove_all(path); }

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

unsigned short listen_on_loopback(tcp::acceptor& acceptor) {
    tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
    acceptor.open(ep.protocol());
    acceptor.bind(ep);
    acceptor.listen();
    return acceptor.local_endpoint().port();
}

// ---------------------------------------------------------------------------
// Upstream

Upstream::Upstream(const LeafCertificate& leaf) {
    SSL_CTX_use_certificate(ctx.native_handle(), leaf.cert.get());
    SSL_CTX_use_PrivateKey(ctx.native_handle(), leaf.key.get());
    port = listen_on_loopback(acceptor);
    asio::co_spawn(ioc, accept_loop(), asio::detached);
    thread = std::thread([this] { ioc.run(); });
}

Upstream::~Upstream() {
    ioc.stop();
    thread.join();
}

std::string Upstream::all_heads() {
    std::lock_guard l(mutex);
    std::string out;
    for (auto& h : heads) out += h + "\n----\n";
    return out;
}

asio::awaitable<void> Upstream::accept_loop() {
    for (;;) {
        auto [ec, s] = co_await acceptor.async_accept(nothrow);
        if (ec) co_return;
        asio::co_spawn(ioc, session(asio::ssl::stream<tcp::socket>(std::move(s), ctx)), asio::detached);
    }
}

asio::awaitable<void> Upstream::session(asio::ssl::stream<tcp::socket> s) {
    ++connections;
    auto [hec] = co_await s.async_handshake(asio::ssl::stream_base::server, nothrow);
    if (hec) co_return;
    beast::flat_buffer b;
    for (;;) {
        http::request_parser<http::string_body> p;
        p.body_limit(64 << 20);
        auto [ec, n] = co_await http::async_read(s, b, p, nothrow);
        if (ec) co_return;
        auto req = p.release();
        ++requests;
        {
            std::lock_guard l(mutex);
            std::ostringstream h;
            h << req.base();
            heads.push_back(h.str());
            body_bytes += req.body().size();
        }
        std::string target(req.target());
        // Misbehaving answers, written raw.
        std::string raw;
        bool hang_up = false;
        if (target == "/stale") {
            // A complete response with a second one behind it, in one write.
            raw = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                  "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nSTALE";
        } else if (target == "/trailer") {
            raw = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Trailer: t\r\n\r\n";
        } else if (target == "/longchunkline") {
            // A chunk-size line that never ends; the connection stays open for 4 s.
            raw = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;a=" + std::string(200000, 'a');
            hang_up = true;
        } else if (target == "/interim9" || target == "/interim-big") {
            bool big = target == "/interim-big";
            std::string hint = "HTTP/1.1 103 Early Hints\r\nLink: </a" +
                               (big ? std::string(60000, 'a') : std::string()) + ">; rel=preload\r\n\r\n";
            for (int i = 0; i < (big ? 5 : 9); ++i) raw += hint;
            raw += "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        } else if (target == "/ws-h2c") {
            raw = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n";
            hang_up = true;
        }
        if (!raw.empty()) {
            auto [wec, wn] = co_await asio::async_write(s, asio::buffer(raw), nothrow);
            if (wec) co_return;
            if (!hang_up) continue;
            asio::steady_timer t(ioc);
            t.expires_after(std::chrono::seconds(4));
            co_await t.async_wait(nothrow);
            co_return;
        }
        if (websocket::is_upgrade(req)) {
            websocket::stream<asio::ssl::stream<tcp::socket>> ws(std::move(s));
            auto [aec] = co_await ws.async_accept(req, nothrow);
            if (aec) co_return;
            for (;;) {
                beast::flat_buffer m;
                auto [rec, rn] = co_await ws.async_read(m, nothrow);
                if (rec) co_return;
                ws.text(ws.got_text());
                auto [wec, wn] = co_await ws.async_write(m.data(), nothrow);
                if (wec) co_return;
            }
        }
        if (target == "/sse") {
            std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
            std::string one = "data: one\n\n";
            std::string first = head + to_hex(one.size()) + "\r\n" + one + "\r\n";
            co_await asio::async_write(s, asio::buffer(first), nothrow);
            // Hold the rest until the client has seen event one (or 5 s pass).
            asio::steady_timer t(ioc);
            for (int i = 0; i < 500 && !sse_released; ++i) {
                t.expires_after(std::chrono::milliseconds(10));
                co_await t.async_wait(nothrow);
            }
            sse_waited_for_client = sse_released.load();
            std::string two = "data: two\n\n";
            std::string rest = to_hex(two.size()) + "\r\n" + two + "\r\n0\r\n\r\n";
            co_await asio::async_write(s, asio::buffer(rest), nothrow);
            continue;
        }
        http::response<http::string_body> res{http::status::ok, 11};
        if (target == "/big") {
            res.body() = std::string(1 << 20, 'x');
        } else {
            // Report what arrived without echoing values the client must not see.
            res.body() = std::string("key-is-real=") + (req["x-api-key"] == kSecret ? "yes" : "no") +
                         " authorization=" + (req.find(http::field::authorization) != req.end() ? "present" : "absent") +
                         " cookie=" + (req.find(http::field::cookie) != req.end() ? "present" : "absent") +
                         " beta=" + std::string(req["anthropic-beta"]) +
                         " body=" + std::to_string(req.body().size()) + "\n";
        }
        res.prepare_payload();
        auto [wec, wn] = co_await http::async_write(s, res, nothrow);
        if (wec) co_return;
    }
}

// ---------------------------------------------------------------------------
// GatewayUnderTest

GatewayUnderTest::GatewayUnderTest(config::GatewayConfig cfg, std::map<std::string, std::string> secrets,
                                   std::string refusal)
    : refuse_with(std::move(refusal)) {
    gw = std::make_unique<Gateway>(std::move(cfg), std::move(secrets));
    port = listen(acceptor);
    port_b = listen(acceptor_b);
    asio::co_spawn(ioc, accept_loop(acceptor, id), asio::detached);
    asio::co_spawn(ioc, accept_loop(acceptor_b, id_b), asio::detached);
    thread = std::thread([this] { ioc.run(); });
}

GatewayUnderTest::~GatewayUnderTest() {
    ioc.stop();
    thread.join();
    gw->close_idle_upstreams();  // while ioc, their reactor, still exists
}

std::uint16_t GatewayUnderTest::listen(tcp::acceptor& a) {
    const std::uint16_t p = listen_on_loopback(a);
    gw->add_listening_endpoint(a.local_endpoint());
    return p;
}

asio::awaitable<void> GatewayUnderTest::accept_loop(tcp::acceptor& a, Identity who) {
    for (;;) {
        auto [ec, s] = co_await a.async_accept(nothrow);
        if (ec) co_return;
        if (refuse_with.empty())
            asio::co_spawn(ioc, gw->serve(std::move(s), who), asio::detached);
        else
            asio::co_spawn(ioc, gw->refuse(std::move(s), who, refuse_with, "because the test says so"),
                           asio::detached);
    }
}

bool GatewayUnderTest::wait_for_active(std::size_t n) const {
    for (int i = 0; i < 500; ++i) {
        if (gw->active_connections() == n) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

// ---------------------------------------------------------------------------
// Client

Client::Client(std::uint16_t port) { sock.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port)); }

void Client::write(const std::string& data) {
    if (tls)
        asio::write(*tls, asio::buffer(data));
    else
        asio::write(sock, asio::buffer(data));
}

http::response<http::string_body> Client::read_response(beast::error_code& ec, bool head_only) {
    http::response_parser<http::string_body> p;
    p.body_limit(64 << 20);
    if (head_only) p.skip(true);
    if (tls)
        http::read(*tls, buf, p, ec);
    else
        http::read(sock, buf, p, ec);
    return p.release();
}

http::response<http::string_body> Client::roundtrip(const std::string& request) {
    write(request);
    beast::error_code ec;
    auto res = read_response(ec);
    REQUIRE_MESSAGE(!ec, "reading response: " << ec.message());
    return res;
}

int Client::connect_tunnel(const std::string& authority) {
    write("CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n\r\n");
    beast::error_code ec;
    auto res = read_response(ec, true);
    if (ec) return -1;
    return res.result_int();
}

beast::error_code Client::start_tls(const std::string& sni, const std::string& verify_host, const std::string& ca_file) {
    ctx.load_verify_file(ca_file);
    ctx.set_verify_mode(asio::ssl::verify_peer);
    tls = std::make_unique<asio::ssl::stream<tcp::socket>>(std::move(sock), ctx);
    SSL_set_tlsext_host_name(tls->native_handle(), sni.c_str());
    SSL_set1_host(tls->native_handle(), verify_host.c_str());
    static const unsigned char alpn[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    SSL_set_alpn_protos(tls->native_handle(), alpn, sizeof alpn);
    beast::error_code ec;
    tls->handshake(asio::ssl::stream_base::client, ec);
    return ec;
}

std::string Client::alpn() const {
    const unsigned char* p = nullptr;
    unsigned len = 0;
    SSL_get0_alpn_selected(tls->native_handle(), &p, &len);
    return std::string(reinterpret_cast<const char*>(p), len);
}

// ---------------------------------------------------------------------------
// World

World::World() {
    std::ofstream hosts(dir.path + "/hosts");
    hosts << "127.0.0.1 up.test tun.test wrong.test untrusted.test\n";
}

config::Route World::route(std::string method, std::string path, bool prefix) {
    config::Route r;
    r.method = method, r.path = path, r.prefix = prefix, r.text = method + " " + path + (prefix ? "*" : "");
    return r;
}

config::GatewayConfig World::config() const {
    config::GatewayConfig cfg;
    cfg.gateway.ledger = ledger();
    cfg.gateway.state_dir = dir.path + "/state";
    cfg.gateway.upstream_ca_file = upstream_ca.certificate_path();
    cfg.gateway.hosts_file = dir.path + "/hosts";
    cfg.gateway.listen_tcp = "127.0.0.1:0";
    cfg.gateway.limits.max_body_bytes = 1024;
    cfg.gateway.limits.max_response_bytes = 256 * 1024;
    cfg.gateway.limits.read_timeout = std::chrono::milliseconds(1000);
    cfg.gateway.limits.idle_timeout = std::chrono::milliseconds(5000);
    config::CredentialSpec k;
    k.name = "k";
    k.kind = config::CredentialKind::api_key;
    k.env = "UNUSED";
    k.headers = {{"x-api-key", "{key}"}};
    k.anthropic_beta = "oauth-2025-04-20";
    cfg.credentials["k"] = k;
    auto grant = [&](std::string host, std::uint16_t port, config::GrantMode mode) {
        config::Grant g;
        g.host = names::builtin_host_pattern(host), g.port = port, g.mode = mode, g.allow_private = true;
        g.index = cfg.grants.size();
        return g;
    };
    auto inject = grant("up.test", good.port, config::GrantMode::inject);
    inject.credential = "k";
    inject.routes = {route("GET", "/echo"), route("POST", "/echo"), route("GET", "/sse"), route("GET", "/big"),
                     route("GET", "/ws"), route("GET", "/stale"), route("GET", "/trailer"),
                     route("GET", "/longchunkline"), route("GET", "/interim9"), route("GET", "/interim-big"),
                     route("GET", "/ws-h2c"), route("GET", "/v1/models/", true), route("*", "/any")};
    cfg.grants.push_back(inject);
    cfg.grants.push_back(grant("tun.test", good.port, config::GrantMode::tunnel));
    cfg.grants.push_back(grant("wrong.test", wrong_name.port, config::GrantMode::inject));
    cfg.grants.push_back(grant("untrusted.test", untrusted.port, config::GrantMode::inject));
    return cfg;
}

std::string up_authority(const World& w) { return "up.test:" + std::to_string(w.good.port); }

std::unique_ptr<Client> inject_client(const World& w, const GatewayUnderTest& g) {
    auto c = std::make_unique<Client>(g.port);
    REQUIRE(c->connect_tunnel(up_authority(w)) == 200);
    auto ec = c->start_tls("up.test", "up.test", w.corral_ca());
    REQUIRE_MESSAGE(!ec, "TLS through the gateway: " << ec.message());
    return c;
}

std::string get(const World& w, const std::string& path, const std::string& extra) {
    return "GET " + path + " HTTP/1.1\r\nHost: " + up_authority(w) + "\r\n" + extra + "\r\n";
}

}  // namespace corral::test::loopback
