// supervisor/log_cap.hpp — how much of one output stream its log in the run
// dir keeps (--log-limit): the first `limit` bytes; the rest only streams.
// Shared by supervise() (stdout.log, stderr.log) and an agent run's
// stdout.jsonl tee, so the two cannot drift apart.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace corral::supervisor {

struct LogCap {
    std::uint64_t limit = UINT64_MAX;
    std::uint64_t produced = 0;   // bytes the stream carried
    std::uint64_t logged = 0;     // of those, bytes the log kept
    bool cut_now = false;         // the last admit() was the first to drop bytes (warn once)

    // Of `n` more bytes of the stream, how many the log keeps (a prefix).
    std::size_t admit(std::size_t n) {
        const bool nothing_dropped_yet = produced == logged;
        const auto keep = static_cast<std::size_t>(std::min<std::uint64_t>(n, limit - logged));
        produced += n;
        logged += keep;
        cut_now = keep < n && nothing_dropped_yet;
        return keep;
    }
};

}  // namespace corral::supervisor
