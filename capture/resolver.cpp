#include "capture/resolver.hpp"

#include <arpa/inet.h>

#include <array>
#include <optional>
#include <variant>

#include "capture/dns_message.hpp"
#include "names/box_hosts.hpp"

namespace corral::capture {
namespace {

Resolution answered(std::vector<std::uint8_t> reply, const DnsQuery& q, std::string name) {
    return {std::move(reply), resolve_reason::answered, {}, std::move(name), q.qtype};
}

Resolution refused(std::vector<std::uint8_t> reply, std::string_view reason, std::string detail, const DnsQuery& q,
                   std::string name) {
    return {std::move(reply), reason, std::move(detail), std::move(name), q.qtype};
}

// The box's /etc/hosts names (names/box_hosts.hpp): nullopt when `host` is
// none of them; otherwise the reply, with the addresses of the asked type
// (NOERROR without an answer when the name has none of that type).
std::optional<std::vector<std::uint8_t>> box_hosts_reply(const DnsQuery& q, const names::HostName& host,
                                                         const ResolverContext& ctx) {
    bool known = false;
    for (const auto& line : names::box_hosts(ctx.hostname)) {
        bool listed = false;
        for (const auto& n : line.names) {
            auto c = names::normalize_host(n);
            if (c.host && *c.host == host) listed = true;
        }
        if (!listed) continue;
        known = true;
        std::array<std::uint8_t, 4> v4{};
        std::array<std::uint8_t, 16> v6{};
        if (q.qtype == kTypeA && ::inet_pton(AF_INET, line.address.c_str(), v4.data()) == 1) return reply_a(q, v4);
        if (q.qtype == kTypeAAAA && ctx.ipv6 && ::inet_pton(AF_INET6, line.address.c_str(), v6.data()) == 1)
            return reply_aaaa(q, v6);
    }
    if (!known) return std::nullopt;
    return reply_without_answer(q, Rcode::noerror);
}

Resolution granted_reply(const DnsQuery& q, const names::HostName& host, const ResolverContext& ctx,
                         SyntheticAddresses& addresses) {
    bool wants_address = q.qtype == kTypeA || (q.qtype == kTypeAAAA && ctx.ipv6);
    if (!wants_address) return answered(reply_without_answer(q, Rcode::noerror), q, host.text());
    auto a = addresses.assign(host);
    if (!a)
        return refused(reply_without_answer(q, Rcode::refused), resolve_reason::exhausted,
                       "this run has given synthetic addresses to " + std::to_string(addresses.limit()) +
                           " names, its limit; " + host.text() + " gets none",
                       q, host.text());
    return answered(q.qtype == kTypeA ? reply_a(q, a->v4) : reply_aaaa(q, a->v6), q, host.text());
}

}  // namespace

Resolution resolve(std::span<const std::uint8_t> message, const ResolverContext& ctx, SyntheticAddresses& addresses) {
    auto parsed = parse_query(message);
    if (auto* r = std::get_if<MessageRefusal>(&parsed)) return {reply_to_refusal(*r), r->reason, r->detail, {}, 0};
    const auto& q = std::get<DnsQuery>(parsed);
    if (q.qclass != kClassIN)
        return refused(reply_without_answer(q, Rcode::refused), dns_reason::not_supported,
                       "class " + std::to_string(q.qclass) + " (only IN, 1)", q, q.name);
    auto check = names::normalize_host(q.name);
    // The Resolution's reason is a view: one of this file's constants, never
    // check.reason's string, which ends with this function (the host rule's
    // codes are these two).
    if (!check.host)
        return refused(reply_without_answer(q, Rcode::nxdomain),
                       check.reason == resolve_reason::numeric_host ? resolve_reason::numeric_host
                                                                    : resolve_reason::bad_host,
                       "not a host name corral accepts", q, q.name);
    const auto& host = *check.host;
    if (host.is_ip_literal())
        return refused(reply_without_answer(q, Rcode::nxdomain), resolve_reason::numeric_host,
                       "an IP address asked as a name", q, host.text());
    if (auto local = box_hosts_reply(q, host, ctx)) return answered(std::move(*local), q, host.text());
    if (!ctx.granted || !ctx.granted(host))
        return refused(reply_without_answer(q, Rcode::nxdomain), resolve_reason::not_granted,
                       "no grant of this run names " + host.text() + " on any port", q, host.text());
    return granted_reply(q, host, ctx, addresses);
}

}  // namespace corral::capture
