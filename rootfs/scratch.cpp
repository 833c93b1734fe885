// rootfs/scratch.cpp — removing a run's scratch directory from the host.
//
// The scratch tmpfs and everything mounted below it live in the sandbox's own
// mount namespace, so normally the host only has an empty directory to remove.
// Anything still mounted here (a crashed run whose namespace was shared, a
// manual mount) is unmounted first, and nothing is deleted while a mount
// remains: a bind of the user's workspace must never be emptied by cleanup.
#include <fcntl.h>
#include <sys/mount.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "base/mountinfo.hpp"
#include "base/remove_tree.hpp"
#include "base/sys_error.hpp"
#include "rootfs/mount_plan.hpp"

namespace corral::rootfs {
namespace {

bool at_or_below(const std::string& path, const std::string& dir) {
    return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

std::vector<std::string> mounts_at_or_below(const std::string& dir) {
    std::ifstream in("/proc/self/mountinfo");
    if (!in) throw SysError("open", "/proc/self/mountinfo", errno);
    std::vector<std::string> found;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string id, parent, devno, root, mount_point;
        if (!(fields >> id >> parent >> devno >> root >> mount_point)) continue;
        std::string path = unescape_mountinfo_field(mount_point);
        if (at_or_below(path, dir)) found.push_back(path);
    }
    return found;
}

}  // namespace

void remove_scratch(const std::string& scratch_dir) {
    if (scratch_dir.empty() || scratch_dir.front() != '/' || scratch_dir == "/")
        throw UsageError("scratch directory \"" + scratch_dir + "\": expected an absolute path below /");
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::symlink_status(scratch_dir, ec))) return;

    auto mounts = mounts_at_or_below(scratch_dir);
    // Deepest first, so a parent is never detached while a child is counted.
    std::sort(mounts.begin(), mounts.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
    for (const auto& m : mounts)
        if (umount2(m.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0 && errno != EINVAL && errno != ENOENT)
            throw SysError("umount2", m, errno);
    if (auto left = mounts_at_or_below(scratch_dir); !left.empty())
        throw SysError("umount2", left.front() + " (still mounted; scratch not removed)", EBUSY);

    // What the box wrote there can nest as deep as it liked: removed without
    // an fd or a path per level (base/remove_tree.hpp).
    remove_tree_at(AT_FDCWD, scratch_dir);
}

}  // namespace corral::rootfs
