#include "base/fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <limits>

#include "base/sys_error.hpp"

namespace corral {

std::string read_to_end(int fd, const std::string& what, std::size_t max_bytes) {
    std::string out;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw SysError("read", what, errno);
        if (n == 0) return out;
        out.append(buf, static_cast<std::size_t>(n));
        if (out.size() > max_bytes)
            throw UsageError(what + ": larger than " + std::to_string(max_bytes) + " bytes");
    }
}

std::optional<std::string> read_whole_file(const WholeFileRead& request) {
    const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (request.no_follow ? O_NOFOLLOW : 0);
    Fd fd(::openat(request.dir_fd, request.path.c_str(), flags));
    if (!fd.valid()) {
        if (errno == ENOENT) return std::nullopt;
        throw SysError("open", request.path, errno);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) throw SysError("fstat", request.path, errno);
    if (!S_ISREG(st.st_mode)) throw UsageError(request.path + ": not a regular file");
    return read_to_end(fd.get(), request.path, request.max_bytes);
}

std::string read_to_end(int fd, const std::string& what) {
    return read_to_end(fd, what, std::numeric_limits<std::size_t>::max());
}

void Fd::reset(int fd) noexcept {
    int old = std::exchange(fd_, fd);
    // close() is not retried on EINTR: on Linux the fd is released either way,
    // and a retry could close an fd another thread just opened.
    if (old >= 0) ::close(old);
}

void write_all(int fd, const char* data, std::size_t len, const std::string& what) {
    while (len > 0) {
        ssize_t n = ::write(fd, data, len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw SysError("write", what, errno);
        data += n;
        len -= static_cast<std::size_t>(n);
    }
}

bool is_same_file(int fd, const std::string& path) {
    struct stat by_fd {}, by_path {};
    if (::fstat(fd, &by_fd) != 0 || ::stat(path.c_str(), &by_path) != 0) return false;
    return by_fd.st_dev == by_path.st_dev && by_fd.st_ino == by_path.st_ino;
}

void redirect_output_to_file(const std::string& path) {
    Fd log(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!log.valid()) log = Fd(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    if (!log.valid()) return;
    std::fflush(stdout);
    std::fflush(stderr);
    dup2(log.get(), 1);
    dup2(log.get(), 2);
}

}  // namespace corral
