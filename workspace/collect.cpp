#include "workspace/collect.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <set>

#include "base/fd.hpp"
#include "base/sha256.hpp"
#include "base/sys_error.hpp"
#include "workspace/dir_entries.hpp"
#include "workspace/renames.hpp"

namespace corral::workspace {

std::string digest_of_fd(int fd, const std::string& what) {
    struct stat st {};
    if (fstat(fd, &st) != 0) throw SysError("fstat", what, errno);
    Sha256 sha(static_cast<std::uint64_t>(st.st_size));
    // Sized to the file (4 KiB to 1 MiB) and left uninitialised: a diff hashes
    // both sides of every changed file, and a zeroed 1 MiB buffer per file was
    // a fifth of an apply's time (docs/benchmarks.md).
    const std::size_t size = static_cast<std::size_t>(std::clamp<off_t>(st.st_size + 1, 4096, 1 << 20));
    auto buf = std::make_unique_for_overwrite<char[]>(size);
    for (off_t at = 0;;) {
        const ssize_t n = pread(fd, buf.get(), size, at);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw SysError("pread", what, errno);
        if (n == 0) break;
        sha.update(buf.get(), static_cast<std::size_t>(n));
        at += n;
    }
    return sha.finish_hex();
}

namespace {

constexpr int kMaxWalkDepth = 256;

NodeType type_of(mode_t m) {
    if (S_ISDIR(m)) return NodeType::directory;
    if (S_ISLNK(m)) return NodeType::symlink;
    if (S_ISFIFO(m)) return NodeType::fifo;
    if (S_ISSOCK(m)) return NodeType::socket;
    if (S_ISCHR(m)) return NodeType::char_device;
    if (S_ISBLK(m)) return NodeType::block_device;
    return NodeType::regular;
}

std::map<std::string, std::string> user_xattrs(int fd, const std::string& what) {
    std::map<std::string, std::string> out;
    char names[65536];
    const ssize_t len = flistxattr(fd, names, sizeof names);
    if (len < 0) {
        if (errno == ENOTSUP) return out;
        throw SysError("flistxattr", what, errno);
    }
    for (ssize_t at = 0; at < len; at += static_cast<ssize_t>(std::strlen(names + at)) + 1) {
        if (std::strncmp(names + at, "user.", 5) != 0) continue;
        char value[65536];
        const ssize_t n = fgetxattr(fd, names + at, value, sizeof value);
        if (n < 0) throw SysError("fgetxattr", what + " " + (names + at), errno);
        out.emplace(names + at, std::string(value, static_cast<std::size_t>(n)));
    }
    return out;
}

// One side's entry `name` in dir_fd; nullopt when absent (or dir_fd is -1).
std::optional<Node> read_node(int dir_fd, const std::string& name, const std::string& what, struct stat* raw = nullptr) {
    if (dir_fd < 0) return std::nullopt;
    struct stat st {};
    if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return std::nullopt;
        throw SysError("fstatat", what, errno);
    }
    if (raw) *raw = st;
    Node n;
    n.type = type_of(st.st_mode);
    n.mode = st.st_mode & 07777;
    n.uid = st.st_uid;
    n.gid = st.st_gid;
    n.nlink = st.st_nlink;
    n.ctime_sec = st.st_ctim.tv_sec;
    n.ctime_nsec = st.st_ctim.tv_nsec;
    if (n.type == NodeType::char_device || n.type == NodeType::block_device) n.rdev = st.st_rdev;
    if (n.type == NodeType::symlink) {
        std::string t(static_cast<std::size_t>(st.st_size) + 1, '\0');
        const ssize_t len = readlinkat(dir_fd, name.c_str(), t.data(), t.size());
        if (len < 0) throw SysError("readlinkat", what, errno);
        t.resize(static_cast<std::size_t>(len));
        n.target = t;
        return n;
    }
    if (n.type != NodeType::regular && n.type != NodeType::directory) return n;
    // O_NONBLOCK: a FIFO swapped in after the fstatat never hangs the walk.
    Fd fd(openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    if (!fd.valid() && errno == ENOENT) return std::nullopt;  // removed since the fstatat (a live layer)
    if (!fd.valid()) throw SysError("openat", what, errno);
    n.xattrs = user_xattrs(fd.get(), what);
    if (n.type == NodeType::regular) {
        n.size = static_cast<std::uint64_t>(st.st_size);
        n.sha256 = digest_of_fd(fd.get(), what);
    }
    return n;
}

bool is_whiteout(const struct stat& st) { return S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0); }

bool is_opaque(int dir_fd, const std::string& name) {
    char v[4] = {};
    Fd fd(openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return false;
    const ssize_t n = fgetxattr(fd.get(), "trusted.overlay.opaque", v, sizeof v);
    return n == 1 && v[0] == 'y';
}

Fd open_dir(int parent, const std::string& name) {
    if (parent < 0) return Fd();
    return Fd(openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

class Collector {
public:
    Collector(std::int64_t fence, dev_t host_dev, const IdTranslation* live_ids)
        : fence_(fence), host_dev_(host_dev), live_ids_(live_ids) {}
    std::vector<Change> changes;

    // Both sides of directory `rel` (host_fd -1: the host has none, or the
    // layer replaced it).
    void walk(int upper_fd, int host_fd, const std::string& rel, bool opaque, int depth) {
        if (depth > kMaxWalkDepth) throw SysError("walk", rel + ": deeper than 256 directories", ELOOP);
        const auto names = dir_entries(upper_fd, rel);
        for (const auto& name : names) entry(upper_fd, host_fd, name, join(rel, name), depth);
        if (!opaque) return;
        // An opaque directory: what the host has and the layer lacks is gone.
        std::set<std::string> kept(names.begin(), names.end());
        for (const auto& name : dir_entries(host_fd, rel))
            if (!kept.count(name)) host_deleted(host_fd, name, join(rel, name), depth);
    }

private:
    std::int64_t fence_;
    dev_t host_dev_;
    const IdTranslation* live_ids_;

    static std::string join(const std::string& rel, const std::string& name) { return rel.empty() ? name : rel + "/" + name; }

    void add(const std::string& path, const std::optional<Node>& before, const std::optional<Node>& after) {
        if (auto c = classify(path, before, after, fence_)) changes.push_back(std::move(*c));
    }

    // A host entry the layer deleted: it, and everything below a directory.
    void host_deleted(int host_fd, const std::string& name, const std::string& rel, int depth) {
        struct stat st {};
        auto before = read_node(host_fd, name, rel, &st);
        if (!before) return;
        if (before->type == NodeType::directory && st.st_dev == host_dev_) {
            Fd sub = open_dir(host_fd, name);
            for (const auto& child : dir_entries(sub.get(), rel)) host_deleted(sub.get(), child, join(rel, child), depth + 1);
        }
        add(rel, before, std::nullopt);
    }

    void entry(int upper_fd, int host_fd, const std::string& name, const std::string& rel, int depth) {
        struct stat ust {};
        auto after = read_node(upper_fd, name, rel, &ust);
        // Gone since the listing: a live layer's agent removed it meanwhile.
        if (!after) return;
        if (is_whiteout(ust)) return host_deleted(host_fd, name, rel, depth);
        if (live_ids_) {
            if (after->uid == live_ids_->agent_uid) after->uid = live_ids_->owner_uid;
            if (after->gid == live_ids_->agent_gid) after->gid = live_ids_->owner_gid;
        }
        struct stat hst {};
        auto before = read_node(host_fd, name, rel, &hst);
        if (after->type != NodeType::directory) {
            // A host directory the layer replaced with something else: its contents went too.
            if (before && before->type == NodeType::directory) {
                Fd sub = open_dir(host_fd, name);
                for (const auto& child : dir_entries(sub.get(), rel)) host_deleted(sub.get(), child, join(rel, child), depth + 1);
            }
            return add(rel, before, after);
        }
        // A directory that is a mount (made since the start) is not the host's tree: not walked.
        if (before && before->type == NodeType::directory && hst.st_dev != host_dev_) before.reset();
        const bool host_dir = before && before->type == NodeType::directory;
        add(rel, before, after);  // added, its attributes changed, or it replaced a file (type-changed)
        Fd up = open_dir(upper_fd, name);
        Fd host = host_dir ? open_dir(host_fd, name) : Fd();
        const bool opaque = host_dir && is_opaque(upper_fd, name);
        walk(up.get(), host.get(), rel, opaque, depth + 1);
    }
};

}  // namespace

std::vector<Change> collect_changes(const std::string& upper_dir, const std::string& workspace_dir,
                                    std::int64_t fence_ns, const IdTranslation* live_ids) {
    Fd upper(open(upper_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!upper.valid()) throw SysError("open", upper_dir, errno);
    Fd host(open(workspace_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!host.valid()) throw SysError("open", workspace_dir, errno);
    struct stat hst {};
    if (fstat(host.get(), &hst) != 0) throw SysError("fstat", workspace_dir, errno);
    Collector c(fence_ns, hst.st_dev, live_ids);
    c.walk(upper.get(), host.get(), "", false, 0);
    std::sort(c.changes.begin(), c.changes.end(), [](const Change& a, const Change& b) { return a.path < b.path; });
    mark_renames(c.changes);
    return c.changes;
}

}  // namespace corral::workspace
