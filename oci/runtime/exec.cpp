// oci/runtime/exec.cpp — the exec request, and the waiter --detach leaves.
#include "oci/runtime/exec.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

#include "base/fd.hpp"
#include "base/parse.hpp"
#include "base/sys_error.hpp"
#include "oci/bundle_config.hpp"
#include "oci/runtime/container_dir.hpp"
#include "oci/runtime/control.hpp"

namespace corral::oci {

namespace {

// What to run: --process FILE (the spec's process object, read as
// config.json's is), else ARGS with --env and --cwd.
ControlRequest exec_request(const OciArgs& a) {
    ControlRequest r;
    r.kind = ControlRequest::Kind::exec;
    bool terminal = a.tty;
    if (a.process_file) {
        auto text = read_whole_file({*a.process_file, kMaxConfigBytes});
        if (!text) throw UsageError("--process " + *a.process_file + ": no such file");
        ProcessPlan p = read_process_json(*text);
        terminal = terminal || p.terminal;
        if (p.console_size && p.console_size->first <= UINT16_MAX && p.console_size->second <= UINT16_MAX) {
            r.rows = static_cast<std::uint16_t>(p.console_size->first);
            r.cols = static_cast<std::uint16_t>(p.console_size->second);
        }
        r.args = p.args;
        r.env = p.env;
        r.cwd = p.cwd;
    } else {
        if (a.exec_args.empty()) throw UsageError("exec: give --process FILE or the command after the id");
        r.args = a.exec_args;
        r.env = a.env;
        r.cwd = a.cwd.value_or("");
    }
    // As runc: a terminal's master goes to the engine's console socket;
    // corral-oci relays no terminal of its own.
    if (terminal && !a.console_socket)
        throw UsageError("exec: a terminal (--tty, or the process's terminal: true) needs --console-socket SOCKET");
    if (!terminal && a.console_socket)
        throw UsageError("exec: --console-socket without a terminal (--tty, or the process's terminal: true)");
    if (a.console_socket) r.console_socket = std::filesystem::absolute(*a.console_socket).string();
    return r;
}

// --detach: the waiter asks, says "ok" (or why not) on `said`, lets go of
// the caller's stdio (the process has its own copies) and waits.
[[noreturn]] void become_waiter(const ContainerDir& dir, const ControlRequest& request, int said) {
    setsid();
    try {
        const int stdio[3] = {0, 1, 2};
        Fd conn = start_exec(dir, request, stdio);
        (void)!::write(said, "ok", 2);
        ::close(said);
        if (int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC); null_fd >= 0)
            for (int fd = 0; fd < 3; ++fd) dup2(null_fd, fd);
        _exit(wait_for_exec_exit(conn.get()));
    } catch (const std::exception& e) {
        const std::string why = e.what();
        (void)!::write(said, why.data(), why.size());
        _exit(1);
    }
}

}  // namespace

int cmd_exec(const OciArgs& a) {
    ContainerDir dir = ContainerDir::open(a.global.root, a.id);
    const ContainerRecord record = dir.read();
    if (const ContainerStatus s = effective_status(record); s != ContainerStatus::running)
        throw UsageError("container " + a.id + " is not running (" + std::string(to_string(s)) + ")");
    const ControlRequest request = exec_request(a);
    if (!a.detach) {
        const int stdio[3] = {0, 1, 2};
        Fd conn = start_exec(dir, request, stdio);
        if (a.pid_file) write_pid_file(*a.pid_file, getpid());
        return wait_for_exec_exit(conn.get());
    }
    int said[2];
    if (pipe2(said, O_CLOEXEC) != 0) throw SysError("pipe2", "exec --detach", errno);
    std::fflush(nullptr);
    pid_t waiter = fork();
    if (waiter < 0) throw SysError("fork", "exec's waiter", errno);
    if (waiter == 0) {
        ::close(said[0]);
        become_waiter(dir, request, said[1]);
    }
    ::close(said[1]);
    const std::string answer = read_to_end(said[0], "exec's waiter", 4096);
    ::close(said[0]);
    if (answer != "ok") {
        while (waitpid(waiter, nullptr, 0) < 0 && errno == EINTR) {
        }
        throw UsageError(answer.empty() ? "exec's waiter died" : answer);
    }
    if (a.pid_file) write_pid_file(*a.pid_file, waiter);
    return 0;
}

}  // namespace corral::oci
