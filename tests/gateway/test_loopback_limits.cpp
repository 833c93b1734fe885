// gateway_loopback: the limits and refusals, end to end on loopback (the
// world: loopback_fixture.hpp): sizes, timeouts, budgets, connection caps,
// ungranted and unverifiable upstreams, the ledger failing closed, HTTP
// forms refused on either side, unusable config files.
#include <doctest/doctest.h>

#include <poll.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "tests/gateway/loopback_fixture.hpp"

using namespace corral;
using namespace corral::gateway;
using namespace corral::test::loopback;

TEST_CASE("request limits: oversize bodies get 413 and the upstream never sees them") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    {
        auto c = inject_client(w, g);
        c->write("POST /echo HTTP/1.1\r\nHost: " + up_authority(w) + "\r\nContent-Length: 5000\r\n\r\n");
        beast::error_code ec;
        auto res = c->read_response(ec);
        CHECK(res.result_int() == 413);
    }
    {
        auto c = inject_client(w, g);
        std::string chunk(600, 'z');
        c->write("POST /echo HTTP/1.1\r\nHost: " + up_authority(w) + "\r\nTransfer-Encoding: chunked\r\n\r\n" +
                 "258\r\n" + chunk + "\r\n258\r\n" + chunk + "\r\n0\r\n\r\n");
        beast::error_code ec;
        auto res = c->read_response(ec);
        CHECK(res.result_int() == 413);
        CHECK(res["X-Corral-Reason"] == "body_too_large");
    }
    CHECK(w.good.requests.load() == 0);
    CHECK(w.good.body_bytes == 0);
}

TEST_CASE("smuggling forms, host mismatch and denied routes are refused inside the tunnel") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    struct Case {
        std::string request;
        int status;
        std::string reason;
    };
    std::string host = "Host: " + up_authority(w) + "\r\n";
    std::vector<Case> cases = {
        {"POST /echo HTTP/1.1\r\n" + host + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "smuggling"},
        {"POST /echo HTTP/1.1\r\n" + host + "Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400, "smuggling"},
        {"GET /echo HTTP/1.1\r\n" + host + "X-A: 1\r\n folded\r\n\r\n", 400, "smuggling"},
        {"GET /echo HTTP/1.1\n" + host + "\n", 400, "smuggling"},
        {"GET /echo HTTP/1.1\r\n" + host + "Upgrade: h2c\r\nConnection: Upgrade\r\n\r\n", 400, "smuggling"},
        {"GET /echo HTTP/1.1\r\nHost: tun.test:" + std::to_string(w.good.port) + "\r\n\r\n", 403, "host_mismatch"},
        {"GET /admin HTTP/1.1\r\n" + host + "\r\n", 403, "route_denied"},
        {"GET /echo/../admin HTTP/1.1\r\n" + host + "\r\n", 400, "non_canonical_path"},
        {"GET /%2e%2e/x HTTP/1.1\r\n" + host + "\r\n", 400, "non_canonical_path"},
    };
    for (const auto& k : cases) {
        CAPTURE(k.request);
        auto c = inject_client(w, g);
        c->write(k.request);
        beast::error_code ec;
        auto res = c->read_response(ec);
        CHECK(res.result_int() == k.status);
        CHECK(std::string(res["X-Corral-Reason"]) == k.reason);
    }
    CHECK(w.good.requests.load() == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(g.gw->ledger().refusals(g.id.str()) >= cases.size());
}

TEST_CASE("ungranted hosts and ports get 403 before any connection") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    for (std::string target : std::vector<std::string>{"other.example:443", "up.test:1", "127.0.0.1:" + std::to_string(w.good.port),
                               "2130706433:443", "[::1]:443"}) {
        CAPTURE(target);
        Client c(g.port);
        CHECK(c.connect_tunnel(target) == 403);
    }
    Client plain(g.port);
    auto res = plain.roundtrip("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(res.result_int() == 405);
    CHECK(w.good.connections.load() == 0);
}

TEST_CASE("upstream certificates that do not verify get 502 upstream_tls") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    for (const auto& target : {std::pair{std::string("wrong.test"), w.wrong_name.port},
                               std::pair{std::string("untrusted.test"), w.untrusted.port}}) {
        // Named copies: clang 14 cannot capture structured bindings in doctest's lambdas.
        const std::string host = target.first;
        const auto port = target.second;
        CAPTURE(host);
        Client c(g.port);
        REQUIRE(c.connect_tunnel(host + ":" + std::to_string(port)) == 200);
        REQUIRE(!c.start_tls(host, host, w.corral_ca()));
        c.write("GET / HTTP/1.1\r\nHost: " + host + ":" + std::to_string(port) + "\r\n\r\n");
        beast::error_code ec;
        auto res = c.read_response(ec);
        CHECK(res.result_int() == 502);
        CHECK(res["X-Corral-Reason"] == "upstream_tls");
    }
    CHECK(w.wrong_name.requests.load() == 0);
    CHECK(w.untrusted.requests.load() == 0);
}

