// A stacked filter (seccomp_policy.hpp, SandboxSpec::stacked_seccomp): an OCI
// bundle's profile compiled and installed after corral's own, in a forked
// child (unprivileged thanks to no_new_privs). What it denies is denied with
// its errno; what corral denies stays denied whatever it allows.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string>
#include <vector>

#include "supervisor/seccomp_policy.hpp"

using namespace corral::supervisor;

namespace {

// `body`'s exit code from a child with corral's filter and then `stacked`.
int under_both(const SeccompFilter& stacked, const std::function<int()>& body) {
    static const SeccompProgram corral = compile_seccomp(sandbox_seccomp_rules());
    const SeccompProgram extra = compile_filter(stacked);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(90);
        if (install_seccomp_program(corral) != 0) _exit(91);
        if (install_seccomp_program(extra) != 0) _exit(92);
        // The exit itself, not _exit(): a sanitizer's _exit runs its leak
        // check first, whose calls (clone, ptrace) the stacked filter may deny.
        syscall(SYS_exit_group, body());
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

FilterAction fails_with(int err) { return FilterAction{FilterVerdict::errno_, err}; }

// 0 iff `rc` is a failure with `err`.
int failed_with(long rc, int err) { return rc == -1 && errno == err ? 0 : 1; }

}  // namespace

TEST_CASE("a stacked deny-list: its calls fail with its errno, by argument too; the rest works") {
    SeccompFilter f;
    f.rules.push_back({{"mkdir", "mkdirat"}, fails_with(EACCES), {}});
    // Two conditions on one argument: either denies (runc's reading).
    f.rules.push_back({{"socket"}, fails_with(EPROTO),
                       {{0, AF_INET6, 0, FilterOp::eq}, {0, AF_UNIX, 0, FilterOp::eq}}});
    CHECK(under_both(f, [] { return failed_with(mkdir("/tmp/corral-stacked-test-dir", 0700), EACCES); }) == 0);
    CHECK(under_both(f, [] { return failed_with(socket(AF_INET6, SOCK_STREAM, 0), EPROTO); }) == 0);
    CHECK(under_both(f, [] { return failed_with(socket(AF_UNIX, SOCK_STREAM, 0), EPROTO); }) == 0);
    CHECK(under_both(f, [] { return socket(AF_INET, SOCK_STREAM, 0) >= 0 ? 0 : 1; }) == 0);
}

TEST_CASE("a stacked allow-list: what it leaves out fails with the default errno") {
    SeccompFilter f;
    f.default_action = fails_with(ENOSYS);
    f.rules.push_back({{"exit_group", "exit", "getpid", "write", "rt_sigreturn"}, FilterAction{}, {}});
    CHECK(under_both(f, [] { return failed_with(syscall(SYS_getppid), ENOSYS); }) == 0);
    CHECK(under_both(f, [] { return syscall(SYS_getpid) > 0 ? 0 : 1; }) == 0);
}

TEST_CASE("a stacked filter never allows what corral denies") {
    SeccompFilter f;
    f.default_action = FilterAction{FilterVerdict::kill_process, 1};
    f.rules.push_back({{"unshare", "exit_group", "exit"}, FilterAction{}, {}});
    CHECK(under_both(f, [] { return failed_with(syscall(SYS_unshare, 0x00020000 /* CLONE_NEWNS */), EPERM); }) == 0);
}

TEST_CASE("a stacked filter skips, and names, a call this libseccomp does not know") {
    SeccompFilter f;
    f.rules.push_back({{"no_such_call_at_all", "mkdir"}, fails_with(EACCES), {}});
    std::vector<std::string> skipped;
    (void)compile_filter(f, &skipped);
    CHECK(skipped == std::vector<std::string>{"no_such_call_at_all"});
}
