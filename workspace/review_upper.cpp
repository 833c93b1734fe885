#include "workspace/review_upper.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "base/mountinfo.hpp"
#include "base/sys_error.hpp"
#include "workspace/dir_entries.hpp"

namespace corral::workspace {

void require_reviewable(const std::string& option, const std::string& dir) {
    char real[PATH_MAX];
    if (realpath(dir.c_str(), real) == nullptr) throw UsageError(option + " " + dir + ": " + errno_text(errno));
    const std::string below = std::string(real) == "/" ? "/" : std::string(real) + "/";
    std::ifstream in("/proc/self/mountinfo");
    if (!in) throw SysError("open", "/proc/self/mountinfo", errno);
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        std::string id, parent, devno, root, point;
        fields >> id >> parent >> devno >> root >> point;
        const std::string mount_point = unescape_mountinfo_field(point);
        if (mount_point.starts_with(below))
            throw UsageError(option + " " + dir + ": cannot be reviewed: " + mount_point +
                             " is a mount inside it (the review's overlay shows DIR without the mounts below "
                             "it, and apply would write across them); unmount it, or review a directory "
                             "without mounts");
    }
}

namespace {

constexpr int kMaxCopyDepth = 256;

// What a review reads: the box's own xattrs and the opaque mark (the
// layer's other trusted.overlay.* bookkeeping means nothing outside it).
bool copied_xattr(std::string_view name) { return name.starts_with("user.") || name == "trusted.overlay.opaque"; }

void copy_xattrs(int from, int to, const std::string& what) {
    char names[65536];
    const ssize_t len = flistxattr(from, names, sizeof names);
    if (len < 0) throw SysError("flistxattr", what, errno);
    for (ssize_t at = 0; at < len; at += static_cast<ssize_t>(std::strlen(names + at)) + 1) {
        const char* name = names + at;
        if (!copied_xattr(name)) continue;
        char value[65536];
        const ssize_t n = fgetxattr(from, name, value, sizeof value);
        if (n < 0) throw SysError("fgetxattr", what + " " + name, errno);
        if (fsetxattr(to, name, value, static_cast<std::size_t>(n), 0) != 0)
            throw SysError("fsetxattr", what + " " + name, errno);
    }
}

class UpperCopy {
public:
    UpperCopy(const IdTranslation& ids) : ids_(ids) {}
    CopyOutStats stats;

    void copy_dir(int src, int dst, const std::string& rel, int depth) {
        if (depth > kMaxCopyDepth) throw SysError("copy", rel + ": deeper than 256 directories", ELOOP);
        for (const auto& name : dir_entries(src, rel)) copy_entry(src, dst, name, rel.empty() ? name : rel + "/" + name, depth);
    }

