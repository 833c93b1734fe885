// base/background_fdatasync.cpp — see background_fdatasync.hpp.
#include "base/background_fdatasync.hpp"

#include <linux/sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <utility>

namespace corral {
namespace {

int fdatasync_now(int fd) {
    while (::fdatasync(fd) < 0)
        if (errno != EINTR) return errno;
    return 0;
}

}  // namespace

BackgroundFdatasync BackgroundFdatasync::start(int fd) {
    BackgroundFdatasync s;
    int pidfd = -1;
    clone_args args{};
    args.flags = CLONE_PIDFD | CLONE_CLEAR_SIGHAND;
    args.pidfd = reinterpret_cast<std::uintptr_t>(&pidfd);
    args.exit_signal = 0;  // no SIGCHLD: only wait() reaps it, through the pidfd
    const long pid = ::syscall(SYS_clone3, &args, sizeof args);
    if (pid == 0) {
        // The child: a copy of this process; only async-signal-safe calls.
        int error = 0;
        while (::fdatasync(fd) < 0 && (error = errno) == EINTR) error = 0;
        ::_exit(error > 255 ? EIO : error);
    }
    if (pid > 0) {
        s.pidfd_ = pidfd;
        return s;
    }
    s.result_ = fdatasync_now(fd);
    return s;
}

BackgroundFdatasync::BackgroundFdatasync(BackgroundFdatasync&& other) noexcept
    : pidfd_(std::exchange(other.pidfd_, -1)), result_(other.result_) {}

BackgroundFdatasync::~BackgroundFdatasync() { (void)wait(); }

int BackgroundFdatasync::wait() {
    if (pidfd_ < 0) return result_;
    siginfo_t info{};
    int rc;
    do rc = ::waitid(P_PIDFD, static_cast<id_t>(pidfd_), &info, WEXITED | __WALL);
    while (rc < 0 && errno == EINTR);
    if (rc < 0) result_ = errno;
    else if (info.si_code != CLD_EXITED) result_ = EIO;  // killed: no word that the data is on disk
    else result_ = info.si_status;
    ::close(pidfd_);
    pidfd_ = -1;
    return result_;
}

}  // namespace corral
