// names/host: host names, grant host patterns and authorities (one rule for config and gateway).
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "names/host.hpp"

using namespace corral::names;

namespace {

std::string ok_text(std::string_view raw) {
    auto c = normalize_host(raw);
    REQUIRE_MESSAGE(c.host.has_value(), "refused " << raw << ": " << c.reason);
    return c.host->text();
}

std::string refused(std::string_view raw) {
    auto c = normalize_host(raw);
    CHECK_MESSAGE(!c.host.has_value(), "accepted " << raw << " as " << (c.host ? c.host->text() : ""));
    return c.reason;
}

}  // namespace

TEST_CASE("names are lowercased and lose a trailing dot") {
    CHECK(ok_text("API.Anthropic.COM") == "api.anthropic.com");
    CHECK(ok_text("api.anthropic.com.") == "api.anthropic.com");
    CHECK(ok_text("Example.Com.") == "example.com");
    CHECK(ok_text("localhost") == "localhost");
    CHECK(ok_text("_dmarc.example.com") == "_dmarc.example.com");
    CHECK(ok_text("xn--bcher-kva.example") == "xn--bcher-kva.example");
    CHECK_FALSE(normalize_host("api.anthropic.com").host->is_ip_literal());
}

TEST_CASE("canonical IPv4 dotted quads are IP literals") {
    auto c = normalize_host("127.0.0.1");
    REQUIRE(c.host);
    CHECK(c.host->is_ip_literal());
    CHECK(c.host->text() == "127.0.0.1");
    CHECK(ok_text("0.0.0.0") == "0.0.0.0");
    CHECK(ok_text("255.255.255.255") == "255.255.255.255");
    CHECK(ok_text("8.8.8.8.") == "8.8.8.8");
}

TEST_CASE("inet_aton-style numeric forms are refused as numeric_host") {
    for (const char* form : {"2130706433", "0x7f.1", "0177.0.0.1", "127.1", "017700000001", "0x7f000001",
                             "0X7F000001", "127.000.0.1", "127.0.0.01", "127.0.1", "0x7f.0.0.1", "256.0.0.1",
                             "1.2.3.4.5", "example.123", "foo.0x1f", "0", "0x", "127.0.0.1.", "4294967296"}) {
        CAPTURE(form);
        auto c = normalize_host(form);
        if (std::string_view(form) == "127.0.0.1.") {
            REQUIRE(c.host);  // trailing dot on a canonical quad is still that address
            CHECK(c.host->is_ip_literal());
            continue;
        }
        CHECK_FALSE(c.host);
        CHECK(c.reason == "numeric_host");
    }
}

TEST_CASE("IPv6 literals are canonicalised, brackets removed") {
    auto c = normalize_host("[::1]");
    REQUIRE(c.host);
    CHECK(c.host->is_ip_literal());
    CHECK(c.host->text() == "::1");
    CHECK(ok_text("::1") == "::1");
    CHECK(ok_text("[0:0:0:0:0:0:0:1]") == "::1");
    CHECK(ok_text("[FE80::1]") == "fe80::1");
    CHECK(ok_text("[::ffff:127.0.0.1]") == "::ffff:127.0.0.1");
    CHECK(ok_text("[::FFFF:7F00:1]") == "::ffff:127.0.0.1");
    CHECK(ok_text("[2001:DB8:0:0:0:0:0:1]") == "2001:db8::1");
}

TEST_CASE("IPv6 zone ids are refused as numeric_host") {
    CHECK(refused("[fe80::1%eth0]") == "numeric_host");
    CHECK(refused("[fe80::1%25eth0]") == "numeric_host");
    CHECK(refused("fe80::1%lo") == "numeric_host");
}

TEST_CASE("odd and malformed names are refused as bad_host") {
    for (const char* form :
         {"", ".", "..", "a..b", ".example.com", "-a.example.com", "a-.example.com", "exa mple.com", "example.com/x",
          "user@example.com", "ex%61mple.com", "%31%32%37.0.0.1", "example.com:443", "[example.com]", "[127.0.0.1]",
          "[::1", "::1]", "[]", "b\xc3\xbc" "cher.example", "\xe2\x80\x8b" "example.com", "exam\tple.com",
          "example.com\r\n", "[::g]", "[1:2:3:4:5:6:7:8:9]", "a\\b.com", "ex*ample.com"}) {
        CAPTURE(form);
        auto c = normalize_host(form);
        CHECK_FALSE(c.host);
        CHECK(c.reason == "bad_host");
    }
    // "example.com:443" has a colon: treated as an IPv6 attempt, which fails
    CHECK(refused("example.com:443") == "bad_host");
}

TEST_CASE("length limits: labels 63, names 253") {
    std::string label63(63, 'a');
    CHECK(normalize_host(label63 + ".com").host);
    CHECK(refused(std::string(64, 'a') + ".com") == "bad_host");
    std::string name;
    while (name.size() < 250) name += "abcdefghi.";
    name += "com";  // 253
    name = name.substr(name.size() - 253);
    if (name.front() == '.') name[0] = 'x';
    CHECK(normalize_host(name).host);
    CHECK(refused("a" + name) == "bad_host");
}

