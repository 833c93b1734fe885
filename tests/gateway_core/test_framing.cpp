// Raw request-head framing checks (smuggling forms Beast alone would accept or normalise).
#include <doctest/doctest.h>

#include <string>

#include "gateway/http_framing.hpp"

using namespace corral::gateway;

namespace {
std::string check(const std::string& head) {
    std::string detail;
    return check_request_framing(head, &detail);
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
