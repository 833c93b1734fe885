#include "base/regular_file.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "base/fd.hpp"
#include "base/sys_error.hpp"

namespace corral {

namespace {

// The path an open fd stands for, as this process sees it.
std::string fd_path(int fd, const std::string& where) {
    std::string link = "/proc/self/fd/" + std::to_string(fd);
    std::string out(4096, '\0');
    ssize_t n = ::readlink(link.c_str(), out.data(), out.size());
    if (n < 0) throw SysError("readlink", link + " (" + where + ")", errno);
    if (static_cast<std::size_t>(n) == out.size()) throw UsageError(where + ": path longer than 4095 bytes");
    out.resize(static_cast<std::size_t>(n));
    return out;
}

std::string where_of(const RegularFileRead& r) {
    return r.what + " " + (r.walk == PathWalk::in_root ? r.root + " → " : "") + r.path;
}

// The request's path opened with `flags`, walked as the request says; `root`
// receives the root's fd (in_root), which the caller may need afterwards. An
// invalid Fd with errno set when openat2 fails.
Fd open_walked(const RegularFileRead& r, std::uint64_t flags, Fd& root) {
    int dirfd = AT_FDCWD;
    if (r.walk == PathWalk::in_root) {
        root.reset(::open(r.root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!root.valid()) throw SysError("open", r.root, errno);
        dirfd = root.get();
    }
    open_how how{};
    how.flags = flags;
    how.resolve = RESOLVE_NO_MAGICLINKS | (r.walk == PathWalk::in_root ? RESOLVE_IN_ROOT : RESOLVE_NO_SYMLINKS);
    return Fd(static_cast<int>(::syscall(SYS_openat2, dirfd, r.path.c_str(), &how, sizeof how)));
}

std::optional<ResolvedRegularFile> read_checked(const RegularFileRead& r, bool want_path) {
    const std::string where = where_of(r);
    Fd root;
    // O_NONBLOCK: a FIFO put in the file's place must not hang root here.
    Fd fd = open_walked(r, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, root);
    if (!fd.valid()) {
        if (errno == ENOENT) return std::nullopt;
        if (errno == ELOOP)
            throw UsageError(where + ": the path goes through a symbolic link; name the file itself "
                                     "(root does not follow links others could have planted)");
        throw SysError("openat2", where, errno);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) throw SysError("fstat", where, errno);
    if (!S_ISREG(st.st_mode)) throw UsageError(where + ": not a regular file");
    if (static_cast<std::size_t>(st.st_size) > r.max_bytes)
        throw UsageError(where + ": " + std::to_string(st.st_size) + " bytes, more than the " +
                         std::to_string(r.max_bytes) + " allowed");
    // Bounded by max_bytes + 1 whatever fstat said: a file that grows while
    // it is read is refused, not followed.
    std::string text;
    char buf[16384];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw SysError("read", where, errno);
        if (n == 0) break;
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > r.max_bytes)
            throw UsageError(where + ": grew past the " + std::to_string(r.max_bytes) + " bytes allowed while read");
    }
    ResolvedRegularFile out;
    out.text = std::move(text);
    if (want_path) {
        out.path = fd_path(fd.get(), where);
        if (r.walk == PathWalk::in_root) {
            // Both paths come from the kernel for the same mount namespace, so
            // the file's path starts with the root's ("/" has an empty prefix).
            std::string prefix = fd_path(root.get(), where);
            if (prefix == "/") prefix.clear();
            if (out.path.compare(0, prefix.size() + 1, prefix + "/") != 0)
                throw UsageError(where + ": resolved to " + out.path + ", outside " + r.root);
            out.path.erase(0, prefix.size());
        }
    }
    return out;
}

}  // namespace

std::optional<std::string> read_regular_file(const RegularFileRead& r) {
    auto f = read_checked(r, false);
    if (!f) return std::nullopt;
    return std::move(f->text);
}

std::optional<ResolvedRegularFile> read_regular_file_resolved(const RegularFileRead& r) { return read_checked(r, true); }

bool is_regular_file_at(const RegularFileRead& r) {
    const std::string where = where_of(r);
    Fd root;
    Fd fd = open_walked(r, O_PATH | O_CLOEXEC, root);
    if (!fd.valid()) {
        if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) return false;
        throw SysError("openat2", where, errno);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) throw SysError("fstat", where, errno);
    return S_ISREG(st.st_mode);
}

}  // namespace corral
