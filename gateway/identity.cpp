#include "gateway/identity.hpp"

#include <utility>

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

std::optional<DaemonFirstLine> parse_daemon_first_line(std::string_view line) {
    constexpr std::string_view kAnnouncement = "CORRAL-IDENTITY ";
    constexpr std::string_view kCountsRequest = "CORRAL-COUNTS ";
    DaemonFirstLine first;
    if (line.substr(0, kAnnouncement.size()) == kAnnouncement) {
        line.remove_prefix(kAnnouncement.size());
    } else if (line.substr(0, kCountsRequest.size()) == kCountsRequest) {
        first.counts = true;
        line.remove_prefix(kCountsRequest.size());
    } else {
        return std::nullopt;
    }
    auto id = parse_identity(line);
    if (!id) return std::nullopt;
    first.id = std::move(*id);
    return first;
}

}  // namespace corral::gateway
