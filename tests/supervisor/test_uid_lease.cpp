// UID range parsing, leasing and locking, with a temporary lock directory.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "base/sys_error.hpp"
#include "supervisor/uid_lease.hpp"

using namespace corral::supervisor;
using corral::UsageError;

namespace {

// A fresh lock dir per test: <tmp>/uids (acquire_uid creates it, 0700).
struct TempLockDir {
    std::string root;
    std::string dir;
    TempLockDir() {
        char tmpl[] = "/tmp/corral-uidtest-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        root = tmpl;
        dir = root + "/uids";
    }
    ~TempLockDir() { std::filesystem::remove_all(root); }
    std::string lock(uid_t uid) const { return dir + "/" + std::to_string(uid) + ".lock"; }
};

// UIDs far from the default range and from any real user, so a concurrent
// corral run or a host account cannot make these tests flaky.
constexpr uid_t kBase = 1901000000;

std::string usage_error_of(const std::string& text) {
    try {
        parse_uid_range(text);
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}

bool flock_is_held(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return false;
    bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);
    return held;
}

}  // namespace

TEST_CASE("parse_uid_range accepts FIRST-LAST") {
    auto r = parse_uid_range("1900000000-1900000999");
    CHECK(r.first == 1900000000u);
    CHECK(r.last == 1900000999u);
    auto one = parse_uid_range("5000-5000");
    CHECK(one.first == 5000u);
    CHECK(one.last == 5000u);
    CHECK(parse_uid_range("1-2147483646").last == 2147483646u);
    auto d = default_uid_range();
    CHECK(d.first == 1900000000u);
    CHECK(d.last == 1900000999u);
}

TEST_CASE("parse_uid_range rejects malformed ranges with one clear line") {
    for (const char* bad : {"", "1000", "-", "1000-", "-1000", "20-10", "0-10", "a-b", "10-20x", " 10-20", "10 -20",
                            "10-2147483647", "10-4294967295", "1e3-2e3", "+10-20", "10-20-30", "99999999999999-1"}) {
        std::string msg = usage_error_of(bad);
        CHECK_MESSAGE(!msg.empty(), "accepted: \"" << bad << "\"");
        CHECK(msg.find("--uid-range") != std::string::npos);
        CHECK(msg.find(std::string("\"") + bad + "\"") != std::string::npos);
        CHECK(msg.find("FIRST-LAST") != std::string::npos);
    }
}

TEST_CASE("two leases never share a UID, and the range exhausts with the documented message") {
    TempLockDir tmp;
    UidRange range{kBase, kBase + 2};
    auto a = acquire_uid(range, tmp.dir);
    auto b = acquire_uid(range, tmp.dir);
    auto c = acquire_uid(range, tmp.dir);
    std::set<uid_t> uids{a.uid(), b.uid(), c.uid()};
    CHECK(uids.size() == 3);
    CHECK(a.gid() == a.uid());
    CHECK(flock_is_held(a.lock_path()));
    CHECK(a.lock_path() == tmp.lock(a.uid()));
    struct stat st {};
    REQUIRE(::stat(tmp.dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    try {
        acquire_uid(range, tmp.dir);
        FAIL("a fourth lease from a range of three succeeded");
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()) == "UID range 1901000000-1901000002 is exhausted: all 3 UIDs are leased by "
                                       "running sandboxes; widen --uid-range");
    }
}

TEST_CASE("destroying a lease unlinks its lock file and frees the UID") {
    TempLockDir tmp;
    UidRange range{kBase, kBase};
    uid_t first = 0;
    std::string path;
    {
        auto lease = acquire_uid(range, tmp.dir);
        first = lease.uid();
        path = lease.lock_path();
        CHECK(::access(path.c_str(), F_OK) == 0);
    }
    CHECK(::access(path.c_str(), F_OK) != 0);
    auto again = acquire_uid(range, tmp.dir);
    CHECK(again.uid() == first);
}

TEST_CASE("a moved lease keeps the lock; release is idempotent") {
    TempLockDir tmp;
    UidRange range{kBase, kBase + 1};
    auto a = acquire_uid(range, tmp.dir);
    uid_t uid = a.uid();
    UidLease moved = std::move(a);
    CHECK(moved.held());
    CHECK(moved.uid() == uid);
    CHECK(flock_is_held(moved.lock_path()));
    moved.release();
    moved.release();
    CHECK_FALSE(moved.held());
    CHECK(acquire_uid(range, tmp.dir).uid() == uid);
}

