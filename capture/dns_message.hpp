// capture/dns_message.hpp — the DNS wire format, as much of it as the box's
// stub resolver needs: one query in (RFC 1035 §4.1), one reply out.
//
// A query comes from the box, so every byte is untrusted: the parser reads
// only within the buffer it is given, accepts exactly one question with an
// uncompressed name, and says why it refused anything else. Replies are
// built only from a parsed query (the question is echoed byte for byte, the
// case of the name included: resolvers that randomise it, "0x20" style,
// compare it) or, for a malformed query, from its header's id.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace corral::capture {

// The largest query accepted: RFC 1035's UDP limit. A query is a header (12),
// one question (a name of at most 255 + type and class, 4) and at most one
// EDNS OPT record (RFC 6891), well under it; anything larger is not a query
// a resolver library sends.
inline constexpr std::size_t kMaxQueryBytes = 512;
// A name on the wire, length bytes and the root's 0 included (RFC 1035 §2.3.4).
inline constexpr std::size_t kMaxNameWireBytes = 255;
inline constexpr std::size_t kMaxLabelBytes = 63;

inline constexpr std::uint16_t kTypeA = 1;
inline constexpr std::uint16_t kTypeAAAA = 28;
inline constexpr std::uint16_t kClassIN = 1;

enum class Rcode : std::uint8_t { noerror = 0, formerr = 1, servfail = 2, nxdomain = 3, notimp = 4, refused = 5 };

struct DnsQuery {
    std::uint16_t id = 0;
    bool recursion_desired = false;
    // The name's labels joined with '.', as sent (case kept, no trailing
    // dot; "" for the root). A label never contains '.' (refused).
    std::string name;
    std::uint16_t qtype = 0;
    std::uint16_t qclass = 0;
    // The question section exactly as received (name, type, class), echoed
    // in every reply to this query.
    std::vector<std::uint8_t> question;
};

// Why a message is not a query this stub answers. `reason` is a ledger
// reason code (dns_malformed, dns_not_supported), `detail` names what was
// wrong. `reply_id` is set when the header was readable and the message was
// a query: then it gets `rcode` (FORMERR or NOTIMP) in a header-only reply;
// otherwise nothing is sent (a fragment, or a response: answering a
// response could loop two resolvers at each other).
struct MessageRefusal {
    std::string_view reason;
    std::string detail;
    std::optional<std::uint16_t> reply_id;
    bool recursion_desired = false;
    Rcode rcode = Rcode::formerr;
};

namespace dns_reason {
inline constexpr std::string_view malformed = "dns_malformed";
inline constexpr std::string_view not_supported = "dns_not_supported";
}  // namespace dns_reason

// Parses one UDP datagram from the box. Accepted: QR = 0, opcode QUERY,
// TC = 0, QDCOUNT = 1, ANCOUNT = NSCOUNT = 0, ARCOUNT 0 or 1 (an EDNS OPT
// record, which is skipped unread: replies carry no OPT, which RFC 6891 §7
// lets a client read as "this server speaks plain DNS"); a name of labels
// of 1..63 bytes, none containing '.', at most 255 bytes on the wire, with no
// compression pointer (a query has nothing earlier to point to) and no
// extended label type; nothing after the question unless ARCOUNT is 1.
// The question's type and class are not judged here (the resolver answers
// them).
std::variant<DnsQuery, MessageRefusal> parse_query(std::span<const std::uint8_t> message);

// The TTL of every answer: the synthetic address of a name is stable for
// the whole run, so it only bounds how long a cache inside the box keeps
// asking nothing (docs/capture.md "TTL").
inline constexpr std::uint32_t kAnswerTtlSeconds = 5;

// Replies to a parsed query: header (id, QR, opcode QUERY, RD copied, RA),
// the question echoed, and the answer if any (name as a pointer to the
// question's, class IN, kAnswerTtlSeconds).
std::vector<std::uint8_t> reply_a(const DnsQuery& q, const std::array<std::uint8_t, 4>& address);
std::vector<std::uint8_t> reply_aaaa(const DnsQuery& q, const std::array<std::uint8_t, 16>& address);
// No answer record: NOERROR (the name exists, not with this type), NXDOMAIN,
// REFUSED, SERVFAIL.
std::vector<std::uint8_t> reply_without_answer(const DnsQuery& q, Rcode rcode);
// A header-only reply to a refused message that has a reply_id (FORMERR, NOTIMP).
std::vector<std::uint8_t> reply_to_refusal(const MessageRefusal& r);

}  // namespace corral::capture
