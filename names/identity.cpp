#include "names/identity.hpp"

#include <fnmatch.h>

#include <algorithm>

namespace corral::names {
namespace {

bool is_ascii_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

bool glob_matches(std::string_view pattern, std::string_view subject) {
    return ::fnmatch(std::string(pattern).c_str(), std::string(subject).c_str(), 0) == 0;
}

}  // namespace

bool is_identity_part(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!(is_ascii_alnum(c) || c == '.' || c == '_' || c == '-')) return false;
    return true;
}

std::optional<Identity> parse_identity(std::string_view text) {
    auto slash = text.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    auto worker = text.substr(0, slash);
    auto run = text.substr(slash + 1);
    if (!is_identity_part(worker) || !is_identity_part(run)) return std::nullopt;
    return Identity{std::string(worker), std::string(run)};
}

Problem check_worker_name(std::string_view name) {
    if (name.empty()) return Failed{"empty name"};
    if (name.size() > 64) return Failed{"longer than 64 characters"};
    if (!is_ascii_alnum(name[0])) return Failed{"must start with a letter or digit"};
    for (char c : name)
        if (!(is_ascii_alnum(c) || c == '.' || c == '_' || c == '-'))
            return Failed{"contains '" + std::string(1, c) + "'; allowed: letters, digits, '.', '_', '-'"};
    return std::nullopt;
}

bool is_identity_pattern(std::string_view p) {
    if (p.empty() || std::count(p.begin(), p.end(), '/') > 1) return false;
    for (char c : p)
        if (!(is_ascii_alnum(c) || std::string_view("._-*?[]!/").find(c) != std::string_view::npos)) return false;
    return true;
}

bool identity_pattern_matches(std::string_view pattern, const Identity& id) {
    if (pattern.find('/') == std::string_view::npos) return glob_matches(pattern, id.worker);
    return glob_matches(pattern, id.str());
}

bool identity_pattern_may_match_worker(std::string_view pattern, std::string_view worker) {
    return glob_matches(pattern.substr(0, pattern.find('/')), worker);
}

}  // namespace corral::names