TEST_CASE("a lock file left by a dead holder is taken over; a live holder's is not") {
    TempLockDir tmp;
    UidRange range{kBase, kBase + 1};
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_t holder = ::fork();
    REQUIRE(holder >= 0);
    if (holder == 0) {
        ::close(fds[0]);
        try {
            auto lease = acquire_uid(range, tmp.dir);
            lease.record_run_id("20261130T000000Z-dead01");
            uid_t uid = lease.uid();
            if (::write(fds[1], &uid, sizeof uid) != sizeof uid) ::_exit(1);
            ::pause();  // holds the lease until SIGKILLed: no destructor runs
        } catch (...) {
        }
        ::_exit(1);
    }
    ::close(fds[1]);
    uid_t held = 0;
    REQUIRE(::read(fds[0], &held, sizeof held) == sizeof held);
    ::close(fds[0]);
    CHECK(held == kBase);

    {
        auto other = acquire_uid(range, tmp.dir);
        CHECK(other.uid() == kBase + 1);  // the child's UID is busy
    }
    ::kill(holder, SIGKILL);
    ::waitpid(holder, nullptr, 0);
    // The killed holder never unlinked its file; the kernel dropped its flock.
    CHECK(::access(tmp.lock(kBase).c_str(), F_OK) == 0);
    CHECK(read_lock_run_id(tmp.lock(kBase)) == "20261130T000000Z-dead01");
    CHECK_FALSE(flock_is_held(tmp.lock(kBase)));
    auto taken = acquire_uid(range, tmp.dir);
    CHECK(taken.uid() == kBase);
    taken.record_run_id("20261130T000001Z-new002");
    CHECK(read_lock_run_id(taken.lock_path()) == "20261130T000001Z-new002");
}

TEST_CASE("record_run_id replaces the content entirely") {
    TempLockDir tmp;
    auto lease = acquire_uid(UidRange{kBase, kBase}, tmp.dir);
    lease.record_run_id("a-very-long-run-identifier-0000000000");
    lease.record_run_id("short");
    CHECK(read_lock_run_id(lease.lock_path()) == "short");
    CHECK(read_lock_run_id(tmp.dir + "/missing.lock").empty());
}

TEST_CASE("concurrent acquirers never hold one UID at the same time") {
    // Several processes lease, mark the UID as theirs with O_EXCL, hold it briefly,
    // unmark and release, over and over, from a range smaller than the number of
    // processes: this hammers the unlink-while-locked path (an acquirer that opened
    // the old file must notice it no longer is the lock).
    TempLockDir tmp;
    ::mkdir(tmp.dir.c_str(), 0700);
    std::string marks = tmp.root + "/marks";
    REQUIRE(::mkdir(marks.c_str(), 0700) == 0);
    UidRange range{kBase, kBase + 1};
    constexpr int kWorkers = 6;
    constexpr int kLeasesEach = 60;
    std::vector<pid_t> workers;
    for (int w = 0; w < kWorkers; ++w) {
        pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            int conflicts = 0, leases = 0;
            // Failed attempts are much cheaper than held leases, so count successes
            // (bounded in time) rather than attempts.
            auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
            while (leases < kLeasesEach && std::chrono::steady_clock::now() < deadline) {
                try {
                    auto lease = acquire_uid(range, tmp.dir);
                    ++leases;
                    std::string mark = marks + "/" + std::to_string(lease.uid());
                    int fd = ::open(mark.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0600);
                    if (fd < 0) {
                        ++conflicts;
                        continue;
                    }
                    ::close(fd);
                    ::usleep(2000);  // long against the variation of acquire_uid's /proc scan
                    ::unlink(mark.c_str());
                } catch (const UsageError&) {
                    ::usleep(20);  // exhausted right now: others hold both UIDs
                }
            }
            ::_exit(conflicts > 0 ? 2 : (leases < kLeasesEach ? 3 : 0));
        }
        workers.push_back(pid);
    }
    for (pid_t pid : workers) {
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        REQUIRE(WIFEXITED(status));
        CHECK_MESSAGE(WEXITSTATUS(status) != 2, "two workers held the same UID at once");
        CHECK_MESSAGE(WEXITSTATUS(status) == 0, "worker exit status " << WEXITSTATUS(status));
    }
    // Every lease was released: no lock file is left.
    CHECK(std::filesystem::is_empty(tmp.dir));
}

TEST_CASE("UIDs in /etc/passwd are skipped and named in the exhausted message") {
    TempLockDir tmp;
    // UID 0 is refused outright; UID 1 ("daemon") is present on Debian. Look it up
    // to keep the test honest on hosts without it.
    if (::getpwuid(1) == nullptr) {
        MESSAGE("skipped: this host has no user with UID 1");
        return;
    }
    try {
        acquire_uid(UidRange{1, 1}, tmp.dir);
        FAIL("leased a UID that belongs to an existing user");
    } catch (const UsageError& e) {
        std::string msg = e.what();
        CHECK(msg.find("UID range 1-1 is exhausted") != std::string::npos);
        CHECK(msg.find("1 are users in /etc/passwd") != std::string::npos);
        CHECK(msg.find("widen --uid-range") != std::string::npos);
    }
    CHECK(::access(tmp.lock(1).c_str(), F_OK) != 0);  // no lock file was made for it
}

TEST_CASE("a UID in the skip set is passed over and gets no lock file") {
    // launch_sandbox puts a UID it finds owned by a foreign process here
    // (verify_uid_unused) and leases again.
    TempLockDir tmp;
    auto lease = acquire_uid(UidRange{kBase + 10, kBase + 11}, tmp.dir, {kBase + 10});
    CHECK(lease.uid() == kBase + 11);
    CHECK(::access(tmp.lock(kBase + 10).c_str(), F_OK) != 0);
    try {
        acquire_uid(UidRange{kBase + 10, kBase + 10}, tmp.dir, {kBase + 10});
        FAIL("expected exhaustion");
    } catch (const corral::UsageError& e) {
        std::string msg = e.what();
        CHECK(msg.find("1 own processes outside corral") != std::string::npos);
    }
}
