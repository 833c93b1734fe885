// base/background_fdatasync.cpp — see background_fdatasync.hpp.
#include "base/background_fdatasync.hpp"

#include <linux/aio_abi.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <utility>

namespace corral {
namespace {

// glibc has no wrappers for the kernel's AIO calls (its aio_* are POSIX AIO,
// done with threads of the process).
long io_setup(unsigned nr, aio_context_t* ctx) { return ::syscall(SYS_io_setup, nr, ctx); }
long io_destroy(aio_context_t ctx) { return ::syscall(SYS_io_destroy, ctx); }
long io_submit(aio_context_t ctx, long n, iocb** iocbs) { return ::syscall(SYS_io_submit, ctx, n, iocbs); }
long io_getevents(aio_context_t ctx, long min, long max, io_event* events, timespec* timeout) {
    return ::syscall(SYS_io_getevents, ctx, min, max, events, timeout);
}

int fdatasync_now(int fd) {
    while (::fdatasync(fd) < 0)
        if (errno != EINTR) return errno;
    return 0;
}

}  // namespace

BackgroundFdatasync BackgroundFdatasync::start(int fd) {
    BackgroundFdatasync s;
    aio_context_t ctx = 0;
    if (io_setup(1, &ctx) == 0) {
        iocb cb{};
        cb.aio_lio_opcode = IOCB_CMD_FDSYNC;
        cb.aio_fildes = static_cast<std::uint32_t>(fd);
        iocb* list[1] = {&cb};
        long rc;
        do rc = io_submit(ctx, 1, list);
        while (rc < 0 && errno == EINTR);
        if (rc == 1) {
            s.context_ = ctx;
            return s;
        }
        io_destroy(ctx);
    }
    s.result_ = fdatasync_now(fd);
    return s;
}

BackgroundFdatasync::BackgroundFdatasync(BackgroundFdatasync&& other) noexcept
    : context_(std::exchange(other.context_, 0)), result_(other.result_) {}

BackgroundFdatasync::~BackgroundFdatasync() { (void)wait(); }

int BackgroundFdatasync::wait() {
    if (context_ == 0) return result_;
    io_event event{};
    long n;
    do n = io_getevents(context_, 1, 1, &event, nullptr);
    while (n < 0 && errno == EINTR);
    if (n == 1) result_ = event.res < 0 ? static_cast<int>(-event.res) : 0;
    else result_ = n < 0 ? errno : EIO;
    io_destroy(context_);
    context_ = 0;
    return result_;
}

}  // namespace corral
