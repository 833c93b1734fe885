#include "run/state_dir.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/fd.hpp"
#include "base/sys_error.hpp"
#include "rootfs/host_paths.hpp"

namespace corral::run {

namespace {

std::string mode_text(mode_t mode) {
    char b[8];
    std::snprintf(b, sizeof b, "%04o", static_cast<unsigned>(mode & 07777));
    return b;
}

// An existing state dir (`st`): root's and writable by no one else.
void require_state_dir_mode(const std::string& option, const std::string& path, const struct stat& st) {
    if (st.st_uid != 0)
        throw UsageError(option + " " + path + ": owned by uid " + std::to_string(st.st_uid) +
                         "; the state dir must be root's");
    if (st.st_mode & 022)
        throw UsageError(option + " " + path + ": exists with mode " + mode_text(st.st_mode) +
                         "; the state dir must be writable by no one but root" +
                         " (corral never changes an existing directory's mode): fix it or give a new path");
}

}  // namespace

std::string make_private_dir(const std::string& option, const std::string& path, DirRole role) {
    // The directory by fd, reached and (if new) made without following links.
    rootfs::RootOnlyDir dir = rootfs::open_root_only_dir(option, path, 0700);
    if (dir.created) return dir.real_path;  // made just now: root's, 0700
    struct stat st{};
    check_sys(fstat(dir.fd.get(), &st), "fstat", path);
    if (role == DirRole::state) {
        require_state_dir_mode(option, path, st);
        return dir.real_path;
    }
    if (st.st_mode & 077)
        throw UsageError(option + " " + path + ": exists with mode " + mode_text(st.st_mode) +
                         "; a run dir must be root's alone (0700)" +
                         " (corral never changes an existing directory's mode): fix it or give a new path");
    Fd probe(dup(dir.fd.get()));
    DIR* d = probe.valid() ? fdopendir(probe.get()) : nullptr;
    if (!d) throw SysError("opendir", path, errno);
    (void)probe.release();  // owned by d now
    bool empty = true;
    while (dirent* e = readdir(d))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) empty = false;
    closedir(d);
    if (!empty)
        throw UsageError(option + " " + path + ": is not empty; corral writes a fresh run there (give a new directory)");
    return dir.real_path;
}

std::string require_private_state_dir(const std::string& option, const std::string& path) {
    const std::string real = rootfs::require_root_only_tree(option, path);
    struct stat st {};
    if (::lstat(real.c_str(), &st) != 0) {
        if (errno == ENOENT) return real;
        throw SysError("lstat", option + " " + path, errno);
    }
    if (!S_ISDIR(st.st_mode)) throw UsageError(option + " " + path + ": is not a directory");
    require_state_dir_mode(option, path, st);
    return real;
}

}  // namespace corral::run
