#include "workspace/child_process.hpp"

#include <fcntl.h>
#include <algorithm>
#include <grp.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fd.hpp"
#include "base/sys_error.hpp"

namespace corral::workspace {

namespace {

// In the child, after fork: no exceptions, exit 127 on any failure.
[[noreturn]] void exec_child(const ChildRun& run, int in_fd, int out_fd, char* const* argv) {
    if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0) _exit(127);
    const int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull < 0 || dup2(devnull, 2) < 0) _exit(127);
    // Extra fds go above every fd we might clobber, then down to 3, 4, ...
    int moved[8];
    const std::size_t n = std::min<std::size_t>(run.extra_fds.size(), 8);
    for (std::size_t i = 0; i < n; ++i)
        if ((moved[i] = fcntl(run.extra_fds[i], F_DUPFD_CLOEXEC, 100)) < 0) _exit(127);
    for (std::size_t i = 0; i < n; ++i)
        if (dup2(moved[i], static_cast<int>(3 + i)) < 0) _exit(127);
    if (run.uid) {
        if (setgroups(0, nullptr) != 0 || setresgid(run.gid, run.gid, run.gid) != 0 ||
            setresuid(*run.uid, *run.uid, *run.uid) != 0)
            _exit(127);
    }
    char path_env[] = "PATH=/usr/bin:/bin";
    char lang_env[] = "LC_ALL=C";
    char home_env[] = "HOME=/nonexistent";
    char* envp[] = {path_env, lang_env, home_env, nullptr};
    execve(argv[0], argv, envp);
    _exit(127);
}

}  // namespace

ChildResult run_child(const ChildRun& run) {
    Fd in(memfd_create("corral-child-stdin", MFD_CLOEXEC));
    if (!in.valid()) throw SysError("memfd_create", run.argv.at(0), errno);
    write_all(in.get(), run.stdin_data.data(), run.stdin_data.size(), "child stdin");
    if (lseek(in.get(), 0, SEEK_SET) != 0) throw SysError("lseek", "child stdin", errno);
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) throw SysError("pipe2", run.argv.at(0), errno);
    Fd read_end(p[0]), write_end(p[1]);
    std::vector<std::string> args = run.argv;
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) throw SysError("fork", run.argv.at(0), errno);
    if (pid == 0) exec_child(run, in.get(), write_end.get(), argv.data());
    write_end.reset();
    ChildResult result;
    char buf[65536];
    for (;;) {
        const ssize_t n = read(read_end.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        const std::size_t room = run.max_output - std::min(run.max_output, result.out.size());
        result.out.append(buf, std::min(room, static_cast<std::size_t>(n)));
        if (static_cast<std::size_t>(n) > room) result.truncated = true;
    }
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR) throw SysError("waitpid", run.argv.at(0), errno);
    result.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    return result;
}

}  // namespace corral::workspace
