#include "names/host.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <stdexcept>

namespace corral::names {
namespace {

constexpr std::string_view bad_host = "bad_host";
constexpr std::string_view numeric_host = "numeric_host";

HostCheck refuse(std::string_view why) { return HostCheck{std::nullopt, std::string(why)}; }

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }

// The WHATWG URL "ends in a number" test on the (lowercased) last label:
// inet_aton and browsers parse such a name as an IPv4 address in some radix,
// so it must never be treated as a name. "0x" followed by anything but hex
// digits ("0xz", "0x1g") is no number to either of them.
bool looks_numeric(std::string_view label) {
    if (label.empty()) return false;
    if (label.size() >= 2 && label[0] == '0' && label[1] == 'x') {
        for (char c : label.substr(2))
            if (!is_hex(c)) return false;
        return true;
    }
    for (char c : label)
        if (!is_digit(c)) return false;
    return true;
}

// "a.b.c.d", each part 0..255 in plain decimal without leading zeros.
bool is_canonical_dotted_quad(std::string_view s) {
    int parts = 0;
    std::size_t pos = 0;
    while (pos <= s.size()) {
        auto dot = s.find('.', pos);
        auto part = s.substr(pos, dot == std::string_view::npos ? std::string_view::npos : dot - pos);
        if (part.empty() || part.size() > 3) return false;
        for (char c : part)
            if (!is_digit(c)) return false;
        if (part.size() > 1 && part[0] == '0') return false;
        int v = 0;
        std::from_chars(part.data(), part.data() + part.size(), v);
        if (v > 255) return false;
        ++parts;
        if (dot == std::string_view::npos) break;
        pos = dot + 1;
    }
    return parts == 4;
}

}  // namespace

HostCheck normalize_host(std::string_view raw) {
    if (raw.empty()) return refuse(bad_host);
    std::string_view v6;
    if (raw.front() == '[' || raw.back() == ']') {
        if (raw.size() < 3 || raw.front() != '[' || raw.back() != ']') return refuse(bad_host);
        v6 = raw.substr(1, raw.size() - 2);
        if (v6.find(':') == std::string_view::npos) return refuse(bad_host);  // "[example.com]"
    } else if (raw.find(':') != std::string_view::npos) {
        v6 = raw;
    }
    if (!v6.empty()) {
        if (v6.find('%') != std::string_view::npos) return refuse(numeric_host);  // zone id
        for (char c : v6)
            if (!(is_hex(lower(c)) || c == ':' || c == '.')) return refuse(bad_host);
        unsigned char buf[16];
        char out[INET6_ADDRSTRLEN];
        if (::inet_pton(AF_INET6, std::string(v6).c_str(), buf) != 1) return refuse(bad_host);
        return HostCheck{HostName{::inet_ntop(AF_INET6, buf, out, sizeof out), true}, {}};
    }

    std::string text;
    text.reserve(raw.size());
    for (char c : raw) {
        char l = lower(c);
        bool ok = (l >= 'a' && l <= 'z') || is_digit(l) || l == '-' || l == '_' || l == '.';
        if (!ok) return refuse(bad_host);  // '%', non-ASCII (IDN must be punycode), spaces, '@', '/', '*', ...
        text.push_back(l);
    }
    if (text.back() == '.') text.pop_back();  // "example.com." is "example.com"
    if (text.empty() || text.size() > 253) return refuse(bad_host);

    std::string_view last;
    std::size_t pos = 0;
    while (true) {
        auto dot = text.find('.', pos);
        std::string_view label(text.data() + pos, (dot == std::string::npos ? text.size() : dot) - pos);
        if (label.empty() || label.size() > 63) return refuse(bad_host);
        if (label.front() == '-' || label.back() == '-') return refuse(bad_host);
        last = label;
        if (dot == std::string::npos) break;
        pos = dot + 1;
    }
    if (looks_numeric(last)) {
        if (!is_canonical_dotted_quad(text)) return refuse(numeric_host);
        return HostCheck{HostName{std::move(text), true}, {}};
    }
    return HostCheck{HostName{std::move(text), false}, {}};
}

std::size_t HostPattern::match_score(const HostName& host) const {
    if (text_.empty()) return 0;
    if (!wildcard_) return host.text() == text_ ? std::string::npos : 0;
    if (host.is_ip_literal()) return 0;
    std::string_view suffix(text_.data() + 1, text_.size() - 1);  // ".example.com"
    const std::string& t = host.text();
    if (t.size() <= suffix.size()) return 0;  // the apex never matches
    if (t.compare(t.size() - suffix.size(), suffix.size(), suffix) != 0) return 0;
    return suffix.size();
}

std::optional<HostPattern> parse_host_pattern(std::string_view raw) {
    HostPattern p;
    if (raw.size() > 2 && raw[0] == '*' && raw[1] == '.') {
        auto rest = normalize_host(raw.substr(2));
        if (!rest.host || rest.host->is_ip_literal() || rest.host->text().find('.') == std::string::npos)
            return std::nullopt;
        p.text_ = "*." + rest.host->text();
        p.wildcard_ = true;
        return p;
    }
    auto exact = normalize_host(raw);
    if (!exact.host) return std::nullopt;
    p.text_ = exact.host->text();
    return p;
}

HostPattern builtin_host_pattern(std::string_view text) {
    auto p = parse_host_pattern(text);
    if (!p) throw std::logic_error("built-in host pattern \"" + std::string(text) + "\" is not a valid host");
    return *p;
}

AuthorityCheck split_authority(std::string_view raw, std::optional<std::uint16_t> default_port, PortZero zero) {
    auto fail = [](std::string_view why) { return AuthorityCheck{std::nullopt, std::string(why)}; };
    std::string_view host_part;
    std::string_view port_part;
    bool has_port = false;
    if (!raw.empty() && raw.front() == '[') {
        auto close = raw.find(']');
        if (close == std::string_view::npos) return fail(bad_host);
        host_part = raw.substr(0, close + 1);
        auto rest = raw.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') return fail(bad_host);
            port_part = rest.substr(1);
            has_port = true;
        }
    } else {
        auto colon = raw.rfind(':');
        if (colon != std::string_view::npos) {
            if (raw.find(':') != colon) return fail(bad_host);  // bare IPv6: ambiguous with the port
            host_part = raw.substr(0, colon);
            port_part = raw.substr(colon + 1);
            has_port = true;
        } else {
            host_part = raw;
        }
    }
    std::uint16_t port = 0;
    if (has_port) {
        const bool lone_zero = zero == PortZero::allowed && port_part == "0";
        if (!lone_zero && (port_part.empty() || port_part.size() > 5 || port_part.front() == '0'))
            return fail("bad_request");
        unsigned v = 0;
        for (char c : port_part) {
            if (!is_digit(c)) return fail("bad_request");
            v = v * 10 + static_cast<unsigned>(c - '0');
        }
        if ((v == 0 && !lone_zero) || v > 65535) return fail("bad_request");
        port = static_cast<std::uint16_t>(v);
    } else if (default_port) {
        port = *default_port;
    } else {
        return fail("bad_request");
    }
    auto host = normalize_host(host_part);
    if (!host.host) return fail(host.reason);
    return AuthorityCheck{Authority{std::move(*host.host), port}, {}};
}

}  // namespace corral::names
