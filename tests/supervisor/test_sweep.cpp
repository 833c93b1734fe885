// /proc sweeps: by identity and by PID namespace.
#include <doctest/doctest.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>

#include "supervisor/sweep.hpp"

using namespace corral::supervisor;

namespace {
bool has(const std::vector<pid_t>& v, pid_t p) { return std::find(v.begin(), v.end(), p) != v.end(); }

// A child that switched to uid/gid and waits; killed by the caller.
pid_t spawn_as(uid_t uid, gid_t gid, int ready_fd_pair[2]) {
    pid_t pid = ::fork();
    if (pid == 0) {
        ::close(ready_fd_pair[0]);
        if (::setresgid(gid, gid, gid) != 0 || ::setresuid(uid, uid, uid) != 0) ::_exit(1);
        char c = 'r';
        if (::write(ready_fd_pair[1], &c, 1) != 1) ::_exit(1);
        ::pause();
        ::_exit(0);
    }
    ::close(ready_fd_pair[1]);
    char c = 0;
    REQUIRE(::read(ready_fd_pair[0], &c, 1) == 1);
    ::close(ready_fd_pair[0]);
    return pid;
}
}  // namespace

TEST_CASE("processes_of_uid finds this process under its own uid") {
    auto mine = processes_of_uid(::geteuid());
    CHECK(has(mine, ::getpid()));
    // A UID nothing on a test host runs as.
    CHECK(processes_of_uid(1999999999).empty());
}

TEST_CASE("pid namespace inode matches /proc/self/ns/pid and finds this process") {
    struct stat st {};
    REQUIRE(::stat("/proc/self/ns/pid", &st) == 0);
    auto ino = pid_namespace_inode(::getpid());
    REQUIRE(ino.has_value());
    CHECK(*ino == st.st_ino);
    CHECK(has(processes_in_pid_namespace(*ino), ::getpid()));
    CHECK(processes_in_pid_namespace(1).empty());  // no namespace has inode 1
    CHECK_FALSE(pid_namespace_inode(0x7ffffff0).has_value());
}

// Skipped without root (doctest counts it): needs root to switch a child to another uid.
TEST_CASE("a process that switched to an agent uid is found, and is not after it dies (root)" * doctest::skip(::geteuid() != 0)) {
    const uid_t uid = 1999999001;
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_t child = spawn_as(uid, uid, fds);
    CHECK(processes_of_uid(uid) == std::vector<pid_t>{child});
    CHECK(processes_owned_by(uid, uid) == std::vector<pid_t>{child});
    // Skipping kernel threads never skips a user process.
    CHECK(processes_owned_by(uid, uid, KernelThreads::skip) == std::vector<pid_t>{child});
    HostScan scan = scan_host(0, uid, uid);
    CHECK(scan.owned_by == std::vector<pid_t>{child});
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    CHECK(processes_of_uid(uid).empty());
}

TEST_CASE("skipping kernel threads leaves out only processes without a user-space image") {
    // Every process this pass keeps but the full pass also has; the skipped
    // ones (if any: kthreadd's children) have no /proc/<pid>/exe.
    auto all = processes_owned_by(0, 0, KernelThreads::include);
    auto kept = processes_owned_by(0, 0, KernelThreads::skip);
    std::sort(all.begin(), all.end());
    std::sort(kept.begin(), kept.end());
    std::vector<pid_t> skipped;
    std::set_difference(all.begin(), all.end(), kept.begin(), kept.end(), std::back_inserter(skipped));
    for (pid_t p : skipped) {
        char link[64];
        std::snprintf(link, sizeof link, "/proc/%d/exe", static_cast<int>(p));
        char target[8];
        errno = 0;
        ssize_t n = ::readlink(link, target, sizeof target);
        if (n < 0 && errno != ENOENT) continue;  // exited meanwhile
        CHECK_MESSAGE(n < 0, "pid " << p << " has a user-space image but was skipped");
    }
    if (::geteuid() == 0) CHECK(kept.size() < all.size());  // a Linux host always has kernel threads
}

// Skipped without root (doctest counts it): needs root.
TEST_CASE("a process holding only the agent gid is found by processes_owned_by (root)" * doctest::skip(::geteuid() != 0)) {
    const uid_t gid = 1999999002;
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_t child = spawn_as(0, gid, fds);
    CHECK(processes_of_uid(gid).empty());
    CHECK(processes_owned_by(gid, gid) == std::vector<pid_t>{child});
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
}

