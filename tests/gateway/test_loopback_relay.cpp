// gateway_loopback: inject and tunnel mode relaying, end to end on loopback
// (the world: loopback_fixture.hpp): credentials swapped or left alone,
// corral's leaf and ALPN, keep-alive, server-sent events, WebSockets, the
// TLS edges of a tunnel.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <thread>

#include "tests/gateway/loopback_fixture.hpp"

using namespace corral;
using namespace corral::gateway;
using namespace corral::test::loopback;

TEST_CASE("inject mode: a grant's default_headers replace a template-less credential's default header") {
    World w;
    auto cfg = w.config();
    cfg.grants[0].default_headers = {{"authorization", "Bearer {key}"}};  // as agent profiles imply for api.openai.com
    GatewayUnderTest g(cfg, w.secrets());
    auto c = inject_client(w, g);
    auto res = c->roundtrip(get(w, "/echo", "x-api-key: " + kSentinel + "\r\nAuthorization: Bearer " + kSentinel + "\r\n"));
    CHECK(res.result_int() == 200);
    CHECK(res.body().find("key-is-real=no") != std::string::npos);  // no x-api-key at all
    CHECK(res.body().find("authorization=present") != std::string::npos);
    std::string heads = w.good.all_heads();
    CHECK(heads.find("authorization: Bearer " + std::string(kSecret)) != std::string::npos);
    CHECK(heads.find(kSentinel) == std::string::npos);
}

TEST_CASE("inject mode: a credential's own template beats the grant's default_headers") {
    World w;
    auto cfg = w.config();
    cfg.credentials["k"].template_given = true;  // x-api-key written by the operator
    cfg.grants[0].default_headers = {{"authorization", "Bearer {key}"}};
    GatewayUnderTest g(cfg, w.secrets());
    auto c = inject_client(w, g);
    auto res = c->roundtrip(get(w, "/echo", "Authorization: Bearer " + kSentinel + "\r\n"));
    CHECK(res.body().find("key-is-real=yes") != std::string::npos);
    CHECK(res.body().find("authorization=absent") != std::string::npos);
}

TEST_CASE("CONNECT tunnel mode relays TLS end to end, untouched") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    Client c(g.port);
    REQUIRE(c.connect_tunnel("tun.test:" + std::to_string(w.good.port)) == 200);
    // The box talks TLS with the real upstream (its certificate, its CA).
    auto ec = c.start_tls("up.test", "up.test", w.upstream_ca.certificate_path());
    REQUIRE_MESSAGE(!ec, ec.message());
    auto res = c.roundtrip("GET /echo HTTP/1.1\r\nHost: up.test\r\nx-api-key: " + kSentinel + "\r\n\r\n");
    CHECK(res.result_int() == 200);
    CHECK(res.body().find("key-is-real=no") != std::string::npos);  // nothing injected in a tunnel
    c.tls.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::string ledger = slurp(w.ledger());
    CHECK(ledger.find("\"mode\":\"tunnel\"") != std::string::npos);
    CHECK(ledger.find("\"host\":\"tun.test\"") != std::string::npos);
}

TEST_CASE("inject mode: corral's leaf, http/1.1 ALPN, credential swapped, keep-alive reuses the upstream") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    auto c = inject_client(w, g);
    CHECK(c->alpn() == "http/1.1");
    for (int i = 0; i < 3; ++i) {
        auto res = c->roundtrip(get(w, "/echo",
                                    "x-api-key: " + kSentinel + "\r\nAuthorization: Bearer " + kSentinel +
                                        "\r\nCookie: a=b\r\nanthropic-beta: tools-2024\r\n"));
        CHECK(res.result_int() == 200);
        CHECK(res.body().find("key-is-real=yes") != std::string::npos);
        CHECK(res.body().find("authorization=absent") != std::string::npos);
        CHECK(res.body().find("cookie=absent") != std::string::npos);
        CHECK(res.body().find("tools-2024") != std::string::npos);
        CHECK(res.body().find("oauth-2025-04-20") != std::string::npos);
    }
    auto post = c->roundtrip("POST /echo HTTP/1.1\r\nHost: " + up_authority(w) +
                             "\r\nContent-Length: 5\r\n\r\nhello");
    CHECK(post.body().find("body=5") != std::string::npos);
    CHECK(w.good.connections.load() == 1);  // one upstream connection for all four requests
    std::string heads = w.good.all_heads();
    CHECK(heads.find(kSentinel) == std::string::npos);
    CHECK(heads.find(kSecret) != std::string::npos);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::string ledger = slurp(w.ledger());
    CHECK(ledger.find(kSecret) == std::string::npos);
    CHECK(ledger.find("\"credential\":\"k\"") != std::string::npos);
    CHECK(g.gw->ledger().requests(g.id.str()) >= 4);
}

TEST_CASE("server-sent events reach the client one by one, before the upstream finishes") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    auto c = inject_client(w, g);
    c->write(get(w, "/sse"));
    std::string seen;
    char b[4096];
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(4);
    while (seen.find("data: one") == std::string::npos && std::chrono::steady_clock::now() < until) {
        beast::error_code ec;
        std::size_t n = c->tls->read_some(asio::buffer(b), ec);
        if (ec) break;
        seen.append(b, n);
    }
    CHECK(seen.find("data: one") != std::string::npos);
    CHECK(seen.find("data: two") == std::string::npos);
    w.good.sse_released = true;
    while (seen.find("0\r\n\r\n") == std::string::npos) {
        beast::error_code ec;
        std::size_t n = c->tls->read_some(asio::buffer(b), ec);
        if (ec) break;
        seen.append(b, n);
    }
    CHECK(seen.find("data: two") != std::string::npos);
    CHECK(w.good.sse_waited_for_client.load());
}

