// Raw request-head framing checks (smuggling forms Beast alone would accept or normalise).
#include <doctest/doctest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/string_body.hpp>

#include <iterator>
#include <string>

#include "gateway/http_framing.hpp"

using namespace corral::gateway;

namespace {
// The refusal's reason, or "" when the framing is unambiguous.
std::string check(const std::string& head) {
    auto refused = check_request_framing(head);
    return refused ? refused->reason : std::string();
}
}  // namespace

TEST_CASE("scan_head finds the end of a CRLF head and flags bare LF at once") {
    CHECK(scan_head("GET / HTTP/1.1\r\nHost: a\r\n\r\nBODY").end == 27);
    CHECK(scan_head("GET / HTTP/1.1\r\nHost: a\r\n").end == std::string_view::npos);
    CHECK_FALSE(scan_head("GET / HTTP/1.1\r\nHost: a\r\n").bare_lf);
    CHECK(scan_head("GET / HTTP/1.1\nHost: a\r\n\r\n").bare_lf);
    CHECK(scan_head("GET / HTTP/1.1\r\nHost: a\n\n").bare_lf);
    // Leading empty lines before the request line are tolerated (RFC 9112 2.2).
    CHECK(scan_head("\r\nGET / HTTP/1.1\r\n\r\n").end == 20);
}

TEST_CASE("unambiguous heads pass") {
    CHECK(check("GET / HTTP/1.1\r\nHost: a\r\n\r\n") == "");
    CHECK(check("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n") == "");
    CHECK(check("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n") == "");
    CHECK(check("GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n") == "");
}

TEST_CASE("smuggling forms are refused") {
    CHECK(check("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n") == "smuggling");
    CHECK(check("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n") == "smuggling");
    CHECK(check("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n") == "smuggling");
    CHECK(check("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n") == "smuggling");
    CHECK(check("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n") == "smuggling");
    CHECK(check("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n") == "smuggling");
    CHECK(check("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n") == "smuggling");
    CHECK(check("GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n  continued\r\n\r\n") == "smuggling");
    CHECK(check("GET / HTTP/1.1\r\nHost: a\r\nContent-Length : 5\r\n\r\n") == "smuggling");
    CHECK(check("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\n\r\n") == "smuggling");
    CHECK(check("GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket, H2C\r\n\r\n") == "smuggling");
    CHECK(check("GET / HTTP/1.1\r\nHost: a\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n") == "smuggling");
    CHECK(check("GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n") == "smuggling");
}

TEST_CASE("malformed heads are bad requests") {
    CHECK(check("\r\n") == "bad_request");
    CHECK(check("GET / HTTP/1.1\r\nno colon here\r\n\r\n") == "bad_request");
    CHECK(check("GET / HTTP/1.1\r\n: empty name\r\n\r\n") == "bad_request");
    CHECK(check("GET / HTTP/1.1\r\nBad(Name): x\r\n\r\n") == "bad_request");
}

// ---------------------------------------------------------------------------
// StrictParser: what Beast 1.81 merges, stores or throws on and a proxy must refuse.

namespace {
namespace http = boost::beast::http;
using StrictRequest = StrictRequestParser<http::string_body>;

// Feeds `bytes` to `p` the way the gateway does (bytes left unparsed are
// offered again with what follows), so the parse ends as it would on a socket.
template <class Parser>
boost::beast::error_code feed(Parser& p, const std::string& bytes) {
    boost::beast::error_code ec;
    std::string_view rest = bytes;
    while (!rest.empty() && !p.is_done()) {
        std::size_t used = p.put(boost::asio::buffer(rest.data(), rest.size()), ec);
        rest.remove_prefix(used);
        if (ec == http::error::need_more) return {};
        if (ec) return ec;
        if (used == 0) break;
    }
    return ec;
}

// Set up like the gateway's (Beast parsers cannot be moved or returned).
struct ProxyParser : StrictRequest {
    ProxyParser() {
        header_limit(1 << 20);  // max_header_bytes may be configured above 64 KiB
        body_limit(1 << 20);
        eager(true);
    }
};
}  // namespace

TEST_CASE("a chunked body without trailers parses whole") {
    ProxyParser p;
    auto ec = feed(p, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;name=v\r\nhello\r\n0\r\n\r\n");
    CHECK_FALSE(ec);
    CHECK(p.is_done());
    CHECK(p.get().body() == "hello");
    CHECK(p.refusal().reason.empty());
}

TEST_CASE("trailer fields are refused before they reach the message's head") {
    for (std::string trailer : {"Host: evil.example", "Upgrade: h2c", "HTTP2-Settings: AAMAAABkAAQAAP__",
                                "x-api-key: sk-from-the-box", "X-Harmless: 1"}) {
        CAPTURE(trailer);
        ProxyParser p;
        auto ec = feed(p, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n" +
                              trailer + "\r\n\r\n");
        CHECK(ec);
        CHECK(p.refusal().reason == "trailers_refused");
        CHECK(p.get().count(http::field::host) == 1);  // nothing merged
        CHECK(std::distance(p.get().begin(), p.get().end()) == 2);
    }
}

TEST_CASE("a trailer or header value over 65535 bytes is refused, never thrown") {
    // Beast stores field lengths in 16 bits and throws std::length_error for more;
    // thrown inside a read's completion handler, that leaves the event loop.
    const std::string huge(70000, 'v');
    {
        ProxyParser p;
        boost::beast::error_code ec;
        CHECK_NOTHROW(ec = feed(p, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: " +
                                       huge + "\r\n\r\n"));
        CHECK(ec);
        CHECK(p.refusal().reason == "trailers_refused");
    }
    {
        ProxyParser p;
        boost::beast::error_code ec;
        CHECK_NOTHROW(ec = feed(p, "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + huge + "\r\n\r\n"));
        CHECK(ec);
        CHECK(p.refusal().reason == "headers_too_large");
    }
    {
        StrictResponseParser<http::string_body> p;
        p.header_limit(1 << 20);
        p.eager(true);
        boost::beast::error_code ec;
        CHECK_NOTHROW(ec = feed(p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: " + huge +
                                       "\r\n\r\n"));
        CHECK(ec);
        CHECK(p.refusal().reason == "trailers_refused");
    }
}

TEST_CASE("chunk extensions longer than kMaxChunkExtension are refused") {
    auto ext = [](std::size_t n) { return ";" + std::string(n - 1, 'e'); };
    {
        ProxyParser p;
        auto ec = feed(p, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5" + ext(kMaxChunkExtension) +
                              "\r\nhello\r\n0\r\n\r\n");
        CHECK_FALSE(ec);
        CHECK(p.get().body() == "hello");
    }
    for (std::string last : {std::string("5") + ext(kMaxChunkExtension + 1) + "\r\nhello\r\n0\r\n\r\n",
                             "5\r\nhello\r\n0" + ext(kMaxChunkExtension + 1) + "\r\n\r\n"}) {
        ProxyParser p;
        auto ec = feed(p, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + last);
        CHECK(ec);
        CHECK(p.refusal().reason == "bad_request");
    }
}
