#include "base/log.hpp"

#include <unistd.h>

#include <atomic>
#include <string>

#include "base/terminal_text.hpp"

namespace corral::log {

namespace {
std::atomic<Level> g_level{Level::info};
}

void set_level(Level l) { g_level.store(l); }
Level level() { return g_level.load(); }

void write(Level l, std::string_view message) {
    if (l < g_level.load()) return;
    static constexpr const char* kPrefix[] = {"corral: debug: ", "corral: ", "corral: warning: ", "corral: error: "};
    // One prefixed line per line of the message, each escaped: a message
    // may carry a box's bytes (a host, a path), which must not drive the
    // terminal or pass for a line of corral's own.
    std::string line;
    for (std::size_t at = 0;;) {
        const std::size_t eol = message.find('\n', at);
        line += kPrefix[static_cast<int>(l)];
        line += terminal_text(message.substr(at, eol == std::string_view::npos ? eol : eol - at));
        line += '\n';
        if (eol == std::string_view::npos) break;
        at = eol + 1;
    }
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
