#include "base/remove_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/fd.hpp"
#include "base/sys_error.hpp"

namespace corral {

namespace {

// One directory on the way down: its name in its parent, which directory it
// is, and the subdirectories of it still to remove.
struct Level {
    std::string name;
    dev_t dev;
    ino_t ino;
    std::vector<std::string> subdirs;
};

Fd open_directory_at(int dir_fd, const std::string& name) {
    Fd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) throw SysError("openat", name, errno);
    return fd;
}

// Unlinks every entry of `dir` that is not a directory; returns the names of
// those that are. Reads through a duplicate, so `dir` itself stays open.
std::vector<std::string> remove_files_list_subdirs(const Fd& dir, const std::string& name) {
    Fd listing(::dup(dir.get()));
    if (!listing.valid()) throw SysError("dup", name, errno);
    DIR* d = ::fdopendir(listing.get());
    if (d == nullptr) throw SysError("fdopendir", name, errno);
    (void)listing.release();  // owned by d now
    std::vector<std::string> subdirs;
    errno = 0;
    while (dirent* e = ::readdir(d)) {
        if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
        struct stat st {};
        const bool is_dir = e->d_type == DT_DIR ||
                            (e->d_type == DT_UNKNOWN && ::fstatat(dir.get(), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                             S_ISDIR(st.st_mode));
        if (is_dir) subdirs.emplace_back(e->d_name);
        else if (::unlinkat(dir.get(), e->d_name, 0) != 0 && errno != ENOENT) {
            const int err = errno;
            ::closedir(d);
            throw SysError("unlinkat", name + "/" + e->d_name, err);
        }
        errno = 0;
    }
    const int err = errno;
    ::closedir(d);
    if (err != 0) throw SysError("readdir", name, err);
    return subdirs;
}

Level level_of(const Fd& dir, const std::string& name) {
    struct stat st {};
    check_sys(::fstat(dir.get(), &st), "fstat", name);
    return {name, st.st_dev, st.st_ino, remove_files_list_subdirs(dir, name)};
}

// The parent of `dir` by "..", checked to be the directory the walk came down from.
Fd parent_of(const Fd& dir, const Level& expected) {
    Fd parent = open_directory_at(dir.get(), "..");
    struct stat st {};
    check_sys(::fstat(parent.get(), &st), "fstat", expected.name + "/..");
    if (st.st_dev != expected.dev || st.st_ino != expected.ino)
        throw SysError("openat", expected.name + ": its \"..\" is not the directory it was reached from (moved while "
                                                 "being removed)",
                       EXDEV);
    return parent;
}

}  // namespace

void remove_tree_at(int dir_fd, const std::string& name) {
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return;
        throw SysError("fstatat", name, errno);
    }
    if (!S_ISDIR(st.st_mode)) {
        if (::unlinkat(dir_fd, name.c_str(), 0) != 0 && errno != ENOENT) throw SysError("unlinkat", name, errno);
        return;
    }
    Fd current = open_directory_at(dir_fd, name);
    std::vector<Level> path{level_of(current, name)};
    while (true) {
        Level& here = path.back();
        if (!here.subdirs.empty()) {
            const std::string child = std::move(here.subdirs.back());
            here.subdirs.pop_back();
            Fd next(::openat(current.get(), child.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
            if (!next.valid()) {
                if (errno == ENOENT) continue;
                throw SysError("openat", here.name + "/" + child, errno);
            }
            current = std::move(next);
            path.push_back(level_of(current, child));
            continue;
        }
        const std::string done = here.name;
        path.pop_back();
        if (path.empty()) break;
        current = parent_of(current, path.back());
        if (::unlinkat(current.get(), done.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
            throw SysError("unlinkat(AT_REMOVEDIR)", path.back().name + "/" + done, errno);
    }
    current.reset();
    if (::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
        throw SysError("unlinkat(AT_REMOVEDIR)", name, errno);
}

}  // namespace corral
