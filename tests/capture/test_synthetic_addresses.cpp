// capture/synthetic_addresses: one run's name <-> address map.
#include <doctest/doctest.h>

#include <array>
#include <set>
#include <stdexcept>
#include <string>

#include "capture/synthetic_addresses.hpp"

using namespace corral::capture;
using corral::names::HostName;
using corral::names::normalize_host;

namespace {

HostName host(std::string_view text) {
    auto c = normalize_host(text);
    REQUIRE_MESSAGE(c.host.has_value(), text << ": " << c.reason);
    return *c.host;
}

std::array<std::uint8_t, 16> mapped(const std::array<std::uint8_t, 4>& v4) {
    return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, v4[0], v4[1], v4[2], v4[3]};
}

}  // namespace

TEST_CASE("the ranges a box gets routes for") {
    CHECK(synthetic_v4_range_text() == "198.18.0.0/15");
    CHECK(synthetic_v6_range_text() == "fd63:6f72:7261:6c00::/64");
}

TEST_CASE("a name keeps its address for the run; spellings of one name are one name") {
    SyntheticAddresses map;
    auto a = map.assign(host("api.example.com"));
    auto b = map.assign(host("github.com"));
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->v4 == std::array<std::uint8_t, 4>{198, 18, 0, 1});
    CHECK(b->v4 == std::array<std::uint8_t, 4>{198, 18, 0, 2});
    auto again = map.assign(host("API.Example.COM."));
    REQUIRE(again);
    CHECK(again->v4 == a->v4);
    CHECK(again->v6 == a->v6);
    CHECK(map.size() == 2);
    CHECK(map.find(host("github.com"))->v4 == b->v4);
    CHECK_FALSE(map.find(host("other.example.com")));
}

TEST_CASE("the v6 address is the ULA /64 with the v4 address in its low 32 bits") {
    SyntheticAddresses map;
    auto a = map.assign(host("api.example.com"));
    REQUIRE(a);
    std::array<std::uint8_t, 16> want{0xfd, 0x63, 0x6f, 0x72, 0x72, 0x61, 0x6c, 0x00, 0, 0, 0, 0, 198, 18, 0, 1};
    CHECK(a->v6 == want);
}

TEST_CASE("addresses skip .0 and .255 and walk the whole /15") {
    CHECK(synthetic_address_at(253).v4 == std::array<std::uint8_t, 4>{198, 18, 0, 254});
    CHECK(synthetic_address_at(254).v4 == std::array<std::uint8_t, 4>{198, 18, 1, 1});
    CHECK(synthetic_address_at(254 * 256).v4 == std::array<std::uint8_t, 4>{198, 19, 0, 1});
    CHECK(synthetic_address_at(kSyntheticV4Capacity - 1).v4 == std::array<std::uint8_t, 4>{198, 19, 255, 254});
}

TEST_CASE("reverse lookup: the accepted socket's local address back to the name") {
    SyntheticAddresses map;
    auto a = map.assign(host("api.example.com"));
    auto b = map.assign(host("github.com"));
    REQUIRE(a);
    REQUIRE(b);
    REQUIRE(map.name_of(a->v4) != nullptr);
    CHECK(map.name_of(a->v4)->text() == "api.example.com");
    CHECK(map.name_of(b->v6)->text() == "github.com");
    CHECK(map.name_of(mapped(b->v4))->text() == "github.com");
}

TEST_CASE("reverse lookup finds nothing for addresses not given out") {
    SyntheticAddresses map;
    auto a = map.assign(host("api.example.com"));
    REQUIRE(a);
    CHECK(map.name_of(std::array<std::uint8_t, 4>{198, 18, 0, 2}) == nullptr);    // in range, not assigned
    CHECK(map.name_of(std::array<std::uint8_t, 4>{198, 18, 0, 0}) == nullptr);
    CHECK(map.name_of(std::array<std::uint8_t, 4>{198, 18, 0, 255}) == nullptr);
    CHECK(map.name_of(std::array<std::uint8_t, 4>{198, 20, 0, 1}) == nullptr);    // past the /15
    CHECK(map.name_of(std::array<std::uint8_t, 4>{127, 0, 0, 1}) == nullptr);
    auto v6 = a->v6;
    v6[8] = 1;  // same prefix and low bits, not an address handed out
    CHECK(map.name_of(v6) == nullptr);
    v6 = a->v6;
    v6[7] = 1;  // another /64
    CHECK(map.name_of(v6) == nullptr);
    CHECK(map.name_of(std::array<std::uint8_t, 3>{198, 18, 0}) == nullptr);
    CHECK(map.name_of(std::span<const std::uint8_t>()) == nullptr);
}

TEST_CASE("past its limit the map gives no new name an address; the names it holds keep theirs") {
    SyntheticAddresses map(3);
    std::set<std::array<std::uint8_t, 4>> seen;
    for (auto n : {"a.example.com", "b.example.com", "c.example.com"}) {
        auto a = map.assign(host(n));
        REQUIRE(a);
        seen.insert(a->v4);
    }
    CHECK(seen.size() == 3);
    CHECK_FALSE(map.assign(host("d.example.com")));
    CHECK(map.size() == 3);
    CHECK(map.assign(host("b.example.com"))->v4 == std::array<std::uint8_t, 4>{198, 18, 0, 2});
    CHECK(map.name_of(std::array<std::uint8_t, 4>{198, 18, 0, 4}) == nullptr);
}

TEST_CASE("the limit is at least 1 and at most the /15's capacity") {
    CHECK_THROWS_AS(SyntheticAddresses(0), std::invalid_argument);
    CHECK_THROWS_AS(SyntheticAddresses(kSyntheticV4Capacity + 1), std::invalid_argument);
    SyntheticAddresses full(kSyntheticV4Capacity);
    CHECK(full.limit() == kSyntheticV4Capacity);
}

TEST_CASE("a full default map: every address distinct and mapped back") {
    SyntheticAddresses map;
    for (std::size_t i = 0; i < kDefaultSyntheticNameLimit; ++i) {
        auto a = map.assign(host("n" + std::to_string(i) + ".example.com"));
        REQUIRE(a);
        REQUIRE(map.name_of(a->v4) != nullptr);
        REQUIRE(map.name_of(a->v4)->text() == "n" + std::to_string(i) + ".example.com");
    }
    CHECK_FALSE(map.assign(host("one-more.example.com")));
}
