#include "gateway/grants.hpp"

#include <algorithm>

#include "gateway/address_class.hpp"

namespace corral::gateway {
namespace {

bool identity_in_scope(const config::Grant& g, const Identity& id) {
    if (g.identities.empty()) return true;
    for (const auto& pattern : g.identities)
        if (names::identity_pattern_matches(pattern, id)) return true;
    return false;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// 0 when grant `g` does not let `id` reach `host` on its port; otherwise
// the host pattern's score (an exact grant beats any wildcard).
std::size_t grant_score(const config::Grant& g, const Identity& id, const HostName& host) {
    if (!identity_in_scope(g, id)) return 0;
    return g.host.match_score(host);
}

}  // namespace

const config::Grant* find_grant(const config::GatewayConfig& cfg, const Identity& id, const HostName& host,
                                std::uint16_t port) {
    const config::Grant* best = nullptr;
    std::size_t best_score = 0;
    for (const auto& g : cfg.grants) {
        if (g.port != port) continue;
        std::size_t score = grant_score(g, id, host);
        if (score > best_score) {
            best = &g;
            best_score = score;
        }
    }
    return best;
}

std::vector<std::uint16_t> granted_ports(const config::GatewayConfig& cfg, const Identity& id, const HostName& host) {
    std::vector<std::uint16_t> ports;
    for (const auto& g : cfg.grants)
        if (grant_score(g, id, host) != 0) ports.push_back(g.port);
    std::sort(ports.begin(), ports.end());
    ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
    return ports;
}

std::vector<std::uint16_t> capture_ports(const config::GatewayConfig& cfg, const Identity& id, const HostName& host,
                                         const std::vector<std::uint16_t>& always) {
    std::vector<std::uint16_t> ports = granted_ports(cfg, id, host);
    if (!cfg.gateway.ask_unlisted) return ports;
    ports.insert(ports.end(), std::begin(kAskedCapturePorts), std::end(kAskedCapturePorts));
    ports.insert(ports.end(), always.begin(), always.end());
    std::sort(ports.begin(), ports.end());
    ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
    return ports;
}

config::Grant asked_grant(const HostName& host, std::uint16_t port) {
    config::Grant g;
    // The pattern only names the grant in the ledger: this one is never
    // looked up again (each unlisted request asks anew, or finds --always).
    if (auto pattern = names::parse_host_pattern(host.text())) g.host = *pattern;
    g.port = port;
    g.mode = config::GrantMode::tunnel;
    // The person approves the exact text the box asked for: an IP literal is
    // that address by consent (as --allow ADDRESS gives allow_private); a
    // name must still resolve to public addresses only.
    g.allow_private = host.is_ip_literal();
    g.approval = true;
    g.where = "--ask";
    return g;
}

std::optional<std::string> normalize_route_path(std::string_view target) {
    auto refuse = []() -> std::optional<std::string> { return std::nullopt; };
    if (target.empty() || target.front() != '/') return refuse();
    if (auto end = target.find_first_of("?#"); end != std::string_view::npos) target = target.substr(0, end);

    std::string decoded;
    decoded.reserve(target.size());
    for (std::size_t i = 0; i < target.size(); ++i) {
        char c = target[i];
        if (c == '%') {
            if (i + 2 >= target.size()) return refuse();
            int hi = hex_value(target[i + 1]);
            int lo = hex_value(target[i + 2]);
            if (hi < 0 || lo < 0) return refuse();
            c = static_cast<char>(hi * 16 + lo);
            i += 2;
            if (c == '%') return refuse();  // double encoding: some upstream may decode again
        }
        auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f || c == '\\') return refuse();
        decoded.push_back(c);
    }

