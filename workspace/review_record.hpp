// workspace/review_record.hpp — what a reviewed run keeps of its workspace:
// RUN_DIR/workspace/review.json (who owns DIR, the start fence, the state)
// beside RUN_DIR/workspace/upper (the overlay's upper layer, copied out of the
// box's tmpfs after the run). docs/workspace.md.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace corral::workspace {

inline constexpr const char* kReviewDirName = "workspace";
inline constexpr const char* kReviewRecordName = "review.json";
inline constexpr const char* kUpperName = "upper";

// A host entry's ctime as `corral apply` left it.
struct AppliedStamp {
    std::int64_t ctime_sec = 0;
    std::int64_t ctime_nsec = 0;
    bool operator==(const AppliedStamp&) const = default;
};

struct ReviewRecord {
    std::string workspace;         // DIR's real path when the run started
    uid_t owner_uid = 0;           // DIR's owner and group then: apply writes as them
    gid_t owner_gid = 0;
    uid_t agent_uid = 0;           // the IDs the agent wrote with (translated to the owner's in upper/)
    gid_t agent_gid = 0;
    // CLOCK_REALTIME_COARSE when the run started, in ns since the epoch: a
    // host file whose ctime is at or after it (workspace/change.hpp
    // changed_since) may have changed since the run began; ctime cannot be
    // set by anyone. docs/workspace.md "What corral apply does".
    std::int64_t fence_ns = 0;
    std::uint64_t upper_size_bytes = 0;  // the cap of the box's upper layer
    // "running" (the box may still write), "ready" (upper/ is complete),
    // "failed" (upper/ could not be copied: `error` says why), "applied",
    // "discarded".
    std::string state = "running";
    std::string error;
    std::vector<std::string> applied;    // the paths `corral apply` wrote, in order
    std::string applied_digest;          // the digest of the diff they came from
    // The host ctime each path `corral apply` wrote had right after it
    // wrote it: a later diff or apply takes that ctime (only that one) as
    // the review's own change, not the host's (AppliedStamp).
    std::map<std::string, AppliedStamp> applied_stamps;
    // While the box runs: the supervisor that holds the layer's tmpfs and
    // the fd it holds it by, so `corral diff` can read the changes so far
    // (/proc/PID/fd/N, never written). live_pid 0: none (not started, or ended).
    pid_t live_pid = 0;
    std::uint64_t live_start_ticks = 0;  // the supervisor's start (a reused PID is not it)
    std::string live_boot_id;
    int live_fd = -1;
};

std::string review_dir(const std::string& run_dir);
std::string upper_dir(const std::string& run_dir);

// Writes RUN_DIR/workspace/review.json atomically (0600). Throws SysError.
void write_review_record(const std::string& run_dir, const ReviewRecord& record);
// Reads it. Throws UsageError when the run had no --review (or the record is
// malformed), SysError when it cannot be read.
ReviewRecord read_review_record(const std::string& run_dir);

}  // namespace corral::workspace
