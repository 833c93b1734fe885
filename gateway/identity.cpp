#include "gateway/identity.hpp"

namespace corral::gateway {
namespace {

bool is_identity_part(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                  c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

}  // namespace

std::optional<Identity> parse_identity(std::string_view text) {
    auto slash = text.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    auto worker = text.substr(0, slash);
    auto run = text.substr(slash + 1);
    if (!is_identity_part(worker) || !is_identity_part(run)) return std::nullopt;
    return Identity{std::string(worker), std::string(run)};
}

}  // namespace corral::gateway
