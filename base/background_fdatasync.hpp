// base/background_fdatasync.hpp — an fdatasync(2) that runs while the caller
// goes on, without a thread of the caller's.
//
// For the run's admission record: it must be durable before the command
// starts, and its fdatasync (a journal commit of the disk, ~4 ms here) can
// overlap the sandbox's construction, but launch_sandbox clones only from a
// single-threaded process. So a child process does it: clone3 without
// CLONE_VM (a fork that runs no atfork handler), which calls fdatasync and
// exits with its errno; wait() reads that through the child's pidfd. (Linux
// AIO's IOCB_CMD_FDSYNC needs no process either, but io_destroy, and the
// exit of a process with an AIO context, wait for an RCU grace period:
// 28 ms measured here, seven times the sync.) Where the child cannot be
// made, start() syncs at once instead: slower, never weaker.
#pragma once

namespace corral {

class BackgroundFdatasync {
public:
    // Starts fdatasync(fd); `fd` must stay open until wait() returns.
    static BackgroundFdatasync start(int fd);
    BackgroundFdatasync(BackgroundFdatasync&& other) noexcept;
    BackgroundFdatasync& operator=(BackgroundFdatasync&&) = delete;
    BackgroundFdatasync(const BackgroundFdatasync&) = delete;
    ~BackgroundFdatasync();  // waits if wait() was not called (reaps the child)

    // 0 once the data is on disk, else the fdatasync's errno (or waitid's).
    // Only the first call waits.
    int wait();
    // Whether the sync ran in the background (false: start() did it).
    bool in_background() const { return pidfd_ >= 0; }

private:
    BackgroundFdatasync() = default;
    int pidfd_ = -1;  // the child's; -1 once reaped, or when start() synced
    int result_ = 0;
};

}  // namespace corral
