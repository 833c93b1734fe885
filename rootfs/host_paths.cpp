#include "rootfs/host_paths.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "base/sys_error.hpp"

namespace corral::rootfs {
namespace {

std::string refusal(std::string_view option, const std::string& path, const std::string& why) {
    return std::string(option) + " " + path + ": " + why +
           "; corral uses such a path only if no one but root can create, rename or replace a directory on the "
           "way (else a sandbox acting as another user could redirect root's writes and mounts)";
}

// Checks the components of `p` from "/" down; returns the longest existing prefix.
std::filesystem::path check_components(std::string_view option, const std::string& path, const std::filesystem::path& p) {
    std::filesystem::path prefix;
    std::filesystem::path existing = "/";
    bool existing_open_to_others = false;
    for (const auto& part : p) {
        prefix /= part;
        struct stat st {};
        if (lstat(prefix.c_str(), &st) != 0) {
            int err = errno;
            if (err == ENOTDIR) throw UsageError(refusal(option, path, existing.string() + " is not a directory"));
            if (err != ENOENT) throw SysError("lstat", std::string(option) + " " + prefix.string(), err);
            // Root creates the rest, which is safe only where nobody else
            // can put something in its place first (not even in a sticky
            // directory: the name is free until root takes it).
            if (existing_open_to_others)
                throw UsageError(refusal(option, path,
                                         existing.string() + " is writable by others, so " + prefix.string() +
                                             " could be created by someone else first; create it (root-owned) "
                                             "beforehand, or pick a parent only root can write"));
            break;
        }
        const bool root_owned = st.st_uid == 0;
        const bool others_write = S_ISDIR(st.st_mode) && (st.st_mode & 022);
        const bool sticky = st.st_mode & S_ISVTX;
        if (!root_owned)
            throw UsageError(refusal(option, path, prefix.string() + " is owned by uid " + std::to_string(st.st_uid)));
        if (others_write && !sticky)
            throw UsageError(refusal(option, path, prefix.string() + " is writable by group or others (and not sticky)"));
        existing = prefix;
        existing_open_to_others = others_write;
    }
    return existing;
}

}  // namespace

void require_root_only_tree(std::string_view option, const std::string& path) {
    // ".." is resolved by the kernel after the symlink before it, not
    // lexically: a path with it would be checked somewhere else than used.
    for (const auto& part : std::filesystem::path(path))
        if (part == "..")
            throw UsageError(std::string(option) + " " + path + ": contains \"..\"; give the path without it");
    const std::filesystem::path given = std::filesystem::absolute(path).lexically_normal();
    const std::filesystem::path existing = check_components(option, path, given);
    // Where the existing part really is (through root's symlinks), the same rule.
    char* real = realpath(existing.c_str(), nullptr);
    if (!real) throw SysError("realpath", std::string(option) + " " + existing.string(), errno);
    std::filesystem::path resolved = real;
    std::free(real);
    check_components(option, path, resolved);
}

}  // namespace corral::rootfs
