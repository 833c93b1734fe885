// run/run_prune.cpp — see run_prune.hpp.
#include "run/run_prune.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/fd.hpp"
#include "base/remove_tree.hpp"
#include "base/sys_error.hpp"
#include "supervisor/run_record.hpp"

namespace corral::run {

namespace {

// The run's end as its record says; nullopt when it cannot be read.
std::optional<std::chrono::system_clock::time_point> ended_at(const nlohmann::json& record) {
    const auto& v = record["ended_at"];
    if (!v.is_string()) return std::nullopt;
    return supervisor::parse_rfc3339_ms(v.get<std::string>());
}

// Sums st_blocks under an open directory, one directory fd at a time deep
// (a tree as deep as a box made it is walked the way remove_tree walks it:
// here, by recursion bounded by what the run dir holds, its own files).
std::uint64_t bytes_below(int dir_fd, int depth) {
    std::uint64_t total = 0;
    Fd copy(::dup(dir_fd));
    if (!copy.valid()) return 0;
    DIR* d = ::fdopendir(copy.release());
    if (d == nullptr) return 0;
    while (dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        struct stat st {};
        if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        total += static_cast<std::uint64_t>(st.st_blocks) * 512;
        if (S_ISDIR(st.st_mode) && depth < 64) {
            Fd sub(::openat(::dirfd(d), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            if (sub.valid()) total += bytes_below(sub.get(), depth + 1);
        }
    }
    ::closedir(d);
    return total;
}

}  // namespace

std::vector<PruneChoice> choose_runs_to_prune(const std::vector<RunEntry>& runs, const PruneRules& rules,
                                              std::chrono::system_clock::time_point now) {
    std::vector<PruneChoice> out;
    for (const auto& e : runs) {
        if (e.state != "finished" || !e.record) continue;
        const nlohmann::json& r = *e.record;
        auto end = ended_at(r);
        if (!end) continue;
        PruneChoice c{e, r.value("outcome", std::string()), *end, !r["uid"].is_number() || r["uid"] == 0};
        if (!rules.outcomes.empty() && !rules.outcomes.contains(c.outcome)) continue;
        const auto age = now - c.ended_at;
        const bool old_enough = age >= rules.older_than || (c.refused_before_box && age >= kRefusedRetention);
        if (old_enough) out.push_back(std::move(c));
    }
    std::stable_sort(out.begin(), out.end(), [](const PruneChoice& a, const PruneChoice& b) {
        if (a.refused_before_box != b.refused_before_box) return a.refused_before_box;
        return a.ended_at < b.ended_at;
    });
    return out;
}

std::uint64_t run_dir_bytes(const RunEntry& entry) {
    Fd dir(::open(entry.run_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    return dir.valid() ? bytes_below(dir.get(), 0) : 0;
}

void remove_run(const std::string& state_dir, const RunEntry& entry) {
    const std::string runs = state_dir + "/runs";
    Fd runs_fd(::open(runs.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!runs_fd.valid()) throw SysError("open", runs, errno);
    remove_tree_at(runs_fd.get(), entry.id);  // a symlink entry is removed as the link, never followed
    mark_run_ended(state_dir, entry.id);
}

}  // namespace corral::run