TEST_CASE("the response size cap is a hard cut") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    auto c = inject_client(w, g);
    c->write(get(w, "/big"));
    beast::error_code ec;
    auto res = c->read_response(ec);
    CHECK(ec);  // truncated message
    CHECK(res.body().size() <= 256 * 1024);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(slurp(w.ledger()).find("response_too_large") != std::string::npos);
}

TEST_CASE("a client sending one byte at a time is cut off by the read timeout") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    Client c(g.port);
    std::string request = "CONNECT " + up_authority(w) + " HTTP/1.1\r\nHost: " + up_authority(w) + "\r\n\r\n";
    auto start = std::chrono::steady_clock::now();
    bool cut = false;
    std::string got;
    for (std::size_t i = 0; i < request.size() && !cut; ++i) {
        boost::system::error_code ec;
        asio::write(c.sock, asio::buffer(&request[i], 1), ec);
        if (ec) cut = true;
        pollfd p{c.sock.native_handle(), POLLIN, 0};
        if (::poll(&p, 1, 200) > 0) {
            char b[512];
            ssize_t n = ::recv(c.sock.native_handle(), b, sizeof b, 0);
            if (n > 0) got.append(b, static_cast<std::size_t>(n));
            cut = true;
        }
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(cut);
    CHECK(secs >= 0.8);
    CHECK(secs < 3.5);
    CHECK(got.find("408") != std::string::npos);
}

TEST_CASE("per-identity request budget answers 429 once spent") {
    World w;
    auto cfg = w.config();
    cfg.gateway.limits.requests_per_identity = 2;
    GatewayUnderTest g(cfg, w.secrets());
    auto c = inject_client(w, g);
    CHECK(c->roundtrip(get(w, "/echo")).result_int() == 200);
    CHECK(c->roundtrip(get(w, "/echo")).result_int() == 200);
    auto res = c->roundtrip(get(w, "/echo"));
    CHECK(res.result_int() == 429);
    CHECK(w.good.requests.load() == 2);
}

TEST_CASE("max_connections answers 503 beyond the cap") {
    World w;
    auto cfg = w.config();
    cfg.gateway.limits.max_connections = 1;
    GatewayUnderTest g(cfg, w.secrets());
    Client holder(g.port);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    Client extra(g.port);
    CHECK(extra.connect_tunnel(up_authority(w)) == 503);
}

TEST_CASE("Gateway::refuse answers before reading: status, reason, detail, a ledger line, nothing dialled") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets(), "tcp_peer_not_root");
    Client c(g.port);
    // A request with a body already on its way must not turn the answer into a reset.
    c.write("POST http://" + up_authority(w) + "/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 300000\r\n\r\n" +
            std::string(300000, 'b'));
    beast::error_code ec;
    auto res = c.read_response(ec);
    CHECK(res.result_int() == 403);
    CHECK(res["X-Corral-Reason"] == "tcp_peer_not_root");
    CHECK(res.body().find("because the test says so") != std::string::npos);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::string ledger = slurp(w.ledger());
    CHECK(ledger.find("\"identity\":\"worker-a/run-1\"") != std::string::npos);
    CHECK(ledger.find("\"reason\":\"tcp_peer_not_root\",\"status\":403") != std::string::npos);
    CHECK(w.good.connections.load() == 0);
}

