#include "rootfs/host_paths.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "base/sys_error.hpp"

namespace corral::rootfs {
namespace {

// Checks the components of `p` from "/" down; returns the longest existing prefix.
std::filesystem::path check_components(std::string_view option, const std::string& path, const std::filesystem::path& p) {
    std::filesystem::path prefix;
    std::filesystem::path existing = "/";
    for (const auto& part : p) {
        prefix /= part;
        struct stat st {};
        if (lstat(prefix.c_str(), &st) != 0) {
            if (errno == ENOENT) break;  // from here on root creates the rest
            throw SysError("lstat", prefix.string(), errno);
        }
        const bool root_owned = st.st_uid == 0;
        const bool others_write = S_ISDIR(st.st_mode) && (st.st_mode & 022) && !(st.st_mode & S_ISVTX);
        if (!root_owned || others_write)
            throw UsageError(std::string(option) + " " + path + ": " + prefix.string() +
                             (root_owned ? " is writable by group or others (and not sticky)"
                                         : " is owned by uid " + std::to_string(st.st_uid)) +
                             "; corral uses it only if no one but root can rename a directory on the way (else a "
                             "sandbox acting as that user could redirect root's writes and mounts)");
        existing = prefix;
    }
    return existing;
}

}  // namespace

void require_root_only_tree(std::string_view option, const std::string& path) {
    const std::filesystem::path given = std::filesystem::absolute(path).lexically_normal();
    const std::filesystem::path existing = check_components(option, path, given);
    // Where the existing part really is (through root's symlinks), the same rule.
    char* real = realpath(existing.c_str(), nullptr);
    if (!real) throw SysError("realpath", existing.string(), errno);
    std::filesystem::path resolved = real;
    std::free(real);
    check_components(option, path, resolved);
}

}  // namespace corral::rootfs
