#include "workspace/review_record.hpp"

#include <fcntl.h>

#include <nlohmann/json.hpp>

#include "base/atomic_file.hpp"
#include "base/fd.hpp"
#include "base/sys_error.hpp"

namespace corral::workspace {

std::string review_dir(const std::string& run_dir) { return run_dir + "/" + kReviewDirName; }
std::string upper_dir(const std::string& run_dir) { return review_dir(run_dir) + "/" + kUpperName; }

// Replaced atomically, not synced, as run.json is without --sync-record: two
// syncs cost a run ~25 ms here, and what a crash can lose is the record of
// a review whose upper layer (never synced either) would be gone as well.
void write_review_record(const std::string& run_dir, const ReviewRecord& r) {
    nlohmann::json j = {
        {"workspace", r.workspace}, {"owner_uid", r.owner_uid}, {"owner_gid", r.owner_gid},
        {"agent_uid", r.agent_uid}, {"agent_gid", r.agent_gid}, {"fence_ns", r.fence_ns},
        {"upper_size_bytes", r.upper_size_bytes}, {"state", r.state}, {"error", r.error},
        {"applied", r.applied}, {"applied_digest", r.applied_digest},
    };
    if (!r.applied_stamps.empty()) {
        nlohmann::json stamps = nlohmann::json::object();
        for (const auto& [path, s] : r.applied_stamps) stamps[path] = {s.ctime_sec, s.ctime_nsec};
        j["applied_stamps"] = std::move(stamps);
    }
    if (r.live_pid != 0)
        j["live"] = {{"pid", r.live_pid}, {"start_ticks", r.live_start_ticks}, {"boot_id", r.live_boot_id}, {"fd", r.live_fd}};
    write_file_atomically({review_dir(run_dir), kReviewRecordName, 0600, Durability::visible}, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

ReviewRecord read_review_record(const std::string& run_dir) {
    const std::string path = review_dir(run_dir) + "/" + kReviewRecordName;
    auto text = read_whole_file(WholeFileRead{path, 16u << 20, AT_FDCWD, /*no_follow=*/true});
    if (!text) throw UsageError("run dir " + run_dir + ": no reviewed workspace (the run had no --review)");
    try {
        const auto j = nlohmann::json::parse(*text);
        ReviewRecord r;
        r.workspace = j.at("workspace").get<std::string>();
        r.owner_uid = j.at("owner_uid").get<uid_t>();
        r.owner_gid = j.at("owner_gid").get<gid_t>();
        r.agent_uid = j.at("agent_uid").get<uid_t>();
        r.agent_gid = j.at("agent_gid").get<gid_t>();
        r.fence_ns = j.at("fence_ns").get<std::int64_t>();
        r.upper_size_bytes = j.at("upper_size_bytes").get<std::uint64_t>();
        r.state = j.at("state").get<std::string>();
        r.error = j.value("error", "");
        r.applied = j.value("applied", std::vector<std::string>{});
        r.applied_digest = j.value("applied_digest", "");
        if (j.contains("applied_stamps"))
            for (const auto& [path, s] : j.at("applied_stamps").items())
                r.applied_stamps[path] = AppliedStamp{s.at(0).get<std::int64_t>(), s.at(1).get<std::int64_t>()};
        if (j.contains("live")) {
            const auto& live = j.at("live");
            r.live_pid = live.at("pid").get<pid_t>();
            r.live_start_ticks = live.at("start_ticks").get<std::uint64_t>();
            r.live_boot_id = live.at("boot_id").get<std::string>();
            r.live_fd = live.at("fd").get<int>();
        }
        return r;
    } catch (const nlohmann::json::exception& e) {
        throw UsageError(path + ": not a review record: " + e.what());
    }
}

}  // namespace corral::workspace