TEST_CASE("a WebSocket upgrade is relayed both ways in inject mode") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    auto c = inject_client(w, g);
    websocket::stream<asio::ssl::stream<tcp::socket>> ws(std::move(*c->tls));
    ws.handshake(up_authority(w), "/ws");
    ws.text(true);
    for (std::string msg : {"hello", "second message"}) {
        ws.write(asio::buffer(msg));
        beast::flat_buffer in;
        ws.read(in);
        CHECK(beast::buffers_to_string(in.data()) == msg);
    }
    ws.close(websocket::close_code::normal);
}

TEST_CASE("an SNI other than the CONNECT host aborts the handshake and is recorded") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    Client c(g.port);
    REQUIRE(c.connect_tunnel(up_authority(w)) == 200);
    auto ec = c.start_tls("tun.test", "tun.test", w.corral_ca());
    CHECK(ec);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(slurp(w.ledger()).find("\"reason\":\"sni_mismatch\"") != std::string::npos);
}

TEST_CASE("after the 200 of an inject CONNECT: silence is a timeout, plaintext is client_tls, neither an sni_mismatch") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());  // read_timeout 1 s
    auto line_of = [&](std::size_t count) {
        std::string ledger;
        for (int i = 0; i < 50; ++i) {
            ledger = slurp(w.ledger());
            if (static_cast<std::size_t>(std::count(ledger.begin(), ledger.end(), '\n')) >= count) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        std::istringstream in(ledger);
        std::string line;
        for (std::size_t i = 0; i < count && std::getline(in, line);) ++i;
        return line;
    };
    {
        Client c(g.port);
        REQUIRE(c.connect_tunnel(up_authority(w)) == 200);
        // Nothing sent: the handshake times out, and the connection is closed.
        char b[16];
        boost::system::error_code ec;
        c.sock.read_some(asio::buffer(b), ec);
        CHECK(ec);
        std::string line = line_of(1);
        CAPTURE(line);
        CHECK(line.find("\"reason\":\"timeout\"") != std::string::npos);
    }
    {
        Client c(g.port);
        REQUIRE(c.connect_tunnel(up_authority(w)) == 200);
        c.write("GET / HTTP/1.1\r\nHost: up.test\r\n\r\n");
        std::string line = line_of(2);
        CAPTURE(line);
        CHECK(line.find("\"reason\":\"client_tls\"") != std::string::npos);
    }
    CHECK(slurp(w.ledger()).find("sni_mismatch") == std::string::npos);
}

TEST_CASE("a box whose TLS ends without close_notify is closed at once, without waiting for one") {
    // A box process that is killed (or exits) with a TLS connection open ends
    // it with a bare FIN. No close_notify can follow, so the gateway must not
    // send its own and wait (bounded) for the box's: in daemon mode that wait
    // held every run's end. Seen from the box's side: the gateway closes
    // without sending another record.
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    for (bool after_request : {false, true}) {
        CAPTURE(after_request);
        auto c = inject_client(w, g);
        if (after_request) CHECK(c->roundtrip(get(w, "/echo")).result_int() == 200);
        c->tls->next_layer().shutdown(tcp::socket::shutdown_send);
        // The box's TLS reads what is left (TLS 1.3 session tickets, when no
        // request was made) and then the end: a bare one, not a close_notify
        // (which OpenSSL reports as a clean eof).
        char b[256];
        boost::system::error_code ec;
        while (!ec) c->tls->read_some(asio::buffer(b), ec);
        CHECK_MESSAGE(ec == asio::ssl::error::stream_truncated, "the gateway's side ended with: " << ec.message());
        CHECK(g.wait_for_active(0));
    }
}

TEST_CASE("a wildcard inject grant serves a name with '_' (the leaf is minted before the 200)") {
    World w;
    Upstream wild{*w.upstream_ca.mint_leaf("a_b.wild.test")};
    auto cfg = w.config();
    config::Grant g;
    g.host = names::builtin_host_pattern("*.wild.test"), g.port = 443, g.mode = config::GrantMode::inject, g.allow_private = true;
    g.credential = "k";
    g.connect_to = "127.0.0.1:" + std::to_string(wild.port), g.connect_host = names::normalize_host("127.0.0.1").host, g.connect_port = wild.port;
    g.index = cfg.grants.size();
    cfg.grants.push_back(g);
    GatewayUnderTest gw(cfg, w.secrets());
    Client c(gw.port);
    // Before: "200 Connection Established", then a close (minting threw), no ledger line.
    REQUIRE(c.connect_tunnel("a_b.wild.test:443") == 200);
    auto ec = c.start_tls("a_b.wild.test", "a_b.wild.test", w.corral_ca());
    REQUIRE_MESSAGE(!ec, ec.message());
    auto res = c.roundtrip("GET /echo HTTP/1.1\r\nHost: a_b.wild.test\r\n\r\n");
    CHECK(res.result_int() == 200);
    CHECK(res.body().find("key-is-real=yes") != std::string::npos);
}

TEST_CASE("an idle upstream connection goes to the pool and serves the next tunnel to the same target") {
    World w;
    GatewayUnderTest g(w.config(), w.secrets());
    {
        auto first = inject_client(w, g);
        CHECK(first->roundtrip(get(w, "/echo")).result_int() == 200);
    }
    REQUIRE(g.wait_for_active(0));  // the first tunnel ended: its upstream connection is in the pool
    auto second = inject_client(w, g);
    CHECK(second->roundtrip(get(w, "/echo")).result_int() == 200);
    // Before: 2. Connections were put in the pool under pool_key and looked
    // for under loop_pool_key, so none was ever taken again.
    CHECK(w.good.connections.load() == 1);
}
