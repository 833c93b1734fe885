#include "capture/dns_message.hpp"

#include <utility>

namespace corral::capture {
namespace {

constexpr std::size_t kHeaderBytes = 12;
constexpr std::uint16_t kFlagQr = 0x8000;
constexpr std::uint16_t kFlagTc = 0x0200;
constexpr std::uint16_t kFlagRd = 0x0100;
constexpr std::uint16_t kFlagRa = 0x0080;

std::uint16_t read16(std::span<const std::uint8_t> m, std::size_t at) {
    return static_cast<std::uint16_t>((m[at] << 8) | m[at + 1]);
}

void put16(std::vector<std::uint8_t>& out, std::uint16_t v) {
    out.push_back(static_cast<std::uint8_t>(v >> 8));
    out.push_back(static_cast<std::uint8_t>(v & 0xff));
}

struct Header {
    std::uint16_t id, flags, qdcount, ancount, nscount, arcount;
};

MessageRefusal malformed(std::string detail, const Header& h) {
    return {dns_reason::malformed, std::move(detail), h.id, (h.flags & kFlagRd) != 0, Rcode::formerr};
}

// The header's checks, in the order a reader meets them. nullopt = a query
// whose question may follow.
std::optional<MessageRefusal> check_header(const Header& h) {
    if (h.flags & kFlagQr) return MessageRefusal{dns_reason::malformed, "a response (QR set), not a query", {}, false};
    auto opcode = (h.flags >> 11) & 0xf;
    if (opcode != 0)
        return MessageRefusal{dns_reason::not_supported, "opcode " + std::to_string(opcode) + " (only QUERY, 0)",
                              h.id, (h.flags & kFlagRd) != 0, Rcode::notimp};
    if (h.flags & kFlagTc) return malformed("a truncated query (TC set)", h);
    if (h.qdcount != 1) return malformed(std::to_string(h.qdcount) + " questions (exactly 1 allowed)", h);
    if (h.ancount != 0 || h.nscount != 0) return malformed("answer or authority records in a query", h);
    if (h.arcount > 1)
        return malformed(std::to_string(h.arcount) + " additional records (at most 1, an EDNS OPT)", h);
    return std::nullopt;
}

// Reads the question's name from `at`; on success `at` is just past its
// root label. Never reads at or beyond m.size().
std::optional<std::string> read_name(std::span<const std::uint8_t> m, std::size_t& at, std::string& problem) {
    std::string name;
    std::size_t start = at;
    for (;;) {
        if (at >= m.size()) {
            problem = "the question's name runs past the end of the message";
            return std::nullopt;
        }
        std::uint8_t len = m[at];
        if ((len & 0xc0) == 0xc0) {
            problem = "a compression pointer in the question (a query has nothing to point to)";
            return std::nullopt;
        }
        if (len > kMaxLabelBytes) {
            problem = "a label length byte of " + std::to_string(len) + " (labels are 1 to 63 bytes)";
            return std::nullopt;
        }
        if (at - start + 1 + len > kMaxNameWireBytes) {
            problem = "a name longer than 255 bytes on the wire";
            return std::nullopt;
        }
        ++at;
        if (len == 0) return name;
        if (m.size() - at < len) {
            problem = "a label runs past the end of the message";
            return std::nullopt;
        }
        if (!name.empty()) name.push_back('.');
        for (std::size_t i = 0; i < len; ++i) {
            char c = static_cast<char>(m[at + i]);
            if (c == '.') {
                problem = "a label containing '.' (it would read as two labels)";
                return std::nullopt;
            }
            name.push_back(c);
        }
        at += len;
    }
}

std::vector<std::uint8_t> header_for(std::uint16_t id, bool rd, Rcode rcode, std::uint16_t qdcount,
                                     std::uint16_t ancount) {
    std::vector<std::uint8_t> out;
    out.reserve(kMaxQueryBytes);
    put16(out, id);
    put16(out, static_cast<std::uint16_t>(kFlagQr | (rd ? kFlagRd : 0) | kFlagRa | static_cast<std::uint16_t>(rcode)));
    put16(out, qdcount);
    put16(out, ancount);
    put16(out, 0);
    put16(out, 0);
    return out;
}

std::vector<std::uint8_t> reply_with(const DnsQuery& q, std::uint16_t type, std::span<const std::uint8_t> rdata) {
    auto out = header_for(q.id, q.recursion_desired, Rcode::noerror, 1, 1);
    out.insert(out.end(), q.question.begin(), q.question.end());
    put16(out, 0xc000 | kHeaderBytes);  // the name: a pointer to the question's
    put16(out, type);
    put16(out, kClassIN);
    put16(out, static_cast<std::uint16_t>(kAnswerTtlSeconds >> 16));
    put16(out, static_cast<std::uint16_t>(kAnswerTtlSeconds & 0xffff));
    put16(out, static_cast<std::uint16_t>(rdata.size()));
    out.insert(out.end(), rdata.begin(), rdata.end());
    return out;
}

}  // namespace

std::variant<DnsQuery, MessageRefusal> parse_query(std::span<const std::uint8_t> m) {
    if (m.size() < kHeaderBytes)
        return MessageRefusal{dns_reason::malformed, std::to_string(m.size()) + " bytes (a header is 12)", {}, false};
    Header h{read16(m, 0), read16(m, 2), read16(m, 4), read16(m, 6), read16(m, 8), read16(m, 10)};
    if (auto refused = check_header(h)) return *refused;
    if (m.size() > kMaxQueryBytes)
        return malformed(std::to_string(m.size()) + " bytes (a query is at most 512)", h);
    std::size_t at = kHeaderBytes;
    std::string problem;
    auto name = read_name(m, at, problem);
    if (!name) return malformed(problem, h);
    if (m.size() - at < 4) return malformed("the question's type and class run past the end of the message", h);
    DnsQuery q;
    q.id = h.id;
    q.recursion_desired = (h.flags & kFlagRd) != 0;
    q.name = std::move(*name);
    q.qtype = read16(m, at);
    q.qclass = read16(m, at + 2);
    at += 4;
    q.question.assign(m.begin() + kHeaderBytes, m.begin() + static_cast<std::ptrdiff_t>(at));
    if (h.arcount == 0 && at != m.size())
        return malformed(std::to_string(m.size() - at) + " bytes after the question", h);
    if (h.arcount == 1 && at == m.size()) return malformed("an additional record counted but absent", h);
    return q;
}

std::vector<std::uint8_t> reply_a(const DnsQuery& q, const std::array<std::uint8_t, 4>& address) {
    return reply_with(q, kTypeA, address);
}

std::vector<std::uint8_t> reply_aaaa(const DnsQuery& q, const std::array<std::uint8_t, 16>& address) {
    return reply_with(q, kTypeAAAA, address);
}

std::vector<std::uint8_t> reply_without_answer(const DnsQuery& q, Rcode rcode) {
    auto out = header_for(q.id, q.recursion_desired, rcode, 1, 0);
    out.insert(out.end(), q.question.begin(), q.question.end());
    return out;
}

std::vector<std::uint8_t> reply_to_refusal(const MessageRefusal& r) {
    if (!r.reply_id) return {};
    return header_for(*r.reply_id, r.recursion_desired, r.rcode, 0, 0);
}

}  // namespace corral::capture
