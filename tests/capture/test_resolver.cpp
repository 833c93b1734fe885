// capture/resolver: what the box's DNS stub answers for each name.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "capture/dns_message.hpp"
#include "capture/resolver.hpp"
#include "tests/capture/dns_query_bytes.hpp"

using namespace corral::capture;
using namespace corral::capture::testing;
using corral::names::HostName;
using corral::names::HostPattern;

namespace {

// The run's grants as the tests' stand-in: patterns matched with the
// names/ rule the gateway's find_grant uses.
ResolverContext context(std::vector<std::string> patterns, std::string hostname = "box-1", bool ipv6 = true) {
    std::vector<HostPattern> grants;
    for (const auto& p : patterns) grants.push_back(*corral::names::parse_host_pattern(p));
    ResolverContext ctx;
    ctx.granted = [grants](const HostName& h) {
        for (const auto& g : grants)
            if (g.match_score(h) != 0) return true;
        return false;
    };
    ctx.hostname = std::move(hostname);
    ctx.ipv6 = ipv6;
    return ctx;
}

std::vector<std::uint8_t> query(std::string_view name, std::uint16_t qtype = kTypeA) {
    QueryBytes q;
    q.name = wire_name(name);
    q.qtype = qtype;
    return q.bytes();
}

unsigned rcode_of(const Resolution& r) { return read16(r.reply, 2) & 0xf; }
unsigned answers_of(const Resolution& r) { return read16(r.reply, 6); }

// The answer record's data: past the header, the question (labels up to the
// root's 0, type, class) and the record's fixed 10 bytes after its pointer.
std::vector<std::uint8_t> rdata_of(const Resolution& r) {
    REQUIRE(answers_of(r) == 1);
    std::size_t at = 12;
    while (r.reply.at(at) != 0) at += r.reply[at] + 1u;
    at += 5 + 10;
    std::size_t len = read16(r.reply, at);
    REQUIRE(r.reply.size() == at + 2 + len);
    return {r.reply.begin() + static_cast<std::ptrdiff_t>(at) + 2, r.reply.end()};
}

}  // namespace

TEST_CASE("a granted name gets its synthetic address, the same one every time") {
    auto ctx = context({"api.example.com", "*.github.com"});
    SyntheticAddresses map;
    auto r = resolve(query("api.example.com"), ctx, map);
    CHECK(r.reason == resolve_reason::answered);
    CHECK(r.name == "api.example.com");
    CHECK(rcode_of(r) == 0);
    CHECK(rdata_of(r) == std::vector<std::uint8_t>{198, 18, 0, 1});
    auto w = resolve(query("codeload.github.com"), ctx, map);
    CHECK(rdata_of(w) == std::vector<std::uint8_t>{198, 18, 0, 2});
    CHECK(rdata_of(resolve(query("API.EXAMPLE.COM"), ctx, map)) == std::vector<std::uint8_t>{198, 18, 0, 1});
    CHECK(resolve(query("API.EXAMPLE.COM"), ctx, map).name == "api.example.com");
    REQUIRE(map.name_of(std::array<std::uint8_t, 4>{198, 18, 0, 2}));
    CHECK(map.name_of(std::array<std::uint8_t, 4>{198, 18, 0, 2})->text() == "codeload.github.com");
}

TEST_CASE("AAAA for a granted name: the v6 address, or NOERROR without an answer when the box has no IPv6") {
    SyntheticAddresses map;
    auto r = resolve(query("api.example.com", kTypeAAAA), context({"api.example.com"}), map);
    CHECK(rdata_of(r) == std::vector<std::uint8_t>{0xfd, 0x63, 0x6f, 0x72, 0x72, 0x61, 0x6c, 0x00, 0, 0, 0, 0, 198, 18, 0, 1});
    SyntheticAddresses map4;
    auto off = resolve(query("api.example.com", kTypeAAAA), context({"api.example.com"}, "box-1", false), map4);
    CHECK(off.reason == resolve_reason::answered);
    CHECK(rcode_of(off) == 0);
    CHECK(answers_of(off) == 0);
    CHECK(map4.size() == 0);
}

TEST_CASE("other types for a granted name: NOERROR, no answer, no address given") {
    SyntheticAddresses map;
    for (std::uint16_t t : {16, 65, 255, 12}) {  // TXT, HTTPS, ANY, PTR
        auto r = resolve(query("api.example.com", t), context({"api.example.com"}), map);
        CHECK(r.reason == resolve_reason::answered);
        CHECK(rcode_of(r) == 0);
        CHECK(answers_of(r) == 0);
    }
    CHECK(map.size() == 0);
}

