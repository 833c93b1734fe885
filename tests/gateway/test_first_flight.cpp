// gateway/first_flight.hpp: what a captured connection's first bytes are, and
// whether they fit the name and grant; check_captured_request's Host rule.
#include <doctest/doctest.h>

#include <openssl/bio.h>
#include <openssl/ssl.h>

#include <boost/beast/http.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "gateway/first_flight.hpp"
#include "gateway/request_checks.hpp"

using namespace corral;
using gateway::FirstFlight;
using Bytes = std::vector<std::uint8_t>;

namespace {

// A real ClientHello, from OpenSSL's client writing into a memory BIO.
Bytes openssl_client_hello(const char* sni) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    SSL* ssl = SSL_new(ctx);
    BIO* in = BIO_new(BIO_s_mem());
    BIO* out = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl, in, out);
    if (sni) SSL_set_tlsext_host_name(ssl, sni);
    SSL_connect(ssl);  // wants to read: the ClientHello is in `out`
    char* data = nullptr;
    long n = BIO_get_mem_data(out, &data);
    Bytes b(data, data + n);
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    return b;
}

void put16(Bytes& b, std::size_t v) {
    b.push_back(static_cast<std::uint8_t>(v >> 8));
    b.push_back(static_cast<std::uint8_t>(v));
}

// A minimal ClientHello with the given extensions' bytes, in one record.
Bytes hello_with_extensions(const Bytes& exts) {
    Bytes body = {3, 3};
    body.insert(body.end(), 32, 0);  // random
    body.push_back(0);               // session id
    put16(body, 2), body.push_back(0x13), body.push_back(0x01);
    body.push_back(1), body.push_back(0);  // compression: null
    put16(body, exts.size());
    body.insert(body.end(), exts.begin(), exts.end());
    Bytes hs = {1, 0};
    put16(hs, body.size());
    hs.insert(hs.end(), body.begin(), body.end());
    Bytes rec = {0x16, 3, 1};
    put16(rec, hs.size());
    rec.insert(rec.end(), hs.begin(), hs.end());
    return rec;
}

Bytes sni_extension(const std::string& name) {
    Bytes e;
    put16(e, 0);
    put16(e, name.size() + 5);
    put16(e, name.size() + 3);
    e.push_back(0);
    put16(e, name.size());
    e.insert(e.end(), name.begin(), name.end());
    return e;
}

FirstFlight read(const Bytes& b) { return gateway::read_first_flight(b); }
FirstFlight read(const std::string& s) {
    return gateway::read_first_flight({reinterpret_cast<const std::uint8_t*>(s.data()), s.size()});
}

gateway::HostName host(const char* h) { return *names::normalize_host(h).host; }

}  // namespace

TEST_CASE("an OpenSSL ClientHello is TLS with its SNI; every shorter prefix asks for more") {
    Bytes hello = openssl_client_hello("api.example.com");
    REQUIRE(hello.size() > 100);
    FirstFlight f = read(hello);
    CHECK(f.kind == FirstFlight::Kind::tls);
    CHECK(f.sni == "api.example.com");
    for (std::size_t n = 1; n < hello.size(); ++n)
        CHECK(read(Bytes(hello.begin(), hello.begin() + static_cast<long>(n))).kind == FirstFlight::Kind::need_more);
    FirstFlight none = read(openssl_client_hello(nullptr));
    CHECK(none.kind == FirstFlight::Kind::tls);
    CHECK(none.sni.empty());
}

TEST_CASE("check_first_flight: SNI must be the name (any case), absent is fine; HTTP only on a tunnel grant") {
    using config::GrantMode;
    CHECK_FALSE(gateway::check_first_flight(read(openssl_client_hello("API.Example.com")), host("api.example.com"),
                                            GrantMode::inject));
    auto other = gateway::check_first_flight(read(openssl_client_hello("evil.example")), host("api.example.com"),
                                             GrantMode::inject);
    REQUIRE(other);
    CHECK(other->reason == "sni_mismatch");
    CHECK(other->detail.find("evil.example") != std::string::npos);
    CHECK_FALSE(gateway::check_first_flight(read(openssl_client_hello(nullptr)), host("api.example.com"),
                                            GrantMode::tunnel));
    FirstFlight get = read(std::string("GET / HTTP/1.1\r\n"));
    CHECK(get.kind == FirstFlight::Kind::http);
    CHECK_FALSE(gateway::check_first_flight(get, host("api.example.com"), GrantMode::tunnel));
    auto clear = gateway::check_first_flight(get, host("api.example.com"), GrantMode::inject);
    REQUIRE(clear);
    CHECK(clear->reason == "cleartext_inject");
}

