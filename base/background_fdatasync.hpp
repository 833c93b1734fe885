// base/background_fdatasync.hpp — an fdatasync(2) that runs while the caller
// goes on, without a thread of the caller's.
//
// For the run's admission record: it must be durable before the command
// starts, and its fdatasync (a journal commit of the disk, ~4 ms here) can
// overlap the sandbox's construction, but launch_sandbox clones only from a
// single-threaded process. Linux AIO's IOCB_CMD_FDSYNC (4.18+) does the
// sync on a kernel worker, which is no task of this process. Where the
// kernel refuses it (no AIO: fs.aio-max-nr reached, CONFIG_AIO off, a file
// system without it), start() syncs at once instead: slower, never weaker.
#pragma once

#include <cstdint>

namespace corral {

class BackgroundFdatasync {
public:
    // Starts fdatasync(fd); `fd` must stay open until wait() returns.
    static BackgroundFdatasync start(int fd);
    BackgroundFdatasync(BackgroundFdatasync&& other) noexcept;
    BackgroundFdatasync& operator=(BackgroundFdatasync&&) = delete;
    BackgroundFdatasync(const BackgroundFdatasync&) = delete;
    ~BackgroundFdatasync();  // waits if wait() was not called: the fd may be closed next

    // 0 once the data is on disk, else the fdatasync's errno (or the AIO
    // call's). Only the first call waits.
    int wait();
    // Whether the sync ran in the background (false: start() did it).
    bool in_background() const { return context_ != 0; }

private:
    BackgroundFdatasync() = default;
    std::uint64_t context_ = 0;  // aio_context_t; 0 = none (synced in start(), or waited)
    int result_ = 0;
};

}  // namespace corral
