#include "supervisor/stale_cleanup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <set>
#include <string>

#include "base/bounded_lock.hpp"
#include "base/fd.hpp"
#include "base/log.hpp"
#include "base/sys_error.hpp"
#include "rootfs/mount_plan.hpp"
#include "supervisor/cgroup.hpp"
#include "supervisor/uid_lease.hpp"

namespace corral::supervisor {
namespace {

std::vector<std::string> list_dir(const std::string& dir, bool dirs_only) {
    std::vector<std::string> names;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return names;  // missing: nothing of ours there
    while (dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        if (dirs_only && e->d_type != DT_DIR) continue;
        names.push_back(name);
    }
    ::closedir(d);
    return names;
}

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<std::string> remove_stale_runs() { return remove_stale_runs(kDefaultUidLockDir, kDefaultScratchRoot); }

std::vector<std::string> remove_stale_runs(const std::string& lock_dir, const std::string& scratch_root) {
    std::vector<std::string> report;
    // Cleaners take turns: a concurrent cleaner's brief flock on a stale lock
    // (step 2) would otherwise make that dead run look alive to this one.
    auto failed = [&](const std::string& what, const std::exception& e) {
        std::string line = "failed: " + what + ": " + e.what();
        report.push_back(line);
    };
    ::mkdir(lock_dir.c_str(), 0700);
    Fd turn(::open((lock_dir + "/.cleanup").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (turn.valid()) {
        try {
            lock_within(turn.get(), lock_dir + "/.cleanup", LockKind::exclusive);
        } catch (const SysError& e) {
            // Without the turn a live run could look dead: nothing is cleaned this time.
            failed("waiting for the cleanup turn", e);
            return report;
        }
    }

    // 1. What exists now. Listed BEFORE reading the live locks: a run records its id in
    //    its lock before it creates any of these, so anything listed here whose id is
    //    not in a held lock below belongs to a run that is gone.
    std::vector<std::string> cgroup_ids;
    try {
        cgroup_ids = list_run_cgroups();
    } catch (const std::exception& e) {
        failed("listing cgroups", e);
    }
    std::vector<std::string> scratch_ids = list_dir(scratch_root, true);

    // 2. Live runs: locks whose flock is held by someone. A lock we can take is stale:
    //    unlink it while holding it (so no acquirer can be fooled, see uid_lease.hpp).
    std::set<std::string> live;
    for (const auto& name : list_dir(lock_dir, false)) {
        if (!ends_with(name, ".lock")) continue;
        std::string path = lock_dir + "/" + name;
        Fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
        if (!fd.valid()) continue;  // released meanwhile
        if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
            if (errno == EWOULDBLOCK) {
                // The holder may not have written its id yet; then it has created nothing yet either.
                std::string id = read_lock_run_id(path);
                if (!id.empty()) live.insert(id);
            }
            continue;
        }
        if (is_same_file(fd.get(), path) && ::unlink(path.c_str()) == 0) report.push_back("lock " + path);
    }

    // 3. Remove what dead runs left: kill leftovers, then rmdir.
    for (const auto& id : cgroup_ids) {
        if (live.count(id)) continue;
        try {
            for (const auto& path : remove_run_cgroups(id)) report.push_back("cgroup " + path);
        } catch (const std::exception& e) {
            failed("cgroups of run " + id, e);
        }
    }
    for (const auto& id : scratch_ids) {
        if (live.count(id)) continue;
        std::string dir = scratch_root + "/" + id;
        try {
            rootfs::remove_scratch(dir);
            report.push_back("scratch " + dir);
        } catch (const std::exception& e) {
            failed("scratch " + dir, e);
        }
    }
    return report;
}

}  // namespace corral::supervisor
