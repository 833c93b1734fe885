#include "base/bounded_lock.hpp"

#include <sys/file.h>

#include <cerrno>
#include <thread>

#include "base/parse.hpp"
#include "base/sys_error.hpp"

namespace corral {

void lock_within(int fd, const std::string& path, LockKind kind, std::chrono::milliseconds bound) {
    using Clock = std::chrono::steady_clock;
    const int op = (kind == LockKind::exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
    const auto until = Clock::now() + bound;
    // flock has no timed form: the holder is asked again every 20 ms (a
    // SIGALRM would reach every thread's blocking calls, not only this one).
    for (;;) {
        if (::flock(fd, op) == 0) return;
        if (errno == EINTR) continue;
        if (errno != EWOULDBLOCK) throw SysError("flock", path, errno);
        if (Clock::now() >= until)
            throw SysError("flock", path + ": still held by another process after " + format_duration(bound) +
                                        " (corral waits no longer)", EWOULDBLOCK);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

}  // namespace corral
