// rootfs/box_path.cpp — see box_path.hpp.
#include "rootfs/box_path.hpp"

namespace corral::rootfs {

bool is_normalized_absolute(std::string_view p) {
    if (p.empty() || p.front() != '/') return false;
    if (p == "/") return true;
    if (p.back() == '/') return false;
    std::size_t pos = 1;
    while (pos <= p.size()) {
        std::size_t next = p.find('/', pos);
        if (next == std::string_view::npos) next = p.size();
        std::string_view part = p.substr(pos, next - pos);
        if (part.empty() || part == "." || part == "..") return false;
        pos = next + 1;
    }
    return true;
}

bool is_at_or_below(std::string_view path, std::string_view dir) {
    if (dir == "/") return true;
    return path == dir || (path.size() > dir.size() && path.substr(0, dir.size()) == dir && path[dir.size()] == '/');
}
}  // namespace corral::rootfs