TEST_CASE("max_connections_per_identity: one box at its cap gets 503, another box still gets through") {
    World w;
    auto cfg = w.config();
    cfg.gateway.limits.max_connections = 4;
    cfg.gateway.limits.max_connections_per_identity = 2;
    cfg.gateway.limits.read_timeout = std::chrono::milliseconds(60'000);  // idle holders stay open throughout
    GatewayUnderTest g(cfg, w.secrets());
    const std::string tunnel = "tun.test:" + std::to_string(w.good.port);
    // Box A opens more idle connections than the whole daemon allows (the
    // starvation seen in review: A held them all and B got 503).
    std::vector<std::unique_ptr<Client>> a;
    for (int i = 0; i < 5; ++i) a.push_back(std::make_unique<Client>(g.port));
    for (int i = 0; i < 500 && g.gw->ledger().refusals("worker-a/run-1") < 3; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(g.gw->ledger().refusals("worker-a/run-1") == 3);
    CHECK(g.wait_for_active(2));
    // Box B is not starved by A.
    Client b(g.port_b);
    CHECK(b.connect_tunnel(tunnel) == 200);
    // Exactly three of A's were answered, each naming A's own cap; two are held.
    std::vector<std::unique_ptr<Client>> held;
    int refused = 0;
    for (auto& c : a) {
        pollfd p{c->sock.native_handle(), POLLIN, 0};
        if (::poll(&p, 1, 200) <= 0) {
            held.push_back(std::move(c));
            continue;
        }
        beast::error_code ec;
        auto res = c->read_response(ec);
        CHECK(res.result_int() == 503);
        CHECK(res["X-Corral-Reason"] == "identity_connection_cap");
        CHECK(res.body().find("worker-a/run-1 holds more than max_connections_per_identity (2)") != std::string::npos);
        ++refused;
    }
    CHECK(refused == 3);
    REQUIRE(held.size() == 2);
    // A's slot comes back when one of its connections ends.
    held.pop_back();
    CHECK(g.wait_for_active(2));  // A's other holder and B's tunnel
    Client again(g.port);
    CHECK(again.connect_tunnel(tunnel) == 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto ledger = slurp(w.ledger());
    CHECK(ledger.find("\"identity\":\"worker-a/run-1\",\"mode\":\"\",\"method\":\"\",\"host\":\"\",\"port\":0,"
                      "\"path\":\"\",\"decision\":\"refuse\",\"reason\":\"identity_connection_cap\",\"status\":503") !=
          std::string::npos);
    CHECK(ledger.find("too_many_connections") == std::string::npos);
    CHECK(g.gw->ledger().refusals("worker-a/run-1") == 3);
    CHECK(g.gw->ledger().refusals("worker-b/run-1") == 0);
}

TEST_CASE("ledger_refusals_per_identity: a refusal loop writes a bounded number of lines, counts stay exact") {
    World w;
    auto cfg = w.config();
    cfg.gateway.limits.ledger_refusals_per_identity = 5;
    GatewayUnderTest g(cfg, w.secrets());
    // The loop seen in review: CONNECT to an ungranted port, again and again
    // (refused before any connection is attempted).
    for (int i = 0; i < 45; ++i) {
        Client c(g.port);
        c.write("CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n");
        beast::error_code ec;
        auto res = c.read_response(ec);
        CHECK(res.result_int() == 403);  // still refused, cap or not
        CHECK(res["X-Corral-Reason"] == "not_granted");
    }
    // Another identity's refusals and this identity's allowed tunnels are still written.
    {
        Client b(g.port_b);
        CHECK(b.connect_tunnel("127.0.0.1:9") == 403);
    }
    {
        Client c(g.port);
        CHECK(c.connect_tunnel("tun.test:" + std::to_string(w.good.port)) == 200);
    }
    for (int i = 0; i < 500 && g.gw->ledger().requests("worker-a/run-1") < 46; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    g.gw->ledger().sync();
    CHECK(g.gw->ledger().refusals("worker-a/run-1") == 45);
    CHECK(g.gw->ledger().requests("worker-a/run-1") == 46);
    CHECK(g.gw->ledger().refusals("worker-b/run-1") == 1);
    std::vector<std::string> a_refusals;
    int a_allowed = 0, b_lines = 0;
    std::istringstream lines(slurp(w.ledger()));
    for (std::string line; std::getline(lines, line);) {
        if (line.find("\"identity\":\"worker-b/run-1\"") != std::string::npos) ++b_lines;
        if (line.find("\"identity\":\"worker-a/run-1\"") == std::string::npos) continue;
        if (line.find("\"decision\":\"allow\"") != std::string::npos)
            ++a_allowed;
        else
            a_refusals.push_back(line);
    }
    CHECK(a_allowed == 1);
    CHECK(b_lines == 1);
    // 5 lines, the cap line at refusal 6, then counts at 10, 20 and 40.
    REQUIRE(a_refusals.size() == 9);
    for (int i = 0; i < 5; ++i) CHECK(a_refusals[i].find("\"reason\":\"not_granted\"") != std::string::npos);
    CHECK(a_refusals[5].find("\"reason\":\"ledger_refusal_cap_reached\",\"status\":0") != std::string::npos);
    CHECK(a_refusals[5].find("\"refusals\":6}") != std::string::npos);
    CHECK(a_refusals[6].find("\"reason\":\"ledger_refusals_suppressed\"") != std::string::npos);
    CHECK(a_refusals[6].find("\"refusals\":10}") != std::string::npos);
    CHECK(a_refusals[7].find("\"refusals\":20}") != std::string::npos);
    CHECK(a_refusals[8].find("\"refusals\":40}") != std::string::npos);
}

TEST_CASE("an unwritable ledger stops new requests (fail closed) and says why") {
    World w;
    auto cfg = w.config();
    cfg.gateway.ledger = w.dir.path + "/no-such-dir/ledger.jsonl";
    GatewayUnderTest g(cfg, w.secrets());
    Client c(g.port);
    c.write("CONNECT " + up_authority(w) + " HTTP/1.1\r\nHost: x\r\n\r\n");
    beast::error_code ec;
    auto res = c.read_response(ec);
    CHECK(res.result_int() == 503);
    CHECK(res["X-Corral-Reason"] == "ledger_unwritable");
    CHECK(res.body().find("no-such-dir") != std::string::npos);
    CHECK(w.good.connections.load() == 0);
}

TEST_CASE("an inject grant is refused over plain http:// (cleartext_inject), before any connection") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    Client c(g.port);
    auto res = c.roundtrip("GET http://" + up_authority(w) + "/echo HTTP/1.1\r\nHost: " + up_authority(w) + "\r\n\r\n");
    CHECK(res.result_int() == 403);
    CHECK(res["X-Corral-Reason"] == "cleartext_inject");
    Client userinfo(g.port);
    auto res2 = userinfo.roundtrip("GET http://user@" + up_authority(w) + "/ HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(res2.result_int() == 405);
    CHECK(w.good.connections.load() == 0);
}

// ---------------------------------------------------------------------------
// Protocol edge cases: each case below failed against the code before its fix.

namespace {
// Everything the gateway sends until it closes the tunnel.
std::string read_until_closed(Client& c) {
    std::string out;
    char b[16384];
    for (;;) {
        beast::error_code ec;
        std::size_t n = c.tls->read_some(asio::buffer(b), ec);
        out.append(b, n);
        if (ec) return out;
    }
}

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
}
}  // namespace

TEST_CASE("chunked request trailers are refused (400 trailers_refused); a 70000-byte one does not take the gateway down") {
    World w;
    auto cfg = w.config();
    cfg.gateway.limits.max_header_bytes = 128 * 1024;  // so the trailer fits the read buffer and reaches the parser
    GatewayUnderTest g(cfg, w.secrets());
    const std::string host = "Host: " + up_authority(w) + "\r\n";
    // Beast merges trailers into the head after it was checked, and throws out of
    // the event loop for a value over 65535 bytes (the gateway thread died).
    for (std::string trailer : {std::string("Host: evil.test"), std::string("Upgrade: h2c"),
                                std::string("HTTP2-Settings: AAMAAABkAAQAAP__"), "x-api-key: " + kSentinel,
                                "X-Big: " + std::string(70000, 'v')}) {
        CAPTURE(trailer.substr(0, 40));
        auto c = inject_client(w, g);
        c->write("POST /echo HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n" + trailer +
                 "\r\n\r\n");
        beast::error_code ec;
        auto res = c->read_response(ec);
        CHECK(res.result_int() == 400);
        CHECK(res["X-Corral-Reason"] == "trailers_refused");
    }
    // The same in plain http:// mode, refused before anything is dialled.
    Client plain(g.port);
    auto res = plain.roundtrip("POST http://tun.test:" + std::to_string(w.good.port) +
                               "/echo HTTP/1.1\r\nHost: tun.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Big: " +
                               std::string(70000, 'v') + "\r\n\r\n");
    CHECK(res.result_int() == 400);
    CHECK(res["X-Corral-Reason"] == "trailers_refused");
    CHECK(w.good.connections.load() == 0);  // the upstream saw nothing of any of them
    // Still serving.
    auto c = inject_client(w, g);
    CHECK(c->roundtrip(get(w, "/echo")).result_int() == 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(slurp(w.ledger()).find("\"reason\":\"trailers_refused\"") != std::string::npos);
    CHECK(g.gw->redact("a" + kSecret + "b") == "a[redacted]b");
}

TEST_CASE("a chunk line that never ends is refused at the read buffer (413); a long chunk extension is refused (400)") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());  // max_body_bytes 1 KiB, max_header_bytes 16 KiB
    const std::string head = "POST /echo HTTP/1.1\r\nHost: " + up_authority(w) + "\r\nTransfer-Encoding: chunked\r\n\r\n";
    {
        // Before: the gateway buffered it all (a 400 MB line grew RSS to 432 MB) until read_timeout.
        auto c = inject_client(w, g);
        auto start = std::chrono::steady_clock::now();
        c->write(head + "1;a=" + std::string(1 << 20, 'a'));
        beast::error_code ec;
        auto res = c->read_response(ec);
        CHECK(res.result_int() == 413);
        CHECK(res["X-Corral-Reason"] == "body_too_large");
        CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(900));  // read_timeout is 1 s
    }
    {
        auto c = inject_client(w, g);
        c->write(head + "1;" + std::string(300, 'e') + "\r\nx\r\n0\r\n\r\n");
        beast::error_code ec;
        auto res = c->read_response(ec);
        CHECK(res.result_int() == 400);
        CHECK(res["X-Corral-Reason"] == "bad_request");
        CHECK(res.body().find("chunk extension") != std::string::npos);
    }
    CHECK(w.good.requests.load() == 0);
}

TEST_CASE("an upstream response with trailers or an endless chunk line is cut (upstream_protocol)") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    {
        auto c = inject_client(w, g);
        c->write(get(w, "/trailer"));
        beast::error_code ec;
        auto res = c->read_response(ec);
        CHECK(ec);  // cut before the last chunk: the client never sees a complete message
        CHECK(res.find("X-Trailer") == res.end());
    }
    {
        // The upstream keeps the connection open for 4 s after 200 KB of chunk line;
        // the gateway must stop at its read buffer, not wait (and buffer) until then.
        auto c = inject_client(w, g);
        auto start = std::chrono::steady_clock::now();
        c->write(get(w, "/longchunkline"));
        beast::error_code ec;
        c->read_response(ec);
        CHECK(ec);
        CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::string ledger = slurp(w.ledger());
    CHECK(count_of(ledger, "\"reason\":\"upstream_protocol\"") >= 2);
}

TEST_CASE("interim responses: at most 8 per request, counted against max_response_bytes and in the ledger") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());  // max_response_bytes 256 KiB
    {
        auto c = inject_client(w, g);
        c->write(get(w, "/interim9"));
        std::string got = read_until_closed(*c);
        CHECK(count_of(got, "HTTP/1.1 103") == 8);
        CHECK(got.find("HTTP/1.1 502") != std::string::npos);
        CHECK(got.find("X-Corral-Reason: upstream_protocol") != std::string::npos);
        CHECK(got.find("HTTP/1.1 200") == std::string::npos);
    }
    {
        // Five 60 KB interim heads: the fifth crosses 256 KiB.
        auto c = inject_client(w, g);
        c->write(get(w, "/interim-big"));
        std::string got = read_until_closed(*c);
        CHECK(count_of(got, "HTTP/1.1 103") == 4);
        CHECK(got.find("HTTP/1.1 200") == std::string::npos);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::string ledger = slurp(w.ledger());
    CHECK(ledger.find("\"reason\":\"response_too_large\"") != std::string::npos);
    CHECK(ledger.find("\"path\":\"/interim9\"") != std::string::npos);
    // The interim heads are counted as bytes sent down.
    auto line = ledger.substr(ledger.find("\"path\":\"/interim-big\""));
    line = line.substr(0, line.find('\n'));
    auto p = line.find("\"bytes_down\":");
    REQUIRE(p != std::string::npos);
    CHECK(std::stoull(line.substr(p + 13)) > 4 * 60000);
}

