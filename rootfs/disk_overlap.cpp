// rootfs/disk_overlap.cpp — see disk_overlap.hpp.
#include "rootfs/disk_overlap.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/fd.hpp"
#include "base/mountinfo.hpp"
#include "base/sys_error.hpp"
#include "rootfs/box_path.hpp"

namespace corral::rootfs {

bool same_inode(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

bool is_at_or_below_on_disk(int fd, const struct stat& dir) {
    Fd cur(openat(fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!cur.valid()) throw SysError("openat", ".", errno);
    for (int steps = 0; steps < 4096; ++steps) {
        struct stat st {};
        if (fstat(cur.get(), &st) != 0) throw SysError("fstat", "..", errno);
        if (same_inode(st, dir)) return true;
        Fd up(openat(cur.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!up.valid()) throw SysError("openat", "..", errno);
        struct stat up_st {};
        if (fstat(up.get(), &up_st) != 0) throw SysError("fstat", "..", errno);
        if (same_inode(up_st, st)) return false;  // "/" is its own parent
        cur = std::move(up);
    }
    return false;
}

namespace {

// Where a directory lies in its file system: the file system (mountinfo's
// major:minor) and the path from that file system's root.
struct DiskPlace {
    std::string device;
    std::string path;
};

std::string read_proc(const std::string& path) {
    auto text = read_whole_file({.path = path, .max_bytes = 64u << 20});
    if (!text) throw SysError("open", path, ENOENT);
    return *text;
}

// fd's mount (its fdinfo's mnt_id), that mount's root and mount point
// (mountinfo), fd's path (its /proc/self/fd link): the path below the mount
// point, appended to the mount's root.
DiskPlace disk_place(int fd) {
    const std::string fd_name = std::to_string(fd);
    const std::string info = read_proc("/proc/self/fdinfo/" + fd_name);
    const auto at = info.find("\nmnt_id:");
    if (at == std::string::npos) throw SysError("read", "/proc/self/fdinfo/" + fd_name + " (no mnt_id)", EINVAL);
    const std::string mnt_id = info.substr(at + 8, info.find('\n', at + 1) - at - 8);
    const std::string id = mnt_id.substr(mnt_id.find_first_not_of(" \t"));
    char link[PATH_MAX];
    const std::string link_path = "/proc/self/fd/" + fd_name;
    const ssize_t n = readlink(link_path.c_str(), link, sizeof link);
    if (n <= 0 || n == static_cast<ssize_t>(sizeof link)) throw SysError("readlink", link_path, n < 0 ? errno : ENAMETOOLONG);
    const std::string path(link, static_cast<std::size_t>(n));
    // A directory that is gone, or one outside this process's root, has no
    // path to compare: the caller cannot tell, so it refuses.
    if (path.front() != '/' || path.ends_with(" (deleted)"))
        throw SysError("readlink", link_path + " (\"" + path + "\": not a path in this mount namespace)", ENOENT);
    std::istringstream lines(read_proc("/proc/self/mountinfo"));
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream fields(line);
        std::string mount_id, parent, device, root, mount_point;
        if (!(fields >> mount_id >> parent >> device >> root >> mount_point) || mount_id != id) continue;
        const std::string mp = unescape_mountinfo_field(mount_point);
        if (!is_at_or_below(path, mp)) break;
        std::string below = mp == "/" ? path : path.substr(mp.size());
        std::string place = unescape_mountinfo_field(root);
        if (place == "/") place.clear();
        place += below == "/" ? "" : below;
        return {device, place.empty() ? "/" : place};
    }
    throw SysError("read", "/proc/self/mountinfo (no mount " + id + " holding " + path + ")", ENOENT);
}

}  // namespace

DiskOverlap disk_overlap(int a, int b) {
    struct stat sa {}, sb {};
    if (fstat(a, &sa) != 0) throw SysError("fstat", "a directory compared on disk", errno);
    if (fstat(b, &sb) != 0) throw SysError("fstat", "a directory compared on disk", errno);
    if (same_inode(sa, sb)) return DiskOverlap::same;
    if (is_at_or_below_on_disk(a, sb)) return DiskOverlap::inside;
    if (is_at_or_below_on_disk(b, sa)) return DiskOverlap::contains;
    // The walks follow the mounts the fds were opened through: a bind mount of
    // a subdirectory leads ".." to its mount point, not to the subdirectory's
    // parent. Where each lies in its file system does not depend on that.
    const DiskPlace pa = disk_place(a), pb = disk_place(b);
    if (pa.device != pb.device) return DiskOverlap::none;
    if (pa.path == pb.path) return DiskOverlap::same;
    if (is_at_or_below(pa.path, pb.path)) return DiskOverlap::inside;
    if (is_at_or_below(pb.path, pa.path)) return DiskOverlap::contains;
    return DiskOverlap::none;
}

const char* disk_overlap_words(DiskOverlap o) {
    switch (o) {
        case DiskOverlap::same: return "is";
        case DiskOverlap::inside: return "lies inside";
        case DiskOverlap::contains: return "contains";
        case DiskOverlap::none: break;
    }
    return "";
}

}  // namespace corral::rootfs
