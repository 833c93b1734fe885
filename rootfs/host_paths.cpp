#include "rootfs/host_paths.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "base/sys_error.hpp"

namespace corral::rootfs {
namespace {

namespace fs = std::filesystem;

std::string refusal(std::string_view option, const std::string& path, const std::string& why) {
    return std::string(option) + " " + path + ": " + why +
           "; corral uses such a path only if no one but root can create, rename or replace a directory on the "
           "way (else a sandbox acting as another user could redirect root's writes and mounts)";
}

std::string owner_problem(const struct stat& st) {
    std::string s = " is owned by uid " + std::to_string(st.st_uid);
    if (st.st_uid == 65534) s += " (root squashed to nobody, e.g. on NFS? use a local directory)";
    return s;
}

struct Walk {
    fs::path existing = "/";       // the longest existing prefix
    std::vector<std::string> tail; // the components that do not exist yet
};

// Checks the components of `p` from "/" down; stops at the first missing one.
// A missing part is fine only below a directory nobody but root can write
// (in a sticky one someone else could take the name first).
Walk check_components(std::string_view option, const std::string& path, const fs::path& p) {
    Walk w;
    fs::path prefix;
    bool existing_open_to_others = false;
    bool missing = false;
    for (const auto& part : p) {
        if (missing) {
            w.tail.push_back(part.string());
            continue;
        }
        prefix /= part;
        struct stat st {};
        if (lstat(prefix.c_str(), &st) != 0) {
            int err = errno;
            if (err == ENOTDIR) throw UsageError(refusal(option, path, w.existing.string() + " is not a directory"));
            if (err == EACCES)
                throw UsageError(refusal(option, path, "root may not look into " + w.existing.string() +
                                                           " (root squashed on a network file system?)"));
            if (err != ENOENT) throw SysError("lstat", std::string(option) + " " + prefix.string(), err);
            if (existing_open_to_others)
                throw UsageError(refusal(option, path,
                                         w.existing.string() + " is writable by others, so " + prefix.string() +
                                             " could be created by someone else first; create it (root-owned) "
                                             "beforehand, or pick a parent only root can write"));
            missing = true;
            w.tail.push_back(part.string());
            continue;
        }
        if (st.st_uid != 0) throw UsageError(refusal(option, path, prefix.string() + owner_problem(st)));
        const bool others_write = S_ISDIR(st.st_mode) && (st.st_mode & 022);
        if (others_write && !(st.st_mode & S_ISVTX))
            throw UsageError(refusal(option, path, prefix.string() + " is writable by group or others (and not sticky)"));
        w.existing = prefix;
        existing_open_to_others = others_write;
    }
    return w;
}

// The walk on the path as given, then on the real location of its existing
// part followed by the same missing tail (a root-owned symlink may lead into
// a directory others can write). Returns the real walk.
Walk check_both(std::string_view option, const std::string& path) {
    for (const auto& part : fs::path(path))
        if (part == "..")
            throw UsageError(std::string(option) + " " + path + ": contains \"..\"; give the path without it");
    const fs::path given = fs::absolute(path).lexically_normal();
    Walk w = check_components(option, path, given);
    char* real = realpath(w.existing.c_str(), nullptr);
    if (!real) throw SysError("realpath", std::string(option) + " " + w.existing.string(), errno);
    fs::path resolved = real;
    std::free(real);
    for (const auto& t : w.tail) resolved /= t;
    return check_components(option, path, resolved);
}

}  // namespace

void require_root_only_tree(std::string_view option, const std::string& path) { check_both(option, path); }

Fd open_root_only_dir(std::string_view option, const std::string& path, mode_t leaf_mode) {
    const Walk w = check_both(option, path);
    // Down the real path by fd, never following a link: what was checked is
    // what is opened, and what is missing is made here with exact modes
    // (0755 on the way, leaf_mode for the leaf; the umask plays no part).
    fs::path all = w.existing;
    for (const auto& t : w.tail) all /= t;
    Fd cur(open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!cur.valid()) throw SysError("open", "/", errno);
    std::vector<std::string> parts;
    for (const auto& part : all.relative_path()) parts.push_back(part.string());
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
            if (err == ELOOP || err == ENOTDIR)
                throw UsageError(refusal(option, path, so_far.string() + " changed under corral (now not a directory)"));
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
        cur = std::move(next);
    }
    return cur;
}

}  // namespace corral::rootfs
