// lock_within: a lock someone else holds ends the wait with an error naming
// the lock file, instead of hanging; a free one, or one let go, is taken.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "base/bounded_lock.hpp"
#include "base/fd.hpp"
#include "base/sys_error.hpp"

using namespace corral;
using namespace std::chrono_literals;

namespace {

// A lock file of the test's own, opened twice: two open file descriptions
// contend for a flock as two processes would.
struct LockFile {
    std::string path;
    LockFile() {
        char tmpl[] = "/tmp/corral-lock-XXXXXX";
        Fd fd(mkstemp(tmpl));
        REQUIRE(fd.valid());
        path = tmpl;
    }
    ~LockFile() { ::unlink(path.c_str()); }
    Fd open() const {
        Fd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC));
        REQUIRE(fd.valid());
        return fd;
    }
};

}  // namespace

TEST_CASE("lock_within takes a free lock, shared by readers") {
    LockFile f;
    Fd a = f.open(), b = f.open();
    lock_within(a.get(), f.path, LockKind::shared, 100ms);
    lock_within(b.get(), f.path, LockKind::shared, 100ms);
}

TEST_CASE("lock_within gives up on a held lock after its bound, naming the lock file") {
    LockFile f;
    Fd holder = f.open(), waiter = f.open();
    REQUIRE(::flock(holder.get(), LOCK_EX) == 0);
    for (LockKind kind : {LockKind::exclusive, LockKind::shared}) {
        try {
            lock_within(waiter.get(), f.path, kind, 100ms);
            FAIL("took a lock another description holds");
        } catch (const SysError& e) {
            CHECK(e.error() == EWOULDBLOCK);
            CHECK(std::string(e.what()).find(f.path + ": still held by another process after 100ms") !=
                  std::string::npos);
        }
    }
}

TEST_CASE("lock_within takes a lock its holder lets go within the bound") {
    LockFile f;
    Fd holder = f.open(), waiter = f.open();
    REQUIRE(::flock(holder.get(), LOCK_EX) == 0);
    // Let go a moment later; the waiter, bounded at 60 s, takes it then.
    std::thread release([&] {
        std::this_thread::sleep_for(50ms);
        holder.reset();
    });
    lock_within(waiter.get(), f.path, LockKind::exclusive, 60s);
    release.join();
    Fd third = f.open();
    CHECK(::flock(third.get(), LOCK_EX | LOCK_NB) != 0);  // the waiter has it now
}