TEST_CASE("split_authority handles host:port, [v6]:port and defaults") {
    auto a = split_authority("API.example.com:443");
    REQUIRE(a.authority);
    CHECK(a.authority->host.text() == "api.example.com");
    CHECK(a.authority->port == 443);

    auto b = split_authority("[::1]:8443");
    REQUIRE(b.authority);
    CHECK(b.authority->host.text() == "::1");
    CHECK(b.authority->host.is_ip_literal());
    CHECK(b.authority->port == 8443);

    auto c = split_authority("example.com", 443);
    REQUIRE(c.authority);
    CHECK(c.authority->port == 443);
    auto d = split_authority("[::1]", 80);
    REQUIRE(d.authority);
    CHECK(d.authority->port == 80);

    CHECK(split_authority("example.com").reason == "bad_request");  // CONNECT needs a port
    for (const char* bad : {"example.com:", "example.com:0", "example.com:65536", "example.com:+443",
                            "example.com:0443", "example.com:44a", "example.com:123456"}) {
        CAPTURE(bad);
        auto r = split_authority(bad);
        CHECK_FALSE(r.authority);
        CHECK(r.reason == "bad_request");
    }
    CHECK(split_authority("::1:443").reason == "bad_host");           // bare IPv6
    CHECK(split_authority("[::1]x443").reason == "bad_host");
    CHECK(split_authority("2130706433:443").reason == "numeric_host");
    CHECK(split_authority("[fe80::1%25eth0]:443").reason == "numeric_host");
    CHECK(split_authority("ex%61mple.com:443").reason == "bad_host");
}

TEST_CASE("a last label of \"0x\" and non-hex digits is a name, on both sides of a grant") {
    // WHATWG's "ends in a number": "0x" followed by hex digits only. "0xz" and
    // "0x1g" are no number to a browser or inet_aton; the config used to
    // refuse them as grant hosts while the gateway accepted them as names.
    for (const char* raw : {"x.0xz", "x.0x1g", "X.0XZ.", "0xz", "a.0xg1", "a.b.0x-y"}) {
        CAPTURE(raw);
        auto request = normalize_host(raw);
        REQUIRE(request.host);
        CHECK_FALSE(request.host->is_ip_literal());
        auto grant = parse_host_pattern(raw);
        REQUIRE(grant);
        CHECK(grant->text() == request.host->text());
        CHECK(grant->match_score(*request.host) != 0);
        auto wild = parse_host_pattern(std::string("*.a.") + raw);
        REQUIRE(wild);
        CHECK(wild->match_score(*normalize_host(std::string("b.a.") + raw).host) != 0);
    }
    // ...while a last label that IS a number stays refused on both sides.
    for (const char* raw : {"x.0x", "x.0x1f", "x.0X1F", "x.017", "x.1"}) {
        CAPTURE(raw);
        CHECK(refused(raw) == "numeric_host");
        CHECK_FALSE(parse_host_pattern(raw));
        CHECK_FALSE(parse_host_pattern(std::string("*.a.") + raw));
    }
}

TEST_CASE("a grant host pattern accepts exactly what normalize_host accepts, plus *.name") {
    for (const char* raw : {"api.example.com", "API.Example.COM.", "127.0.0.1", "[::1]", "::1", "[2001:DB8::1]",
                            "_dmarc.example.com", "localhost", "xn--bcher-kva.example", "", "*", "a..b",
                            "127.1", "0x7f.1", "[example.com]", "fe80::1%eth0", "-a.com", "a b", "a.com:443"}) {
        CAPTURE(raw);
        auto h = normalize_host(raw);
        auto p = parse_host_pattern(raw);
        REQUIRE(h.host.has_value() == p.has_value());
        if (!p) continue;
        CHECK(p->text() == h.host->text());
        CHECK_FALSE(p->is_wildcard());
        CHECK(p->match_score(*h.host) == std::string::npos);  // exact beats every wildcard
    }
    CHECK(parse_host_pattern("[::1]")->text() == "::1");
    CHECK(parse_host_pattern("[2001:DB8::1]")->text() == "2001:db8::1");
}

TEST_CASE("wildcard patterns: two labels at least, never an address, the apex excluded") {
    auto p = parse_host_pattern("*.Example.COM.");
    REQUIRE(p);
    CHECK(p->is_wildcard());
    CHECK(p->text() == "*.example.com");
    auto name = [](const char* raw) { return *normalize_host(raw).host; };
    CHECK(p->match_score(name("api.example.com")) == std::string(".example.com").size());
    CHECK(p->match_score(name("a.b.example.com")) != 0);
    CHECK(p->match_score(name("example.com")) == 0);     // the apex
    CHECK(p->match_score(name("badexample.com")) == 0);  // a suffix of the text, not of the labels
    CHECK(p->match_score(name("127.0.0.1")) == 0);
    auto longer = parse_host_pattern("*.api.example.com");
    REQUIRE(longer);
    CHECK(longer->match_score(name("v1.api.example.com")) > p->match_score(name("v1.api.example.com")));
    for (const char* bad : {"*.com", "*.", "*", "*.*.example.com", "*.127.0.0.1", "*.[::1]", "a.*.example.com",
                            "*example.com", "**.example.com", "*.0x7f.1"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_host_pattern(bad));
    }
    CHECK(HostPattern().match_score(name("example.com")) == 0);  // the empty pattern grants nothing
    CHECK_THROWS_AS(builtin_host_pattern("*.com"), std::logic_error);
}

TEST_CASE("a port 0 is accepted only where asked for (a listener's any free port)") {
    CHECK(split_authority("127.0.0.1:0").reason == "bad_request");
    auto any = split_authority("127.0.0.1:0", std::nullopt, PortZero::allowed);
    REQUIRE(any.authority);
    CHECK(any.authority->port == 0);
    auto v6 = split_authority("[::1]:0", std::nullopt, PortZero::allowed);
    REQUIRE(v6.authority);
    CHECK(v6.authority->host.text() == "::1");
    for (const char* bad : {"127.0.0.1:00", "127.0.0.1:08080", "127.0.0.1:", "127.0.0.1:65536"}) {
        CAPTURE(bad);
        CHECK(split_authority(bad, std::nullopt, PortZero::allowed).reason == "bad_request");
    }
}
