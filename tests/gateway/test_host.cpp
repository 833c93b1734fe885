#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "config/gateway_config.hpp"
#include "gateway/host.hpp"

using namespace corral::gateway;

namespace {

std::string ok_text(std::string_view raw) {
    auto c = normalize_host(raw);
    REQUIRE_MESSAGE(c.host.has_value(), "refused " << raw << ": " << c.reason);
    return c.host->text;
}

std::string refused(std::string_view raw) {
    auto c = normalize_host(raw);
    CHECK_MESSAGE(!c.host.has_value(), "accepted " << raw << " as " << (c.host ? c.host->text : ""));
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
    CHECK_FALSE(normalize_host("api.anthropic.com").host->is_ip_literal);
}

TEST_CASE("canonical IPv4 dotted quads are IP literals") {
    auto c = normalize_host("127.0.0.1");
    REQUIRE(c.host);
    CHECK(c.host->is_ip_literal);
    CHECK(c.host->text == "127.0.0.1");
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
            CHECK(c.host->is_ip_literal);
            continue;
        }
        CHECK_FALSE(c.host);
        CHECK(c.reason == "numeric_host");
    }
}

TEST_CASE("IPv6 literals are canonicalised, brackets removed") {
    auto c = normalize_host("[::1]");
    REQUIRE(c.host);
    CHECK(c.host->is_ip_literal);
    CHECK(c.host->text == "::1");
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
    CHECK(a.authority->host.text == "api.example.com");
    CHECK(a.authority->port == 443);

    auto b = split_authority("[::1]:8443");
    REQUIRE(b.authority);
    CHECK(b.authority->host.text == "::1");
    CHECK(b.authority->host.is_ip_literal);
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

TEST_CASE("hosts file: several lines for one name add answers; errors name file:line") {
    auto dir = std::filesystem::temp_directory_path() / ("corral-hosts-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto path = (dir / "hosts").string();
    {
        std::ofstream f(path);
        f << "# test names\n"
             "127.0.0.1 upstream.test Upstream2.Test.\n"
             "\n"
             "10.0.0.1   mixed.test   # comment\n"
             "::1 mixed.test\n";
    }
    auto t = load_hosts_file(path);
    CHECK(t.size() == 3);
    REQUIRE(t.count("upstream.test"));
    CHECK(t["upstream.test"].at(0).to_string() == "127.0.0.1");
    CHECK(t.count("upstream2.test"));
    REQUIRE(t["mixed.test"].size() == 2);
    CHECK(t["mixed.test"][1].to_string() == "::1");

    {
        std::ofstream f(path);
        f << "127.0.0.1 ok.test\n127.1 bad.test\n";
    }
    try {
        load_hosts_file(path);
        FAIL("accepted 127.1");
    } catch (const corral::config::ConfigError& e) {
        CHECK(std::string(e.what()).find(path + ":2:") == 0);
    }
    {
        std::ofstream f(path);
        f << "127.0.0.1 0x7f.1\n";
    }
    CHECK_THROWS_AS(load_hosts_file(path), corral::config::ConfigError);
    CHECK_THROWS_AS(load_hosts_file((dir / "missing").string()), corral::config::ConfigError);
    std::filesystem::remove_all(dir);
}
