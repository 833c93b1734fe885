// gateway/grants.hpp — is this identity allowed to reach this host:port, this
// route, these addresses? Pure decisions, no I/O; the serving side calls them
// in this order: normalize_host → find_grant → (resolve, or connect_to) →
// vet_addresses → dial the vetted numbers; inside an inject tunnel, per request:
// canonical_route_path → route_allowed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "config/gateway_config.hpp"
#include "gateway/host.hpp"
#include "gateway/identity.hpp"
#include "gateway/refusal.hpp"

namespace corral::gateway {

// The grant that lets `id` reach host:port, or nullptr (→ 403 "not_granted").
// Matching:
//  - port must equal grant.port;
//  - identity scope: empty `identities` = everyone; a pattern without '/' is a
//    glob (fnmatch) on the worker name, a pattern with '/' a glob on "worker/run";
//  - host: names::HostPattern::match_score, on texts both normalised once (the
//    grant's at load, the request's as it arrived): an exact grant matches the
//    same text (IP literals compare canonical texts, so "[::1]" and "::1" are
//    one); "*.example.com" matches any name ending in ".example.com" with at
//    least one more label — NOT the apex "example.com" (grant the apex
//    separately) and never an IP literal.
// Preference: an exact grant beats a wildcard; a longer wildcard suffix beats a
// shorter one; ties go to the grant written first.
const config::Grant* find_grant(const config::GatewayConfig& cfg, const Identity& id, const HostName& host,
                                std::uint16_t port);

// The ports on which find_grant finds a grant for `id` and `host` (its rule,
// on every port), ascending, each once; empty when none. Transparent capture
// (docs/capture.md) asks it twice: its DNS stub gives a synthetic address
// only to a name with a port here, and a run holds captured listeners on
// exactly these ports, so DNS, the listeners and the gateway's CONNECT check
// read one rule.
std::vector<std::uint16_t> granted_ports(const config::GatewayConfig& cfg, const Identity& id, const HostName& host);

// Under `corral run --ask` (GatewaySettings::ask_unlisted): the grant a
// host:port no grant names gets, which asks a person first. A tunnel (the
// gateway injects nothing and sees no plaintext), for this exact host and
// port, waiting up to the default approval_timeout. A name must resolve to
// public addresses only; an IP literal is the address the person approves
// (the consent --allow ADDRESS gives).
config::Grant asked_grant(const HostName& host, std::uint16_t port);

// The ports transparent capture listens on for a name of `id`'s run with the
// embedded gateway: granted_ports, and under --ask also kAskedCapturePorts
// (a connection there is asked, as an unlisted CONNECT is) and `always`, the
// ports a person made grants of with `corral approve --always` (they join
// at the name's next query, the run's listeners grow to them).
inline constexpr std::uint16_t kAskedCapturePorts[] = {80, 443};
std::vector<std::uint16_t> capture_ports(const config::GatewayConfig& cfg, const Identity& id, const HostName& host,
                                         const std::vector<std::uint16_t>& always);

// Normalises a request target for route matching. The gateway itself matches
// routes only on canonical paths (canonical_route_path, below), which this
// leaves unchanged. Accepts origin-form ("/a/b?q"); the query and any
// fragment are dropped; %XX escapes are decoded once (hex case-insensitive, so
// %2e/%2E → '.', %2f/%2F → '/'); ";params" are cut from each segment (so
// "..;" counts as ".."); empty segments ("//") collapse; "." segments vanish;
// ".." removes the previous segment. A trailing '/' is kept.
// Returns nullopt when the target does not start with '/', has a malformed %-escape, decodes to a control
// character, '\\' or another '%' (double encoding), or ".." would climb above "/".
// The caller answers 400 with reason "bad_path".
std::optional<std::string> normalize_route_path(std::string_view target);

// The path part of a request target (everything before the first '?') when it
// is already canonical, else the refusal: 400 "non_canonical_path", its detail
// naming the rule broken. Canonical means normalize_route_path would return it unchanged, so
// the path the routes are checked against is byte for byte the path the
// upstream receives (an upstream that resolves "..", ";", "%2f" or "\\"
// differently from the gateway cannot be steered around a route). Refused:
// a target not starting with '/', '#', '\\', ';', control characters, "//",
// a "." or ".." segment, %2e / %2f / %5c in any case, and any other %-escape
// (the normaliser would decode it). The query is not looked at. Allocates
// only to refuse.
std::variant<std::string_view, Refusal> canonical_route_path(std::string_view target);

// True when `grant.routes` is empty or one route matches: method equal (or the
// route's method is "*") and path equal, or for a prefix route ("…/*") the path
// starts with the route's path (which ends in '/'). Expects a path from
// normalize_route_path. false → 403 "route_denied".
bool route_allowed(const config::Grant& grant, std::string_view method, std::string_view normalized_path);

// What the gateway itself listens on / runs on, so it never dials itself.
// Ports matter: a list of own addresses without ports would not do, since
// a loopback test upstream and the gateway's loopback listener share 127.0.0.1,
// so a port-blind check would refuse every allow_private test upstream. Hence:
struct SelfAddresses {
    // The gateway's listening TCP endpoints (after bind, real port). An answer
    // is refused when its port equals a listening port and the addresses are
    // equal, or either is unspecified, or both are loopback.
    std::vector<boost::asio::ip::tcp::endpoint> listening;
    // Addresses of the host's own interfaces (getifaddrs). A PUBLIC one among
    // the answers is refused on any port (reaching the host's own services is
    // SSRF even via a public address); special-purpose ones follow allow_private.
    std::vector<boost::asio::ip::address> host_addresses;
};

// The full pre-connection decision for one target given its resolved answers
// (or the connect_to address) and the port that will be dialled:
//  - no answers                                     → "dns_failure"      (502)
//  - answers mix public and special-purpose classes → "mixed_answers"    (403), always, even with allow_private
//  - a special-purpose answer without allow_private → "private_address"  (403)
//  - an answer that is the gateway itself (above)   → "gateway_self"     (403), always
// IPv4-mapped answers are compared to self addresses by their IPv4 part.
// On success `usable` holds the answers in order (all of them: the dialler may
// try each), and reason is "".
struct AddressDecision {
    bool allowed = false;
    std::string reason;
    std::vector<boost::asio::ip::address> usable;
};
AddressDecision vet_addresses(const config::Grant& grant, std::uint16_t port,
                              const std::vector<boost::asio::ip::address>& answers, const SelfAddresses& self);

}  // namespace corral::gateway