TEST_CASE("a 101 is relayed only for a WebSocket request answered with Upgrade: websocket") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    auto c = inject_client(w, g);
    c->write("GET /ws-h2c HTTP/1.1\r\nHost: " + up_authority(w) +
             "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
             "Sec-WebSocket-Version: 13\r\n\r\n");
    beast::error_code ec;
    auto res = c->read_response(ec, true);
    CHECK(res.result_int() == 502);
    CHECK(res["X-Corral-Reason"] == "upstream_protocol");
}

TEST_CASE("an upstream connection with bytes left behind a response is never reused") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    auto c = inject_client(w, g);
    auto first = c->roundtrip(get(w, "/stale"));
    CHECK(first.body() == "ok");
    // Before: the left-over "STALE" response answered the next request (on this
    // tunnel, or on another identity's once the connection went to the pool).
    auto second = c->roundtrip(get(w, "/echo"));
    CHECK(second.body().find("STALE") == std::string::npos);
    CHECK(second.body().find("key-is-real=yes") != std::string::npos);
    c.reset();
    auto other = inject_client(w, g);
    auto third = other->roundtrip(get(w, "/echo"));
    CHECK(third.body().find("STALE") == std::string::npos);
    CHECK(w.good.connections.load() >= 2);
}

TEST_CASE("TRACE, TRACK and CONNECT are never forwarded (405), inside a tunnel or in plain http://") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    const std::string host = "Host: " + up_authority(w) + "\r\n";
    // The route "* /any" allows every method: the refusal is the method's alone.
    for (std::string line : std::vector<std::string>{"TRACE /any", "trace /any", "TRACK /any", "CONNECT " + up_authority(w)}) {
        CAPTURE(line);
        auto c = inject_client(w, g);
        c->write(line + " HTTP/1.1\r\n" + host + "x-api-key: " + kSentinel + "\r\n\r\n");
        beast::error_code ec;
        auto res = c->read_response(ec);
        CHECK(res.result_int() == 405);
        CHECK(res["X-Corral-Reason"] == "unsupported_method");
        CHECK(res.body().find(kSecret) == std::string::npos);
    }
    Client plain(g.port);
    auto res = plain.roundtrip("TRACE http://tun.test:" + std::to_string(w.good.port) + "/any HTTP/1.1\r\nHost: tun.test\r\n\r\n");
    CHECK(res.result_int() == 405);
    CHECK(w.good.connections.load() == 0);
    auto ok = inject_client(w, g);
    CHECK(ok->roundtrip("DELETE /any HTTP/1.1\r\n" + host + "\r\n").result_int() == 200);
}

