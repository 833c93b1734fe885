// tests/base/test_background_fdatasync.cpp — the fdatasync a child process does.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "base/background_fdatasync.hpp"

using corral::BackgroundFdatasync;

TEST_CASE("a background fdatasync of a file: done by a child, reaped by wait(), no thread of ours") {
    char path[] = "/tmp/corral-bgsync-XXXXXX";
    int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, "record\n", 7) == 7);
    auto sync = BackgroundFdatasync::start(fd);
    CHECK(sync.in_background());
    CHECK(sync.wait() == 0);
    CHECK(sync.wait() == 0);  // answered again, not waited for again
    CHECK_FALSE(sync.in_background());
    // Nothing left to reap: the child was ours and is gone.
    CHECK(::waitpid(-1, nullptr, WNOHANG | __WALL) == -1);
    CHECK(errno == ECHILD);
    ::close(fd);
    ::unlink(path);
}

TEST_CASE("a background fdatasync that fails reports the child's errno") {
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    auto sync = BackgroundFdatasync::start(pipe_fds[0]);  // a pipe cannot be synced
    CHECK(sync.wait() == EINVAL);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    CHECK(BackgroundFdatasync::start(-1).wait() == EBADF);
}
