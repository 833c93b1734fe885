// gateway/host.hpp — host names as the gateway compares them.
//
// Everything a client names (CONNECT authority, Host header, SNI, absolute-form
// URL host) goes through normalize_host() before any grant is looked up, so a
// grant for "api.example.com" cannot be dodged with "API.Example.com.",
// "[api.example.com]" or an inet_aton-style numeric spelling of an address.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/ip/address.hpp>

namespace corral::gateway {

struct HostName {
    // Normalised: ASCII lowercase, no trailing dot, no brackets. For IP
    // literals the canonical text of boost::asio::ip::address::to_string()
    // ("127.0.0.1", "::1", "::ffff:127.0.0.1").
    std::string text;
    bool is_ip_literal = false;
};

// host set on success; otherwise reason is a ledger reason code:
//   "bad_host"     empty, > 253 chars, a label empty or > 63 chars or starting/
//                  ending with '-', a character outside [a-z0-9-_.] (so IDN must
//                  arrive as punycode "xn--..."), %-escapes, unbalanced brackets,
//                  brackets around a non-IPv6 text.            → 400
//   "numeric_host" a name whose last label is a number (decimal, 0-octal or 0x-hex)
//                  but which is not a canonical dotted quad: "2130706433",
//                  "0x7f.1", "0177.0.0.1", "127.1", "017700000001", "0x7f000001",
//                  "127.000.0.1"; IPv6 literals with a zone id ("fe80::1%eth0",
//                  "fe80::1%25eth0").                           → 403
// Canonical dotted quads ("127.0.0.1") and IPv6 literals ("::1", "[::1]")
// succeed with is_ip_literal = true: the caller refuses them unless a grant
// names that exact address (find_grant compares normalised texts).
struct HostCheck {
    std::optional<HostName> host;
    std::string reason;
};
HostCheck normalize_host(std::string_view raw);

// A CONNECT authority / Host header value split and normalised:
// "host:port", "[v6]:port", or (when default_port is given) "host" / "[v6]".
// A bare IPv6 without brackets is refused (ambiguous with the port).
// Port must be 1..65535 in plain decimal without leading '+' or zeros-only.
// reason as for normalize_host, or "bad_request" for a missing/invalid port.
struct Authority {
    HostName host;
    std::uint16_t port = 0;
};
struct AuthorityCheck {
    std::optional<Authority> authority;
    std::string reason;
};
AuthorityCheck split_authority(std::string_view raw, std::optional<std::uint16_t> default_port = std::nullopt);

// The gateway's own name table ([gateway].hosts_file), consulted before DNS.
// /etc/hosts format: "ADDRESS NAME [NAME...]", '#' comments, blank lines.
// Several lines for one name add answers (that is how tests build mixed answers).
// Names are normalised with normalize_host. Throws config::ConfigError
// "FILE:LINE: ..." for an unreadable file, a bad address or a bad name.
using HostsTable = std::map<std::string, std::vector<boost::asio::ip::address>>;
HostsTable load_hosts_file(const std::string& path);

}  // namespace corral::gateway