TEST_CASE("routes are checked on exactly the path forwarded: non-canonical paths get 400") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());  // routes include "GET /v1/models/*"
    const std::string host = "Host: " + up_authority(w) + "\r\n";
    // Each normalised into /v1/models/x and was forwarded raw, credential attached.
    for (const char* target : {"/admin/..;/v1/models/x", "/admin/x%2f..%2f..%2fv1/models/x", "/admin/../v1/models/x",
                               "/v1/models/x#/../../../admin", "/admin;/../v1/models/x", "/v1//models/x",
                               "/v1/models/%78"}) {
        CAPTURE(target);
        auto c = inject_client(w, g);
        c->write(std::string("GET ") + target + " HTTP/1.1\r\n" + host + "\r\n");
        beast::error_code ec;
        auto res = c->read_response(ec);
        CHECK(res.result_int() == 400);
        CHECK(res["X-Corral-Reason"] == "non_canonical_path");
    }
    CHECK(w.good.requests.load() == 0);
    // A canonical path passes with its query untouched.
    auto c = inject_client(w, g);
    CHECK(c->roundtrip("GET /v1/models/x?q=/../admin;%2f HTTP/1.1\r\n" + host + "\r\n").result_int() == 200);
    CHECK(w.good.all_heads().find("GET /v1/models/x?q=/../admin;%2f HTTP/1.1") != std::string::npos);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(slurp(w.ledger()).find("\"reason\":\"non_canonical_path\"") != std::string::npos);
}