TEST_CASE("SSH, other protocols and malformed hellos are refused as first_flight") {
    FirstFlight ssh = read(std::string("SSH-2.0-OpenSSH_9.2p1\r\n"));
    CHECK(ssh.kind == FirstFlight::Kind::other);
    auto r = gateway::check_first_flight(ssh, host("api.example.com"), config::GrantMode::tunnel);
    REQUIRE(r);
    CHECK(r->reason == "first_flight");
    CHECK(read(std::string("get / HTTP/1.1\r\n")).kind == FirstFlight::Kind::other);   // methods are uppercase
    CHECK(read(std::string(" GET /")).kind == FirstFlight::Kind::other);
    CHECK(read(std::string("GET")).kind == FirstFlight::Kind::need_more);
    CHECK(read(std::string(30, 'A')).kind == FirstFlight::Kind::other);                // no method is that long
    CHECK(read(Bytes{0x16, 3, 9, 0, 5}).kind == FirstFlight::Kind::other);             // no such TLS version
    CHECK(read(Bytes{0x16, 3, 1, 0x50, 0}).kind == FirstFlight::Kind::other);          // record over 2^14
    CHECK(read(Bytes{0x16, 3, 1, 0, 4, 2, 0, 0, 0}).kind == FirstFlight::Kind::other); // a ServerHello
    Bytes two = sni_extension("a.example");
    Bytes second = sni_extension("b.example");
    two.insert(two.end(), second.begin(), second.end());
    CHECK(read(hello_with_extensions(two)).kind == FirstFlight::Kind::other);          // two server_names
    Bytes bad = sni_extension("a.example");
    bad[3] = 0x40;  // the extension claims more than the hello holds
    CHECK(read(hello_with_extensions(bad)).kind == FirstFlight::Kind::other);
    FirstFlight ok = read(hello_with_extensions(sni_extension("a.example")));
    CHECK(ok.kind == FirstFlight::Kind::tls);
    CHECK(ok.sni == "a.example");
    // A ClientHello longer than its record (split across records) is refused.
    Bytes split = hello_with_extensions(sni_extension("a.example"));
    split[4] = static_cast<std::uint8_t>(split[4] - 10);
    split.resize(split.size() - 10);
    CHECK(read(split).kind == FirstFlight::Kind::other);
}

TEST_CASE("check_captured_request: origin form, one Host naming the captured name and port") {
    namespace http = boost::beast::http;
    names::Authority target{host("api.example.com"), 8080};
    auto request = [](std::string target_text, std::vector<std::string> hosts) {
        gateway::Request req{http::verb::get, target_text, 11};
        for (auto& h : hosts) req.insert(http::field::host, h);
        return req;
    };
    auto path = gateway::check_captured_request(request("/v1/x?q=1", {"api.example.com:8080"}), target);
    REQUIRE(std::holds_alternative<std::string>(path));
    CHECK(std::get<std::string>(path) == "/v1/x?q=1");
    CHECK(std::holds_alternative<std::string>(gateway::check_captured_request(request("/", {"API.example.com"}), target)));
    auto reason = [&](std::string t, std::vector<std::string> h) {
        auto r = gateway::check_captured_request(request(std::move(t), std::move(h)), target);
        return std::holds_alternative<gateway::Refusal>(r) ? std::get<gateway::Refusal>(r).reason : std::string("ok");
    };
    CHECK(reason("/", {"evil.example:8080"}) == "host_mismatch");
    CHECK(reason("/", {"api.example.com:9090"}) == "host_mismatch");
    CHECK(reason("/", {}) == "host_mismatch");
    CHECK(reason("/", {"api.example.com:8080", "api.example.com:8080"}) == "host_mismatch");
    CHECK(reason("http://evil.example:8080/", {"api.example.com:8080"}) == "host_mismatch");
    CHECK(reason("http://api.example.com:8080/a", {"api.example.com:8080"}) == "ok");
    CHECK(reason("*", {"api.example.com:8080"}) == "bad_request");
}
