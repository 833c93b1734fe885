// names/host.hpp — host names, the one rule for both sides of a grant.
//
// A grant's host (config, at load) and everything a client names (CONNECT
// authority, Host header, SNI, absolute-form URL host: the gateway, once per
// request) go through normalize_host(), so a grant for "api.example.com"
// cannot be dodged with "API.Example.com.", "[api.example.com]" or an
// inet_aton-style numeric spelling of an address, and a grant the config
// accepts names exactly the texts the gateway compares it with.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace corral::names {

// Every character a normalised host's text can contain (a name's labels, an
// IP literal's digits, dots and colons). A certificate minted for a host is
// checked against it: a name normalize_host accepts must be mintable.
inline constexpr std::string_view normalised_host_chars = "abcdefghijklmnopqrstuvwxyz0123456789.-_:";

struct HostCheck;

// A normalised host: ASCII lowercase, no trailing dot, no brackets. For IP
// literals the canonical text of inet_ntop ("127.0.0.1", "::1",
// "::ffff:127.0.0.1"). Only normalize_host makes one, so holding a HostName
// means the text was checked and two spellings of one host compare equal.
class HostName {
public:
    const std::string& text() const { return text_; }
    bool is_ip_literal() const { return ip_literal_; }
    friend bool operator==(const HostName&, const HostName&) = default;

private:
    HostName(std::string text, bool ip_literal) : text_(std::move(text)), ip_literal_(ip_literal) {}
    friend HostCheck normalize_host(std::string_view raw);
    std::string text_;
    bool ip_literal_ = false;
};

// host set on success; otherwise reason is a ledger reason code:
//   "bad_host"     empty, > 253 chars, a label empty or > 63 chars or starting/
//                  ending with '-', a character outside [a-z0-9-_.] (so IDN must
//                  arrive as punycode "xn--..."), %-escapes, unbalanced brackets,
//                  brackets around a non-IPv6 text.            → 400
//   "numeric_host" a name that ends in a number but is not a canonical dotted
//                  quad: "2130706433", "0x7f.1", "0177.0.0.1", "127.1",
//                  "017700000001", "0x7f000001", "127.000.0.1", "a.0x"; IPv6
//                  literals with a zone id ("fe80::1%eth0", "fe80::1%25eth0"). → 403
// "Ends in a number" is the WHATWG URL rule (the one inet_aton and browsers
// follow): the last label is all digits, or "0x" followed by hex digits only
// (none at all counts: "0x" is 0). "x.0xz" and "x.0x1g" are therefore names:
// no resolver reads them as an address (docs/gateway.md, Host names).
// Canonical dotted quads ("127.0.0.1") and IPv6 literals ("::1", "[::1]")
// succeed with is_ip_literal(): the gateway refuses them unless a grant names
// that exact address.
struct HostCheck {
    std::optional<HostName> host;
    std::string reason;
};
HostCheck normalize_host(std::string_view raw);

// A grant's host: an exact HostName, or "*." followed by a name of at least
// two labels (never an IP literal). Only parse_host_pattern makes a non-empty
// one; a default-constructed pattern matches nothing.
class HostPattern {
public:
    HostPattern() = default;
    // "*.example.com" or the exact name's normalised text; "" when empty.
    const std::string& text() const { return text_; }
    bool is_wildcard() const { return wildcard_; }
    // 0 = no match; otherwise a score: an exact pattern beats every wildcard,
    // a longer wildcard suffix beats a shorter one. "*.example.com" matches
    // any name ending in ".example.com" with at least one more label, NOT the
    // apex "example.com" and never an IP literal.
    std::size_t match_score(const HostName& host) const;
    friend bool operator==(const HostPattern&, const HostPattern&) = default;
    // Compares the normalised text ("*.github.com", "::1").
    friend bool operator==(const HostPattern& p, std::string_view text) { return p.text_ == text; }

private:
    friend std::optional<HostPattern> parse_host_pattern(std::string_view raw);
    std::string text_;
    bool wildcard_ = false;
};

// nullopt when `raw` is neither a host normalize_host accepts nor "*." + a
// name of two labels or more ("*.com" would grant a whole top-level domain).
std::optional<HostPattern> parse_host_pattern(std::string_view raw);

// For host texts written into corral's own code (the grants an agent
// implies): throws std::logic_error when the text is not a valid pattern.
HostPattern builtin_host_pattern(std::string_view text);

// A "host:port" split and normalised: "host:port", "[v6]:port", or (when
// default_port is given) "host" / "[v6]". A bare IPv6 without brackets is
// refused (ambiguous with the port). The port is plain decimal without a
// sign or leading zeros, 1..65535 (or 0 when PortZero::allowed: a listener
// asking for any free port). reason as for normalize_host, or "bad_request"
// for a missing or invalid port.
struct Authority {
    HostName host;
    std::uint16_t port = 0;
};
struct AuthorityCheck {
    std::optional<Authority> authority;
    std::string reason;
};
enum class PortZero { refused, allowed };
AuthorityCheck split_authority(std::string_view raw, std::optional<std::uint16_t> default_port = std::nullopt,
                               PortZero zero = PortZero::refused);

}  // namespace corral::names
