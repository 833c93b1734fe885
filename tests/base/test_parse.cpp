#include <doctest/doctest.h>

#include "base/parse.hpp"
#include "base/sys_error.hpp"

using namespace corral;
using namespace std::chrono_literals;

TEST_CASE("parse_size accepts plain bytes and binary units") {
    CHECK(parse_size("512") == 512);
    CHECK(parse_size("512B") == 512);
    CHECK(parse_size("64K") == 64 * 1024);
    CHECK(parse_size("64kib") == 64 * 1024);
    CHECK(parse_size("2M") == 2 * 1024 * 1024);
    CHECK(parse_size("1.5G") == 1536ull * 1024 * 1024);
    CHECK(parse_size("1TiB") == 1ull << 40);
}

TEST_CASE("parse_size rejects malformed text with the accepted form") {
    for (const char* bad : {"", "-1", "M", "12XB", "1.M", "1 M", "abc", "99999999999999999999T"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(parse_size(bad), UsageError);
    }
    try {
        parse_size("12XB");
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()).find("\"12XB\"") != std::string::npos);
        CHECK(std::string(e.what()).find("K/KiB") != std::string::npos);
    }
}

TEST_CASE("a size or duration past the largest one names the largest allowed, which itself parses") {
    CHECK(parse_size("16777215T") == 16777215ull << 40);
    CHECK_THROWS_WITH_AS(parse_size("16777216T"),
                         doctest::Contains("too large, allowed: at most 16777215T"), UsageError);
    CHECK(parse_duration("53375995583d") == std::chrono::days(53375995583));
    CHECK_THROWS_WITH_AS(parse_duration("53375995584d"),
                         doctest::Contains("too large, allowed: at most 53375995583d"), UsageError);
}

TEST_CASE("parse_duration accepts units and compound forms") {
    CHECK(parse_duration("250ms") == 250ms);
    CHECK(parse_duration("30s") == 30s);
    CHECK(parse_duration("90") == 90s);
    CHECK(parse_duration("5m") == 5min);
    CHECK(parse_duration("1h30m") == 90min);
    CHECK(parse_duration("1.5s") == 1500ms);
}

TEST_CASE("parse_duration rejects malformed text") {
    for (const char* bad : {"", "-5s", "s", "1x", "1h30", "1..5s", "ms"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(parse_duration(bad), UsageError);
    }
}

TEST_CASE("parse_env_pair splits at the first = and validates the key") {
    CHECK(parse_env_pair("A=b") == std::pair<std::string, std::string>{"A", "b"});
    CHECK(parse_env_pair("A_1=x=y") == std::pair<std::string, std::string>{"A_1", "x=y"});
    CHECK(parse_env_pair("EMPTY=") == std::pair<std::string, std::string>{"EMPTY", ""});
    for (const char* bad : {"", "=x", "NOEQ", "1A=x", "A-B=x", "A B=x"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(parse_env_pair(bad), UsageError);
    }
}

TEST_CASE("format_size and format_duration round-trip through the parsers") {
    for (std::uint64_t v : {0ull, 1ull, 1024ull, 64ull << 20, 3ull << 30, 1000ull}) {
        CHECK(parse_size(format_size(v)) == v);
    }
    for (auto d : {0ms, 250ms, 1000ms, 90000ms}) CHECK(parse_duration(format_duration(d)) == d);
}