TEST_CASE("a hosts_file or upstream_ca_file that cannot be used is named with the config file, line and key that set it") {
    TempDir dir;
    auto write = [&](const std::string& name, const std::string& text) {
        std::ofstream(dir.path + "/" + name) << text;
        return dir.path + "/" + name;
    };
    auto start_error = [&](const std::string& toml_text) -> std::string {
        auto cfg = config::load_gateway_config(write("gateway.toml", toml_text));
        try {
            Gateway g(cfg, {{"api", "sk-x"}});
        } catch (const std::exception& e) {
            return e.what();
        }
        return "(no error)";
    };
    const std::string head = "[gateway]\nlisten_tcp = \"127.0.0.1:0\"\nledger = \"" + dir.path +
                             "/ledger.jsonl\"\nstate_dir = \"" + dir.path + "/state\"\n";
    const std::string cfg_file = dir.path + "/gateway.toml";

    // Line 5: hosts_file; its own line 2 is bad.
    auto hosts = write("hosts", "127.0.0.1 a.test\nnot-an-address b.test\n");
    auto e = start_error(head + "hosts_file = \"" + hosts + "\"\n");
    CHECK_MESSAGE(e.find(cfg_file + ":5: key 'gateway.hosts_file': " + hosts + ":2: bad address") == 0, e);

    e = start_error(head + "hosts_file = \"" + dir.path + "/absent\"\n");
    CHECK_MESSAGE(e.find(cfg_file + ":5: key 'gateway.hosts_file': ") == 0, e);
    CHECK_MESSAGE(e.find("No such file") != std::string::npos, e);

    // A grant's own trust store (line 14) and [gateway]'s (line 5), both garbage.
    auto junk = write("junk.pem", "not a certificate\n");
    const std::string grant = "\n[credentials.api]\nkind = \"api_key\"\nenv = \"X\"\n\n[[grants]]\nhost = \"api.test\"\nmode = \"inject\"\ncredential = \"api\"\n";
    e = start_error(head + grant + "upstream_ca_file = \"" + junk + "\"\n");
    CHECK_MESSAGE(e.find(cfg_file + ":14: key 'grants[0].upstream_ca_file': upstream trust store " + junk) == 0, e);
    e = start_error(head + "upstream_ca_file = \"" + junk + "\"\n" + grant);
    CHECK_MESSAGE(e.find(cfg_file + ":5: key 'gateway.upstream_ca_file': upstream trust store " + junk) == 0, e);
}
