// capture/dns_message: one DNS query parsed strictly, replies built from it.
#include <doctest/doctest.h>

#include <string>
#include <variant>

#include "capture/dns_message.hpp"
#include "tests/capture/dns_query_bytes.hpp"

using namespace corral::capture;
using namespace corral::capture::testing;

namespace {

DnsQuery parsed(const std::vector<std::uint8_t>& m) {
    auto r = parse_query(m);
    if (auto* refusal = std::get_if<MessageRefusal>(&r)) FAIL("refused: " << refusal->detail);
    return std::get<DnsQuery>(r);
}

MessageRefusal refused(const std::vector<std::uint8_t>& m) {
    auto r = parse_query(m);
    REQUIRE_MESSAGE(std::holds_alternative<MessageRefusal>(r), "accepted " << std::get<DnsQuery>(r).name);
    return std::get<MessageRefusal>(r);
}

std::vector<std::uint8_t> label_of(std::size_t n, char c = 'a') {
    std::vector<std::uint8_t> out{static_cast<std::uint8_t>(n)};
    out.insert(out.end(), n, static_cast<std::uint8_t>(c));
    return out;
}

std::vector<std::uint8_t> name_of_labels(std::initializer_list<std::size_t> sizes) {
    std::vector<std::uint8_t> out;
    for (auto n : sizes) {
        auto l = label_of(n);
        out.insert(out.end(), l.begin(), l.end());
    }
    out.push_back(0);
    return out;
}

}  // namespace

TEST_CASE("a stub resolver's A query is read: id, RD, name as sent, type, class, the question's bytes") {
    QueryBytes q;
    q.name = wire_name("API.Example.com");
    auto m = q.bytes();
    auto p = parsed(m);
    CHECK(p.id == 0x1234);
    CHECK(p.recursion_desired);
    CHECK(p.name == "API.Example.com");  // case kept: the resolver normalises, the reply echoes
    CHECK(p.qtype == kTypeA);
    CHECK(p.qclass == kClassIN);
    CHECK(p.question == std::vector<std::uint8_t>(m.begin() + 12, m.end()));
}

TEST_CASE("an EDNS OPT record after the question is accepted (glibc edns0, Go, c-ares send one)") {
    QueryBytes q;
    q.qtype = kTypeAAAA;
    q.arcount = 1;
    q.after = opt_record();
    auto p = parsed(q.bytes());
    CHECK(p.name == "api.example.com");
    CHECK(p.qtype == kTypeAAAA);
    CHECK(p.question.size() == wire_name("api.example.com").size() + 4);
}

TEST_CASE("the root name and other query types parse; the resolver judges them") {
    QueryBytes q;
    q.name = {0};
    q.qtype = 16;  // TXT
    q.qclass = 3;  // CH
    auto p = parsed(q.bytes());
    CHECK(p.name.empty());
    CHECK(p.qtype == 16);
    CHECK(p.qclass == 3);
}

TEST_CASE("a message shorter than a header is dropped without a reply") {
    auto full = QueryBytes{}.bytes();
    for (std::size_t n = 0; n < 12; ++n) {
        auto r = refused(std::vector<std::uint8_t>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n)));
        CHECK(r.reason == dns_reason::malformed);
        CHECK_FALSE(r.reply_id.has_value());
        CHECK(reply_to_refusal(r).empty());
    }
}

TEST_CASE("every truncation of a valid query after its header is refused with FORMERR, never read past") {
    QueryBytes q;
    q.arcount = 1;
    q.after = opt_record();
    auto full = q.bytes();
    std::size_t question_end = full.size() - q.after.size();
    for (std::size_t n = 12; n < question_end + 1; ++n) {
        // A copy of exactly n bytes: ASan sees any read past it.
        auto r = refused(std::vector<std::uint8_t>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n)));
        CHECK(r.reason == dns_reason::malformed);
        CHECK(r.reply_id == 0x1234);
        CHECK(r.rcode == Rcode::formerr);
    }
}

TEST_CASE("a response (QR set) is never answered: two resolvers could loop") {
    QueryBytes q;
    q.flags = 0x8180;
    auto r = refused(q.bytes());
    CHECK(r.reason == dns_reason::malformed);
    CHECK_FALSE(r.reply_id.has_value());
}

TEST_CASE("an opcode other than QUERY gets NOTIMP") {
    QueryBytes q;
    q.flags = 0x0100 | (2 << 11);  // STATUS
    auto r = refused(q.bytes());
    CHECK(r.reason == dns_reason::not_supported);
    CHECK(r.rcode == Rcode::notimp);
    CHECK(r.reply_id == 0x1234);
}

TEST_CASE("header counts other than one question (and at most one OPT) are FORMERR") {
    QueryBytes q;
    q.qdcount = 0;
    CHECK(refused(q.bytes()).detail == "0 questions (exactly 1 allowed)");
    q.qdcount = 2;
    CHECK(refused(q.bytes()).rcode == Rcode::formerr);
    q = {};
    q.ancount = 1;
    CHECK(refused(q.bytes()).detail == "answer or authority records in a query");
    q = {};
    q.nscount = 1;
    CHECK(refused(q.bytes()).reason == dns_reason::malformed);
    q = {};
    q.arcount = 2;
    q.after = opt_record();
    CHECK(refused(q.bytes()).reason == dns_reason::malformed);
    q = {};
    q.flags = 0x0300;  // TC
    CHECK(refused(q.bytes()).detail == "a truncated query (TC set)");
}

