// capture/resolver.hpp — what the box's DNS stub answers, decided without
// I/O: one datagram in, the reply bytes and a reason out.
//
//   a name a grant of the run covers (on any port) -> its synthetic address
//       (A from 198.18.0.0/15, AAAA from the ULA /64 when the box has IPv6),
//       NOERROR without an answer for any other type;
//   localhost, ip6-localhost, ip6-loopback and the box's hostname -> the
//       box's /etc/hosts addresses (names/box_hosts.hpp), nothing else;
//   every other name -> NXDOMAIN at once, reason not_granted;
//   a malformed query -> FORMERR (or nothing, see capture/dns_message.hpp).
//
// No query is ever forwarded: the gateway resolves the real name on the host
// side when the captured connection is handed to it as a CONNECT.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "capture/synthetic_addresses.hpp"
#include "names/host.hpp"

namespace corral::capture {

// "Does a grant of this run name this host, on any port?" The caller binds
// the gateway's own rule (gateway::granted_ports, which is find_grant's
// matching on every port) to the run's grants and identity, so DNS and the
// gateway can never disagree on what a grant covers.
using GrantedHost = std::function<bool(const names::HostName&)>;

struct ResolverContext {
    GrantedHost granted;
    std::string hostname;  // the box's; "" = none
    bool ipv6 = true;      // false: the box has no IPv6 (AAAA gets NOERROR, no answer)
};

// Reason codes of Resolution (the empty one: answered as asked). not_granted,
// bad_host and numeric_host are the gateway's codes for the same verdicts on
// a CONNECT (gateway/refusal.hpp), so a name refused at DNS and the same
// name refused at the proxy read alike in the ledger.
namespace resolve_reason {
inline constexpr std::string_view answered = "";
inline constexpr std::string_view not_granted = "not_granted";
inline constexpr std::string_view bad_host = "bad_host";
inline constexpr std::string_view numeric_host = "numeric_host";
inline constexpr std::string_view exhausted = "synthetic_addresses_exhausted";
// dns_malformed and dns_not_supported: capture/dns_message.hpp's dns_reason.
}  // namespace resolve_reason

struct Resolution {
    std::vector<std::uint8_t> reply;  // empty: send nothing
    std::string_view reason;          // resolve_reason or dns_reason; "" when answered
    std::string detail;               // one line for the ledger when reason is set
    std::string name;                 // the name asked (normalised when it could be), for the ledger
    std::uint16_t qtype = 0;
};

// Answers one datagram from the box. Assigns a synthetic address (in
// `addresses`) to a granted name asked for A or AAAA.
Resolution resolve(std::span<const std::uint8_t> message, const ResolverContext& ctx, SyntheticAddresses& addresses);

}  // namespace corral::capture