    void copy_entry(int src, int dst, const std::string& name, const std::string& rel, int depth) {
        struct stat st {};
        if (fstatat(src, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) throw SysError("fstatat", rel, errno);
        ++stats.entries;
        if (S_ISDIR(st.st_mode)) {
            if (mkdirat(dst, name.c_str(), 0700) != 0) throw SysError("mkdirat", rel, errno);
            Fd s(openat(src, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            Fd d(openat(dst, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            if (!s.valid() || !d.valid()) throw SysError("openat", rel, errno);
            copy_dir(s.get(), d.get(), rel, depth + 1);
            finish_fd(s.get(), d.get(), st, rel);
        } else if (S_ISREG(st.st_mode)) {
            copy_file(src, dst, name, rel, st);
        } else if (S_ISLNK(st.st_mode)) {
            std::string target(static_cast<std::size_t>(st.st_size) + 1, '\0');
            const ssize_t n = readlinkat(src, name.c_str(), target.data(), target.size());
            if (n < 0) throw SysError("readlinkat", rel, errno);
            target.resize(static_cast<std::size_t>(n));
            if (symlinkat(target.c_str(), dst, name.c_str()) != 0) throw SysError("symlinkat", rel, errno);
            finish_path(dst, name, st, rel);
        } else {
            // Whiteouts (0/0 character devices) and whatever node the box made (FIFO, socket).
            if (mknodat(dst, name.c_str(), st.st_mode & (S_IFMT | 0777), st.st_rdev) != 0)
                throw SysError("mknodat", rel, errno);
            finish_path(dst, name, st, rel);
        }
    }

private:
    const IdTranslation& ids_;
    std::map<std::pair<dev_t, ino_t>, std::string> links_;  // a file of several links: its first copy

    uid_t uid(uid_t u) const { return u == ids_.agent_uid ? ids_.owner_uid : u; }
    gid_t gid(gid_t g) const { return g == ids_.agent_gid ? ids_.owner_gid : g; }

    void copy_file(int src, int dst, const std::string& name, const std::string& rel, const struct stat& st) {
        const auto key = std::make_pair(st.st_dev, st.st_ino);
        if (st.st_nlink > 1) {
            if (auto it = links_.find(key); it != links_.end()) {
                if (linkat(root_, it->second.c_str(), dst, name.c_str(), 0) != 0) throw SysError("linkat", rel, errno);
                return;
            }
            links_.emplace(key, rel);
        }
        Fd in(openat(src, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
        if (!in.valid()) throw SysError("openat", rel, errno);
        Fd out(openat(dst, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (!out.valid()) throw SysError("openat", rel, errno);
        for (off_t left = st.st_size; left > 0;) {
            const ssize_t n = sendfile(out.get(), in.get(), nullptr, static_cast<std::size_t>(std::min<off_t>(left, 1 << 30)));
            if (n < 0) throw SysError("sendfile", rel, errno);
            if (n == 0) break;
            left -= n;
            stats.bytes += static_cast<std::uint64_t>(n);
        }
        finish_fd(in.get(), out.get(), st, rel);
    }

    void finish_fd(int from, int to, const struct stat& st, const std::string& rel) {
        copy_xattrs(from, to, rel);
        if (fchown(to, uid(st.st_uid), gid(st.st_gid)) != 0) throw SysError("fchown", rel, errno);
        if (fchmod(to, st.st_mode & 07777) != 0) throw SysError("fchmod", rel, errno);
        const timespec times[2] = {st.st_atim, st.st_mtim};
        if (futimens(to, times) != 0) throw SysError("futimens", rel, errno);
    }

    void finish_path(int dst, const std::string& name, const struct stat& st, const std::string& rel) {
        if (fchownat(dst, name.c_str(), uid(st.st_uid), gid(st.st_gid), AT_SYMLINK_NOFOLLOW) != 0)
            throw SysError("fchownat", rel, errno);
        const timespec times[2] = {st.st_atim, st.st_mtim};
        if (utimensat(dst, name.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) throw SysError("utimensat", rel, errno);
    }

public:
    int root_ = -1;  // dest_dir's fd: hard links are made relative to it
};

}  // namespace

CopyOutStats copy_out_upper(int upper_mnt_fd, const std::string& dest_dir, const IdTranslation& ids) {
    if (mkdir(dest_dir.c_str(), 0700) != 0) throw SysError("mkdir", dest_dir, errno);
    Fd src(openat(upper_mnt_fd, kUpperSubdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!src.valid()) throw SysError("openat", std::string("the review tmpfs's ") + kUpperSubdir, errno);
    Fd dst(open(dest_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dst.valid()) throw SysError("open", dest_dir, errno);
    struct stat st {};
    if (fstat(src.get(), &st) != 0) throw SysError("fstat", dest_dir, errno);
    UpperCopy copy(ids);
    copy.root_ = dst.get();
    copy.copy_dir(src.get(), dst.get(), "", 0);
    // The root's owner and mode are what the box saw /workspace as.
    copy_xattrs(src.get(), dst.get(), dest_dir);
    const uid_t owner = st.st_uid == ids.agent_uid ? ids.owner_uid : st.st_uid;
    const gid_t group = st.st_gid == ids.agent_gid ? ids.owner_gid : st.st_gid;
    if (fchown(dst.get(), owner, group) != 0) throw SysError("fchown", dest_dir, errno);
    if (fchmod(dst.get(), st.st_mode & 07777) != 0) throw SysError("fchmod", dest_dir, errno);
    return copy.stats;
}

}  // namespace corral::workspace
