#include "config/gateway_values.hpp"

#include <arpa/inet.h>

#include <algorithm>

#include "approval/queue.hpp"
#include "base/parse.hpp"
#include "config/checker.hpp"

namespace corral::config {

std::chrono::seconds approval_timeout_key(Table& s, bool asks, std::string_view asks_key) {
    const std::string allowed = "a duration of whole seconds from 1s to " +
                                std::to_string(approval::kMaxApprovalTimeout.count() / 60) + "m, such as \"90s\", \"5m\"";
    auto t = s.parsed("approval_timeout", allowed, [](std::string_view text) { return parse_duration(text); });
    if (!t) return approval::kDefaultApprovalTimeout;
    if (t->count() % 1000 != 0 || *t < std::chrono::seconds(1) || *t > approval::kMaxApprovalTimeout)
        s.bad("approval_timeout", allowed);
    else if (!asks)
        s.bad("approval_timeout", "only with " + std::string(asks_key));
    else
        return std::chrono::duration_cast<std::chrono::seconds>(*t);
    return approval::kDefaultApprovalTimeout;
}


bool is_absolute_path(std::string_view p) { return !p.empty() && p.front() == '/' && p.find('\0') == p.npos; }

bool is_user_name(const std::string& n) {
    auto in = [](char ch, std::string_view also) { return (ch >= 'a' && ch <= 'z') || also.find(ch) != std::string_view::npos; };
    if (n.empty() || n.size() > 32 || !in(n.front(), "_")) return false;
    return std::all_of(n.begin(), n.end(), [&](char ch) { return in(ch, "_-0123456789"); });
}

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

namespace {
bool is_digit(char c) { return c >= '0' && c <= '9'; }
}  // namespace

// "host:port" or "[v6]:port" (names::split_authority); port 0 only where a
// listener may ask for any free port.
std::optional<names::Authority> parse_host_port(const std::string& s, names::PortZero zero) {
    return names::split_authority(s, std::nullopt, zero).authority;
}

bool is_loopback_literal(const std::string& ip) {
    unsigned char buf[16];
    if (inet_pton(AF_INET, ip.c_str(), buf) == 1) return buf[0] == 127;
    return ip == "::1";
}

// Only {key} and {token} may appear in braces; no control characters (CR/LF
// would let a template split the header).
bool is_valid_template(std::string_view t) {
    for (std::size_t i = 0; i < t.size(); ++i) {
        auto u = static_cast<unsigned char>(t[i]);
        if (u < 0x20 || u == 0x7f) return false;
        if (t[i] == '{') {
            if (t.substr(i, 5) == "{key}")
                i += 4;
            else if (t.substr(i, 7) == "{token}")
                i += 6;
            else
                return false;
        } else if (t[i] == '}') {
            return false;
        }
    }
    return true;
}

// "METHOD /path" or "METHOD /prefix/*".
std::optional<Route> parse_route(const std::string& text) {
    auto space = text.find(' ');
    if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) return std::nullopt;
    Route r;
    r.text = text;
    r.method = text.substr(0, space);
    std::string path = text.substr(space + 1);
    if (r.method != "*") {
        if (r.method.empty()) return std::nullopt;
        for (char c : r.method)
            if (!(c >= 'A' && c <= 'Z')) return std::nullopt;
    }
    if (path.empty() || path.front() != '/') return std::nullopt;
    if (path.back() == '*') {
        path.pop_back();
        if (path.empty() || path.back() != '/') return std::nullopt;
        r.prefix = true;
    }
    for (char c : path) {
        auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7f || std::string_view("?#%\\;*").find(c) != std::string_view::npos)
            return std::nullopt;
    }
    // Routes are compared with normalised request paths, so they must be normal themselves.
    if (path.find("//") != std::string::npos) return std::nullopt;
    std::size_t pos = 1;
    while (pos <= path.size()) {
        auto slash = path.find('/', pos);
        auto seg = path.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
        if (seg == "." || seg == "..") return std::nullopt;
        if (slash == std::string::npos) break;
        pos = slash + 1;
    }
    r.path = path;
    return r;
}

bool is_credential_name(const std::string& n) {
    if (n.empty()) return false;
    for (char c : n)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_' || c == '-')) return false;
    return true;
}

bool is_env_name(const std::string& n) {
    if (n.empty() || is_digit(n[0])) return false;
    for (char c : n)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_')) return false;
    return true;
}

}  // namespace corral::config