    std::vector<std::string_view> segments;
    std::size_t pos = 1;
    bool trailing_slash = false;
    while (pos <= decoded.size()) {
        auto slash = decoded.find('/', pos);
        std::string_view seg(decoded.data() + pos, (slash == std::string::npos ? decoded.size() : slash) - pos);
        if (auto semi = seg.find(';'); semi != std::string_view::npos) seg = seg.substr(0, semi);
        bool last = slash == std::string::npos;
        if (seg.empty() || seg == ".") {
            if (last) trailing_slash = true;
        } else if (seg == "..") {
            if (segments.empty()) return refuse();
            segments.pop_back();
            if (last) trailing_slash = true;
        } else {
            segments.push_back(seg);
            trailing_slash = false;
        }
        if (last) break;
        pos = slash + 1;
    }
    std::string out;
    for (auto seg : segments) {
        out += '/';
        out += seg;
    }
    if (out.empty() || trailing_slash) out += '/';
    return out;
}

std::variant<std::string_view, Refusal> canonical_route_path(std::string_view target) {
    auto refuse = [](std::string_view what) -> std::variant<std::string_view, Refusal> {
        return Refusal{std::string(reason::non_canonical_path), "request path is not canonical: " + std::string(what)};
    };
    if (target.empty() || target.front() != '/') return refuse("the path does not start with '/'");
    std::string_view path = target.substr(0, target.find('?'));
    for (std::size_t i = 0; i < path.size(); ++i) {
        char c = path[i];
        auto u = static_cast<unsigned char>(c);
        if (c == '#') return refuse("'#' in the path");
        if (c == '\\') return refuse("'\\' in the path");
        if (c == ';') return refuse("';' in the path");
        if (u < 0x20 || u == 0x7f) return refuse("a control character in the path");
        if (c == '%') {
            if (i + 2 < path.size() && (path[i + 1] == '2' || path[i + 1] == '5')) {
                char lo = static_cast<char>(path[i + 2] | 0x20);
                if ((path[i + 1] == '2' && (lo == 'e' || lo == 'f')) || (path[i + 1] == '5' && lo == 'c'))
                    return refuse("an escaped '.', '/' or '\\' (%2e, %2f, %5c) in the path");
            }
            return refuse("a %-escape in the path (the path checked must be the path forwarded)");
        }
        if (c == '/') {
            // The segment that starts here: empty ("//"), "." or "..".
            std::string_view rest = path.substr(i + 1);
            std::string_view seg = rest.substr(0, rest.find('/'));
            if (seg.empty() && i + 1 < path.size()) return refuse("an empty segment (\"//\") in the path");
            if (seg == "." || seg == "..") return refuse("a '.' or '..' segment in the path");
        }
    }
    return path;
}

bool route_allowed(const config::Grant& grant, std::string_view method, std::string_view normalized_path) {
    if (grant.routes.empty()) return true;
    for (const auto& r : grant.routes) {
        if (r.method != "*" && r.method != method) continue;
        if (r.prefix ? normalized_path.substr(0, r.path.size()) == r.path : normalized_path == r.path) return true;
    }
    return false;
}

namespace {

boost::asio::ip::address unmapped(const boost::asio::ip::address& a) {
    if (a.is_v6() && a.to_v6().is_v4_mapped())
        return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6());
    return a;
}

bool is_self(const boost::asio::ip::address& raw, std::uint16_t port, const SelfAddresses& self) {
    auto a = unmapped(raw);
    for (const auto& ep : self.listening) {
        if (ep.port() != port) continue;
        auto l = unmapped(ep.address());
        if (l == a || l.is_unspecified() || a.is_unspecified() || (l.is_loopback() && a.is_loopback()))
            return true;
    }
    if (classify_address(a) == AddressClass::public_unicast)
        for (const auto& h : self.host_addresses)
            if (unmapped(h) == a) return true;
    return false;
}

}  // namespace

AddressDecision vet_addresses(const config::Grant& grant, std::uint16_t port,
                              const std::vector<boost::asio::ip::address>& answers, const SelfAddresses& self) {
    AddressDecision d;
    if (answers.empty()) {
        d.reason = "dns_failure";
        return d;
    }
    bool any_public = false;
    bool any_special = false;
    for (const auto& a : answers) {
        if (is_special_purpose(classify_address(a)))
            any_special = true;
        else
            any_public = true;
    }
    if (any_public && any_special) {
        d.reason = "mixed_answers";
        return d;
    }
    if (any_special && !grant.allow_private) {
        d.reason = "private_address";
        return d;
    }
    for (const auto& a : answers) {
        if (is_self(a, port, self)) {
            d.reason = "gateway_self";
            return d;
        }
    }
    d.allowed = true;
    d.usable = answers;
    return d;
}

}  // namespace corral::gateway
