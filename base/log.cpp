#include "base/log.hpp"

#include <unistd.h>

#include <atomic>
#include <string>

namespace corral::log {

namespace {
std::atomic<Level> g_level{Level::info};
}

void set_level(Level l) { g_level.store(l); }
Level level() { return g_level.load(); }

void write(Level l, std::string_view message) {
    if (l < g_level.load()) return;
    static constexpr const char* kPrefix[] = {"corral: debug: ", "corral: ", "corral: warning: ", "corral: error: "};
    std::string line = kPrefix[static_cast<int>(l)];
    line += message;
    line += '\n';
    // One write() per line so concurrent writers don't interleave mid-line.
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
        ssize_t n = ::write(STDERR_FILENO, p, left);
        if (n <= 0) break;
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

}  // namespace corral::log
