#include "gateway/host.hpp"

#include <charconv>
#include <fstream>
#include <sstream>

#include "config/gateway_config.hpp"

namespace corral::gateway {
namespace {

constexpr std::string_view bad_host = "bad_host";
constexpr std::string_view numeric_host = "numeric_host";

HostCheck refuse(std::string_view why) { return HostCheck{std::nullopt, std::string(why)}; }

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }

// The WHATWG URL "ends in a number" test: inet_aton and browsers parse such a
// name as an IPv4 address in some radix, so it must never be treated as a name.
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

HostCheck normalize_ipv6(std::string_view inner) {
    if (inner.find('%') != std::string_view::npos) return refuse(numeric_host);  // zone id
    for (char c : inner)
        if (!(is_hex(lower(c)) || c == ':' || c == '.')) return refuse(bad_host);
    boost::system::error_code ec;
    auto a = boost::asio::ip::make_address_v6(std::string(inner), ec);
    if (ec) return refuse(bad_host);
    return HostCheck{HostName{a.to_string(), true}, {}};
}

}  // namespace

HostCheck normalize_host(std::string_view raw) {
    if (raw.empty()) return refuse(bad_host);
    if (raw.front() == '[' || raw.back() == ']') {
        if (raw.size() < 3 || raw.front() != '[' || raw.back() != ']') return refuse(bad_host);
        auto inner = raw.substr(1, raw.size() - 2);
        if (inner.find(':') == std::string_view::npos) return refuse(bad_host);  // "[example.com]"
        return normalize_ipv6(inner);
    }
    if (raw.find(':') != std::string_view::npos) return normalize_ipv6(raw);

    std::string text;
    text.reserve(raw.size());
    for (char c : raw) {
        char l = lower(c);
        bool ok = (l >= 'a' && l <= 'z') || is_digit(l) || l == '-' || l == '_' || l == '.';
        if (!ok) return refuse(bad_host);  // '%', non-ASCII (IDN must be punycode), spaces, '@', '/', ...
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
        return HostCheck{HostName{text, true}, {}};
    }
    return HostCheck{HostName{text, false}, {}};
}

AuthorityCheck split_authority(std::string_view raw, std::optional<std::uint16_t> default_port) {
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
        if (port_part.empty() || port_part.size() > 5 || port_part.front() == '0') return fail("bad_request");
        unsigned v = 0;
        for (char c : port_part) {
            if (!is_digit(c)) return fail("bad_request");
            v = v * 10 + static_cast<unsigned>(c - '0');
        }
        if (v == 0 || v > 65535) return fail("bad_request");
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

HostsTable load_hosts_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw config::ConfigError(path + ": cannot read hosts_file: " + errno_text(errno));
    HostsTable table;
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
        ++lineno;
        if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
        std::istringstream words(line);
        std::string addr_text;
        if (!(words >> addr_text)) continue;
        auto where = path + ":" + std::to_string(lineno) + ": ";
        boost::system::error_code ec;
        auto addr = boost::asio::ip::make_address(addr_text, ec);
        if (ec || addr_text.find('%') != std::string::npos)
            throw config::ConfigError(where + "bad address \"" + addr_text +
                                      "\"; allowed: an IPv4 dotted quad or an IPv6 address");
        std::string name;
        int names = 0;
        while (words >> name) {
            auto h = normalize_host(name);
            if (!h.host || h.host->is_ip_literal)
                throw config::ConfigError(where + "bad host name \"" + name + "\" (" +
                                          (h.host ? std::string("an address") : h.reason) +
                                          "); allowed: a DNS name of [a-z0-9-_.] labels");
            table[h.host->text].push_back(addr);
            ++names;
        }
        if (names == 0) throw config::ConfigError(where + "address \"" + addr_text + "\" without a name");
    }
    return table;
}

}  // namespace corral::gateway
