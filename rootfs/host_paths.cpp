#include "rootfs/host_paths.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <vector>

#include "base/sys_error.hpp"

namespace corral::rootfs {
namespace {

namespace fs = std::filesystem;

std::string refusal(std::string_view option, const std::string& path, const std::string& why) {
    return std::string(option) + " " + path + ": " + why +
           "; corral uses such a path only if no one but root can create, rename or replace anything on the way "
           "(else a sandbox acting as another user could redirect root's writes and mounts)";
}

std::string owner_problem(const struct stat& st) {
    std::string s = " is owned by uid " + std::to_string(st.st_uid);
    if (st.st_uid == 65534) s += " (root squashed to nobody, e.g. on NFS? use a local directory)";
    return s;
}

std::deque<std::string> components(const std::string& p) {
    std::deque<std::string> out;
    for (const auto& part : fs::path(p)) {
        std::string s = part.string();
        if (s.empty() || s == "/" || s == ".") continue;
        out.push_back(s);
    }
    return out;
}

struct Resolved {
    fs::path real = "/";            // the longest existing part, every symlink on the way followed
    std::vector<std::string> tail;  // what does not exist yet
};

// Follows `path` component by component the way the kernel would, checking
// everything it passes — each directory, each symlink and the symlinks'
// own targets — so that no step of the resolution is anyone's but root's.
Resolved resolve_checked(std::string_view option, const std::string& path) {
    for (const auto& part : fs::path(path))
        if (part == "..")
            throw UsageError(std::string(option) + " " + path + ": contains \"..\"; give the path without it");
    std::deque<std::string> pending = components(fs::absolute(path).string());
    Resolved r;
    struct stat root_st {};
    if (lstat("/", &root_st) != 0) throw SysError("lstat", "/", errno);
    bool open_to_others = (root_st.st_mode & 022) != 0;
    // What was known of each directory on the way down, so that ".." (from a
    // symlink's text) returns to the parent's own state, checked before.
    std::vector<bool> open_above;
    int links = 0;
    while (!pending.empty()) {
        std::string name = pending.front();
        pending.pop_front();
        if (name == "..") {  // only from a symlink's text; r.real has no links, so this is its parent
            r.real = r.real.parent_path();
            if (!open_above.empty()) {
                open_to_others = open_above.back();
                open_above.pop_back();
            }
            continue;
        }
        const fs::path next = r.real / name;
        struct stat st {};
        if (lstat(next.c_str(), &st) != 0) {
            const int err = errno;
            if (err == EACCES)
                throw UsageError(refusal(option, path, "root may not look into " + r.real.string() +
                                                           " (root squashed on a network file system?)"));
            if (err != ENOENT) throw SysError("lstat", std::string(option) + " " + next.string(), err);
            // Root creates the rest, which is safe only where nobody else can
            // put something in its place first (not even in a sticky directory).
            if (open_to_others)
                throw UsageError(refusal(option, path,
                                         r.real.string() + " is writable by others, so " + next.string() +
                                             " could be created by someone else first; create it (root-owned) "
                                             "beforehand, or pick a parent only root can write"));
            r.tail.push_back(name);
            for (auto& rest : pending) {
                if (rest == "..")
                    throw UsageError(refusal(option, path, next.string() + " does not exist"));
                r.tail.push_back(rest);
            }
            return r;
        }
        if (st.st_uid != 0) throw UsageError(refusal(option, path, next.string() + owner_problem(st)));
        if (S_ISLNK(st.st_mode)) {
            if (++links > 40) throw UsageError(refusal(option, path, "too many symbolic links on the way"));
            char buf[PATH_MAX];
            ssize_t n = readlink(next.c_str(), buf, sizeof buf - 1);
            if (n < 0) throw SysError("readlink", next.string(), errno);
            const std::string target(buf, static_cast<std::size_t>(n));
            std::deque<std::string> parts = components(target);
            if (!target.empty() && target.front() == '/') {
                r.real = "/";
                open_to_others = (root_st.st_mode & 022) != 0;
                open_above.clear();
            }
            pending.insert(pending.begin(), parts.begin(), parts.end());
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            const bool others_write = (st.st_mode & 022) != 0;
            if (others_write && !(st.st_mode & S_ISVTX))
                throw UsageError(refusal(option, path, next.string() + " is writable by group or others (and not sticky)"));
            r.real = next;
            open_above.push_back(open_to_others);
            open_to_others = others_write;
            continue;
        }
        if (!pending.empty()) throw UsageError(refusal(option, path, next.string() + " is not a directory"));
        r.real = next;  // the leaf is a file (a ledger, a socket): root's, checked above
    }
    return r;
}

}  // namespace

std::string require_root_only_tree(std::string_view option, const std::string& path) {
    Resolved r = resolve_checked(option, path);
    fs::path all = r.real;
    for (const auto& t : r.tail) all /= t;
    return all.string();
}

RootOnlyDir open_root_only_dir(std::string_view option, const std::string& path, mode_t leaf_mode) {
    const Resolved r = resolve_checked(option, path);
    RootOnlyDir out;
    fs::path all = r.real;
    for (const auto& t : r.tail) all /= t;
    out.real_path = all.string();
    // Down the real path by fd, never following a link: what was checked is
    // what is opened, and what is missing is made here with exact modes
    // (0755 on the way, leaf_mode for the leaf; the umask plays no part).
    Fd cur(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!cur.valid()) throw SysError("open", "/", errno);
    std::vector<std::string> parts;
    for (const auto& part : components(out.real_path)) parts.push_back(part);
    fs::path so_far = "/";
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const bool leaf = i + 1 == parts.size();
        so_far /= parts[i];
        bool made = false;
        const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
        Fd next(openat(cur.get(), parts[i].c_str(), flags));
        if (!next.valid() && errno == ENOENT) {
            if (mkdirat(cur.get(), parts[i].c_str(), 0700) == 0) made = true;
            else if (errno != EEXIST) throw SysError("mkdir", std::string(option) + " " + so_far.string(), errno);
            next.reset(openat(cur.get(), parts[i].c_str(), flags));
        }
        if (!next.valid()) {
            int err = errno;
            if (err == ENOTDIR) throw UsageError(std::string(option) + " " + path + ": " + so_far.string() + " is not a directory");
            if (err == ELOOP)
                throw UsageError(refusal(option, path, so_far.string() + " changed under corral (now a symbolic link)"));
            throw SysError("open", std::string(option) + " " + so_far.string(), err);
        }
        struct stat st {};
        if (fstat(next.get(), &st) != 0) throw SysError("fstat", so_far.string(), errno);
        if (st.st_uid != 0) throw UsageError(refusal(option, path, so_far.string() + owner_problem(st)));
        if (made) {
            if (fchmod(next.get(), leaf ? leaf_mode : 0755) != 0) throw SysError("fchmod", so_far.string(), errno);
        } else if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX)) {
            throw UsageError(refusal(option, path, so_far.string() + " is writable by group or others (and not sticky)"));
        }
        if (leaf) out.created = made;
        cur = std::move(next);
    }
    out.fd = std::move(cur);
    return out;
}

}  // namespace corral::rootfs