TEST_CASE("labels: 63 bytes is the limit, longer length bytes are other label types, refused") {
    QueryBytes q;
    q.name = name_of_labels({63, 3});
    CHECK(parsed(q.bytes()).name.size() == 63 + 1 + 3);
    for (std::uint8_t len : {64, 0x7f, 0x80, 0xbf}) {
        q.name = {len};
        q.name.insert(q.name.end(), 200, 'a');
        q.name.push_back(0);
        auto r = refused(q.bytes());
        CHECK(r.reason == dns_reason::malformed);
        CHECK(r.detail.find("label length byte") != std::string::npos);
    }
}

TEST_CASE("a name of 255 bytes on the wire is accepted, 256 and more refused") {
    QueryBytes q;
    q.name = name_of_labels({63, 63, 63, 61});  // 64 * 3 + 62 + 1 = 255
    REQUIRE(q.name.size() == 255);
    CHECK(parsed(q.bytes()).name.size() == 253);
    q.name = name_of_labels({63, 63, 63, 62});  // 256
    CHECK(refused(q.bytes()).detail == "a name longer than 255 bytes on the wire");
    q.name = name_of_labels({63, 63, 63, 63, 63});
    CHECK(refused(q.bytes()).detail == "a name longer than 255 bytes on the wire");
}

TEST_CASE("a compression pointer in a query is refused, wherever it stands") {
    QueryBytes q;
    q.name = {0xc0, 0x0c};
    CHECK(refused(q.bytes()).detail.find("compression pointer") != std::string::npos);
    q.name = {3, 'a', 'p', 'i', 0xc0, 0x0c};
    CHECK(refused(q.bytes()).reason == dns_reason::malformed);
}

TEST_CASE("a '.' inside a label is refused: \"a.b\" as one label would read as two") {
    QueryBytes q;
    q.name = {3, 'a', '.', 'b', 3, 'c', 'o', 'm', 0};
    CHECK(refused(q.bytes()).detail.find("'.'") != std::string::npos);
}

TEST_CASE("bytes after the question need an additional record; an absent counted one is refused") {
    QueryBytes q;
    q.after = {0};
    CHECK(refused(q.bytes()).detail == "1 bytes after the question");
    q.after = {};
    q.arcount = 1;
    CHECK(refused(q.bytes()).detail == "an additional record counted but absent");
}

TEST_CASE("a datagram over 512 bytes is refused") {
    QueryBytes q;
    q.arcount = 1;
    q.after = opt_record();
    q.after.resize(600, 0);
    CHECK(refused(q.bytes()).detail == std::to_string(q.bytes().size()) + " bytes (a query is at most 512)");
}

TEST_CASE("an A answer: header, the question echoed, one record pointing at its name") {
    QueryBytes q;
    q.name = wire_name("Api.Example.com");
    auto p = parsed(q.bytes());
    auto r = reply_a(p, {198, 18, 0, 1});
    CHECK(read16(r, 0) == 0x1234);
    CHECK(read16(r, 2) == 0x8180);  // QR, RD copied, RA, NOERROR
    CHECK(read16(r, 4) == 1);
    CHECK(read16(r, 6) == 1);
    CHECK(read16(r, 8) == 0);
    CHECK(read16(r, 10) == 0);
    std::size_t at = 12 + p.question.size();
    CHECK(std::vector<std::uint8_t>(r.begin() + 12, r.begin() + static_cast<std::ptrdiff_t>(at)) == p.question);
    CHECK(read16(r, at) == 0xc00c);
    CHECK(read16(r, at + 2) == kTypeA);
    CHECK(read16(r, at + 4) == kClassIN);
    CHECK(read16(r, at + 6) == 0);
    CHECK(read16(r, at + 8) == kAnswerTtlSeconds);
    CHECK(read16(r, at + 10) == 4);
    CHECK(std::vector<std::uint8_t>(r.begin() + static_cast<std::ptrdiff_t>(at) + 12, r.end()) ==
          std::vector<std::uint8_t>{198, 18, 0, 1});
}

TEST_CASE("an AAAA answer carries 16 bytes; RD is copied as the query had it") {
    QueryBytes q;
    q.flags = 0;
    q.qtype = kTypeAAAA;
    auto p = parsed(q.bytes());
    std::array<std::uint8_t, 16> v6{0xfd, 0x63};
    auto r = reply_aaaa(p, v6);
    CHECK(read16(r, 2) == 0x8080);
    std::size_t at = 12 + p.question.size();
    CHECK(read16(r, at + 2) == kTypeAAAA);
    CHECK(read16(r, at + 10) == 16);
    CHECK(r.size() == at + 12 + 16);
}

TEST_CASE("replies without an answer: NXDOMAIN, NOERROR, REFUSED keep the question") {
    auto p = parsed(QueryBytes{}.bytes());
    for (auto rc : {Rcode::nxdomain, Rcode::noerror, Rcode::refused, Rcode::servfail}) {
        auto r = reply_without_answer(p, rc);
        CHECK((read16(r, 2) & 0xf) == static_cast<unsigned>(rc));
        CHECK(read16(r, 4) == 1);
        CHECK(read16(r, 6) == 0);
        CHECK(r.size() == 12 + p.question.size());
    }
}

TEST_CASE("FORMERR to a malformed query is a bare header with its id") {
    QueryBytes q;
    q.qdcount = 2;
    q.flags = 0x0100;
    auto r = reply_to_refusal(refused(q.bytes()));
    REQUIRE(r.size() == 12);
    CHECK(read16(r, 0) == 0x1234);
    CHECK(read16(r, 2) == (0x8180 | 1));
    CHECK(read16(r, 4) == 0);
}