// Skipped without root (doctest counts it): needs root for CLONE_NEWPID.
TEST_CASE("a child in a new pid namespace is found by that namespace's inode (root)" * doctest::skip(::geteuid() != 0)) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_t child = ::fork();
    if (child == 0) {
        ::close(fds[0]);
        if (::unshare(CLONE_NEWPID) != 0) ::_exit(1);
        pid_t inner = ::fork();  // PID 1 of the new namespace
        if (inner < 0) ::_exit(1);
        if (inner == 0) {
            ::pause();
            ::_exit(0);
        }
        char buf[32];
        int len = std::snprintf(buf, sizeof buf, "%d", static_cast<int>(inner));
        if (::write(fds[1], buf, static_cast<std::size_t>(len)) != len) ::_exit(1);
        ::waitpid(inner, nullptr, 0);
        ::_exit(0);
    }
    ::close(fds[1]);
    char buf[32] = {};
    REQUIRE(::read(fds[0], buf, sizeof buf - 1) > 0);
    ::close(fds[0]);
    pid_t inner = static_cast<pid_t>(std::atoi(buf));
    auto ino = pid_namespace_inode(inner);
    REQUIRE(ino.has_value());
    CHECK(*ino != *pid_namespace_inode(::getpid()));
    CHECK(processes_in_pid_namespace(*ino) == std::vector<pid_t>{inner});
    ::kill(inner, SIGKILL);
    ::waitpid(child, nullptr, 0);
    CHECK(processes_in_pid_namespace(*ino).empty());
}

// Skipped without root (doctest counts it): needs root.
TEST_CASE("scan_host: one pass finds the PID namespace's processes and a non-dumpable saved-uid-only process (root)" * doctest::skip(::geteuid() != 0)) {
    const uid_t uid = 1999999003;
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_t child = ::fork();
    if (child == 0) {
        ::close(fds[0]);
        // Only the saved uid is the agent's, and /proc/<pid> shows root as the
        // owner (non-dumpable): a stat()-based sweep would miss it.
        if (::prctl(PR_SET_DUMPABLE, 0) != 0 || ::setresuid(0, 0, uid) != 0) ::_exit(1);
        char c = 'r';
        if (::write(fds[1], &c, 1) != 1) ::_exit(1);
        ::pause();
        ::_exit(0);
    }
    ::close(fds[1]);
    char c = 0;
    REQUIRE(::read(fds[0], &c, 1) == 1);
    ::close(fds[0]);
    struct stat owner {};
    REQUIRE(::stat(("/proc/" + std::to_string(child)).c_str(), &owner) == 0);
    CHECK(owner.st_uid == 0);

    auto ns = pid_namespace_inode(::getpid());
    REQUIRE(ns.has_value());
    HostScan scan = scan_host(*ns, uid, uid);
    CHECK(has(scan.in_pid_namespace, ::getpid()));
    CHECK(has(scan.in_pid_namespace, child));
    CHECK(scan.owned_by == std::vector<pid_t>{child});
    CHECK(scan_host(1, uid, uid).in_pid_namespace.empty());

    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    CHECK(scan_host(*ns, uid, uid).owned_by.empty());
}

// Skipped without root (doctest counts it): needs root to switch a child to another uid.
TEST_CASE("kill_if_owned_by and kill_if_in_cgroup signal only a process that still matches (root)" * doctest::skip(::geteuid() != 0)) {
    const uid_t uid = 1999999003;
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_t child = spawn_as(uid, uid, fds);
    auto alive = [&] { return ::waitpid(child, nullptr, WNOHANG) == 0; };
    // Another identity, or a cgroup the child is not in: left alone.
    CHECK_FALSE(kill_if_owned_by(child, uid + 1, uid + 1));
    CHECK_FALSE(kill_if_in_cgroup(child, "/corral/no-such-run"));
    CHECK(alive());
    // A pid with no process at all: nothing happens.
    CHECK_FALSE(kill_if_owned_by(0x7ffffff0, uid, uid));
    // Its own identity: killed.
    CHECK(kill_if_owned_by(child, uid, uid));
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
}
