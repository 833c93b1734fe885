#include "run/workspace_review.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include <climits>
#include <cstdlib>
#include <ctime>

#include "base/sys_error.hpp"
#include "supervisor/run_record.hpp"
#include "workspace/review_upper.hpp"

namespace corral::run {

WorkspaceReview begin_review(const std::string& workspace_dir, std::uint64_t size_bytes, const std::string& run_dir) {
    workspace::require_reviewable("--workspace", workspace_dir);
    WorkspaceReview review;
    review.run_dir = run_dir;
    char real[PATH_MAX];
    if (realpath(workspace_dir.c_str(), real) == nullptr) throw SysError("realpath", workspace_dir, errno);
    struct stat st {};
    if (stat(real, &st) != 0) throw SysError("stat", real, errno);
    auto& r = review.record;
    r.workspace = real;
    r.owner_uid = st.st_uid;
    r.owner_gid = st.st_gid;
    r.upper_size_bytes = size_bytes;
    // Taken before the box exists: any host change from now on has a ctime at or after it.
    // The coarse clock is what the kernel stamps ctimes from (or below
    // what a fine-grained stamp reads), so a later change is never below it.
    timespec now {};
    clock_gettime(CLOCK_REALTIME_COARSE, &now);
    r.fence_ns = static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
    if (mkdir(workspace::review_dir(run_dir).c_str(), 0700) != 0)
        throw SysError("mkdir", workspace::review_dir(run_dir), errno);
    workspace::write_review_record(run_dir, r);
    return review;
}

namespace {

void copy_out(WorkspaceReview& review, std::vector<std::string>& lines) {
    auto& r = review.record;
    struct statvfs sv {};
    if (fstatvfs(review.upper.get(), &sv) == 0 && sv.f_bavail == 0)
        lines.push_back("the review's upper layer is full (" + std::to_string(r.upper_size_bytes) +
                        " bytes, --scratch-size): writes in the box failed with ENOSPC");
    try {
        const auto stats = workspace::copy_out_upper(review.upper.get(), workspace::upper_dir(review.run_dir),
                                                     {r.agent_uid, r.owner_uid, r.agent_gid, r.owner_gid});
        r.state = "ready";
        lines.push_back("the workspace's changes (" + std::to_string(stats.entries) + " entries, " +
                        std::to_string(stats.bytes) + " bytes) wait for review: corral diff / apply / discard " +
                        review.run_dir);
    } catch (const std::exception& e) {
        r.state = "failed";
        r.error = e.what();
        lines.push_back(std::string("the workspace's changes could not be kept for review: ") + e.what());
    }
}

}  // namespace

void publish_live_upper(WorkspaceReview& review, uid_t agent_uid, gid_t agent_gid) {
    auto& r = review.record;
    r.agent_uid = agent_uid;
    r.agent_gid = agent_gid;
    const supervisor::SupervisorProcess self = supervisor::this_supervisor();
    r.live_pid = self.pid;
    r.live_start_ticks = self.start_ticks;
    r.live_boot_id = self.boot_id;
    r.live_fd = review.upper.get();
    workspace::write_review_record(review.run_dir, r);
}

std::optional<LiveLayer> open_live_upper(const workspace::ReviewRecord& r) {
    if (r.live_pid <= 0 || r.live_fd < 0) return std::nullopt;
    const supervisor::SupervisorProcess holder{r.live_pid, r.live_start_ticks, r.live_boot_id};
    if (!supervisor::supervisor_alive(holder)) return std::nullopt;
    const std::string path = "/proc/" + std::to_string(r.live_pid) + "/fd/" + std::to_string(r.live_fd);
    Fd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) {
        if (errno == ENOENT) return std::nullopt;  // the supervisor let go of it: the run is ending
        throw SysError("open", path, errno);
    }
    // Checked after the open too: had the supervisor exited and its PID been
    // reused in between, the fd could be another process's.
    if (!supervisor::supervisor_alive(holder)) return std::nullopt;
    struct statfs fs {};
    if (fstatfs(fd.get(), &fs) != 0) throw SysError("fstatfs", path, errno);
    if (fs.f_type != TMPFS_MAGIC) throw SysError("open", path + ": not the review's tmpfs", EXDEV);
    LiveLayer layer;
    layer.dir = "/proc/self/fd/" + std::to_string(fd.get()) + "/" + workspace::kUpperSubdir;
    layer.fd = std::move(fd);
    layer.ids = {r.agent_uid, r.owner_uid, r.agent_gid, r.owner_gid};
    return layer;
}

std::vector<std::string> finish_review(WorkspaceReview& review, uid_t agent_uid, gid_t agent_gid) {
    auto& r = review.record;
    r.agent_uid = agent_uid;
    r.agent_gid = agent_gid;
    r.live_pid = 0;  // the layer is no longer held: only the copy is read from now on
    r.live_fd = -1;
    std::vector<std::string> lines;
    if (!review.upper.valid()) {
        // The run ended before its box existed: the agent wrote nothing.
        r.state = "failed";
        r.error = "the run ended before its box started";
    } else {
        copy_out(review, lines);
    }
    review.upper.reset();  // the tmpfs goes with its last reference
    try {
        workspace::write_review_record(review.run_dir, r);
    } catch (const std::exception& e) {
        lines.push_back(std::string("writing the review record: ") + e.what());
    }
    return lines;
}

}  // namespace corral::run