TEST_CASE("a name no grant names: NXDOMAIN at once, reason not_granted, nothing assigned") {
    SyntheticAddresses map;
    auto ctx = context({"api.example.com", "*.github.com"});
    for (auto name : {"example.com", "github.com", "evil.api.example.com", "1.0.18.198.in-addr.arpa"}) {
        auto r = resolve(query(name), ctx, map);
        CHECK(r.reason == resolve_reason::not_granted);
        CHECK(rcode_of(r) == 3);
        CHECK(r.detail == "no grant of this run names " + std::string(name) + " on any port");
    }
    CHECK(map.size() == 0);
    ResolverContext none;  // no predicate: nothing is granted
    CHECK(resolve(query("api.example.com"), none, map).reason == resolve_reason::not_granted);
}

TEST_CASE("localhost and the box's name as its /etc/hosts has them") {
    SyntheticAddresses map;
    auto ctx = context({}, "Box-1");
    CHECK(rdata_of(resolve(query("localhost"), ctx, map)) == std::vector<std::uint8_t>{127, 0, 0, 1});
    std::vector<std::uint8_t> loop6(16, 0);
    loop6[15] = 1;
    CHECK(rdata_of(resolve(query("LocalHost", kTypeAAAA), ctx, map)) == loop6);
    CHECK(rdata_of(resolve(query("ip6-localhost", kTypeAAAA), ctx, map)) == loop6);
    CHECK(rdata_of(resolve(query("box-1"), ctx, map)) == std::vector<std::uint8_t>{127, 0, 1, 1});
    for (auto [name, type] : {std::pair{"box-1", kTypeAAAA}, {"ip6-loopback", kTypeA}, {"localhost", std::uint16_t{16}}}) {
        auto r = resolve(query(name, type), ctx, map);
        CHECK(r.reason == resolve_reason::answered);
        CHECK(rcode_of(r) == 0);
        CHECK(answers_of(r) == 0);
    }
    auto no6 = context({}, "box-1", false);
    CHECK(answers_of(resolve(query("localhost", kTypeAAAA), no6, map)) == 0);
    CHECK(resolve(query("box-2"), ctx, map).reason == resolve_reason::not_granted);
    CHECK(map.size() == 0);
}

TEST_CASE("names corral does not accept: NXDOMAIN with the host rule's reason") {
    SyntheticAddresses map;
    auto ctx = context({"*.example.com"});
    auto bad = resolve(query("a b.example.com"), ctx, map);
    CHECK(bad.reason == resolve_reason::bad_host);
    CHECK(rcode_of(bad) == 3);
    CHECK(resolve(query(""), ctx, map).reason == resolve_reason::bad_host);
    CHECK(resolve(query("-a.example.com"), ctx, map).reason == resolve_reason::bad_host);
    CHECK(resolve(query("x.0x7f"), ctx, map).reason == resolve_reason::numeric_host);
    CHECK(resolve(query("a.127"), ctx, map).reason == resolve_reason::numeric_host);
    auto literal = resolve(query("198.18.0.1"), context({"198.18.0.1"}), map);
    CHECK(literal.reason == resolve_reason::numeric_host);
    CHECK(rcode_of(literal) == 3);
    CHECK(map.size() == 0);
}

TEST_CASE("the longest name DNS carries resolves when granted") {
    std::string name = std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." +
                       std::string(53, 'd') + ".example";  // 253 characters
    REQUIRE(name.size() == 253);
    SyntheticAddresses map;
    auto r = resolve(query(name), context({name}), map);
    CHECK(r.reason == resolve_reason::answered);
    CHECK(answers_of(r) == 1);
}

TEST_CASE("past the address limit: REFUSED with its reason; names already given still resolve") {
    SyntheticAddresses map(1);
    auto ctx = context({"*.example.com"});
    CHECK(rdata_of(resolve(query("a.example.com"), ctx, map)) == std::vector<std::uint8_t>{198, 18, 0, 1});
    auto r = resolve(query("b.example.com"), ctx, map);
    CHECK(r.reason == resolve_reason::exhausted);
    CHECK(rcode_of(r) == 5);
    CHECK(r.detail.find("b.example.com gets none") != std::string::npos);
    CHECK(rdata_of(resolve(query("a.example.com"), ctx, map)) == std::vector<std::uint8_t>{198, 18, 0, 1});
}

TEST_CASE("malformed messages: FORMERR with the parser's reason, or silence for a response") {
    SyntheticAddresses map;
    auto ctx = context({"api.example.com"});
    QueryBytes q;
    q.qdcount = 2;
    auto r = resolve(q.bytes(), ctx, map);
    CHECK(r.reason == dns_reason::malformed);
    CHECK(rcode_of(r) == 1);
    q = {};
    q.flags = 0x8000;
    CHECK(resolve(q.bytes(), ctx, map).reply.empty());
    CHECK(resolve(std::vector<std::uint8_t>{1, 2, 3}, ctx, map).reply.empty());
}

TEST_CASE("a class other than IN is REFUSED") {
    SyntheticAddresses map;
    QueryBytes q;
    q.qclass = 3;  // CHAOS: "version.bind" and the like
    auto r = resolve(q.bytes(), context({"api.example.com"}), map);
    CHECK(r.reason == dns_reason::not_supported);
    CHECK(rcode_of(r) == 5);
    CHECK(map.size() == 0);
}
