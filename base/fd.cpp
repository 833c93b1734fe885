#include "base/fd.hpp"

#include <unistd.h>

namespace corral {

void Fd::reset(int fd) noexcept {
    int old = std::exchange(fd_, fd);
    // close() is not retried on EINTR: on Linux the fd is released either way,
    // and a retry could close an fd another thread just opened.
    if (old >= 0) ::close(old);
}

}  // namespace corral
