#include "base/fd.hpp"

#include <unistd.h>

#include <cerrno>

#include "base/sys_error.hpp"

namespace corral {

std::string read_to_end(int fd, const std::string& what) {
    std::string out;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw SysError("read", what, errno);
        if (n == 0) return out;
        out.append(buf, static_cast<std::size_t>(n));
    }
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

}  // namespace corral
