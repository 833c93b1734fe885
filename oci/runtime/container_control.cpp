// oci/runtime/container_control.cpp — kills and execs while the container's
// process runs.
#include "oci/runtime/container_control.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/sys_error.hpp"
#include "run/exec_wire.hpp"
#include "run/outcome.hpp"
#include "supervisor/init_channel.hpp"
#include "supervisor/invocation.hpp"

namespace corral::oci {

namespace {

using supervisor::Sandbox;

// The pid behind a pidfd (its fdinfo's "Pid:" line), or 0.
pid_t pid_of_pidfd(int pidfd) {
    FILE* f = std::fopen(("/proc/self/fdinfo/" + std::to_string(pidfd)).c_str(), "re");
    if (f == nullptr) return 0;
    char line[256];
    long pid = 0;
    while (std::fgets(line, sizeof line, f) != nullptr)
        if (std::sscanf(line, "Pid: %ld", &pid) == 1) break;
    std::fclose(f);
    return pid > 0 ? static_cast<pid_t>(pid) : 0;
}

// The first pid in /proc/PID/task/PID/children (the oldest child), or 0.
pid_t first_child(pid_t pid) {
    const std::string path = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children";
    FILE* f = std::fopen(path.c_str(), "re");
    if (f == nullptr) return 0;
    long child = 0;
    if (std::fscanf(f, "%ld", &child) != 1) child = 0;
    std::fclose(f);
    return static_cast<pid_t>(child);
}

// A pidfd first: a pid read from /proc may be reused by the time it is used.
std::string signal_pid(pid_t pid, int sig) {
    Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd.valid()) return "pidfd_open(" + std::to_string(pid) + "): " + errno_text(errno);
    if (supervisor::signal_through_pidfd(pidfd.get(), sig) != 0)
        return "pidfd_send_signal(" + std::to_string(pid) + "): " + errno_text(errno);
    return "";
}

// Namespace inits (the invocations' reapers) take only the signals they
// handle: a signal to each is harmless; the box's own init is left out.
std::string signal_every_box_process(const Sandbox& box, int sig) {
    for (long pid : box_processes(box)) (void)kill(static_cast<pid_t>(pid), sig);
    return "";
}

std::string signal_through(int pidfd, int sig, const char* whom) {
    if (supervisor::signal_through_pidfd(pidfd, sig) != 0 && errno != ESRCH)
        return std::string("pidfd_send_signal(") + whom + ", " + sigabbrev_np(sig) + "): " + errno_text(errno);
    return "";
}

// An exec's stdin: the caller's pipe, FIFO, file or socket; anything else
// (a terminal: exec has no console yet) is not passed, and the process
// reads /dev/null.
int passable_stdin(const Fd& fd) {
    struct stat st {};
    if (!fd.valid() || ::fstat(fd.get(), &st) != 0) return -1;
    return S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode) ? fd.get() : -1;
}

}  // namespace

std::vector<long> box_processes(const Sandbox& box) {
    std::vector<long> pids;
    // Hybrid cgroups: one directory per v1 hierarchy, each listing the same
    // processes; the union, each once.
    for (const auto& dir : box.cgroup().paths()) {
        FILE* f = std::fopen((dir + "/cgroup.procs").c_str(), "re");
        if (f == nullptr) continue;
        long pid = 0;
        while (std::fscanf(f, "%ld", &pid) == 1)
            if (pid != box.init_pid()) pids.push_back(pid);
        std::fclose(f);
    }
    std::sort(pids.begin(), pids.end());
    pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
    return pids;
}

std::string deliver_signal(const Sandbox& box, int main_reaper_pidfd, int sig, bool all) {
    if (sig == SIGKILL) return signal_through(box.pidfd(), SIGKILL, "the box's init");
    if (all) return signal_every_box_process(box, sig);
    if (sig == SIGTERM) return signal_through(main_reaper_pidfd, SIGTERM, "the process's reaper");
    const pid_t reaper = pid_of_pidfd(main_reaper_pidfd);
    const pid_t process = reaper > 0 ? first_child(reaper) : 0;
    if (process <= 0) return "the container's process is gone";
    return signal_pid(process, sig);
}

ControlServer::ControlServer(int listener, Sandbox& box, int main_reaper_pidfd)
    : listener_(listener), box_(box), main_reaper_pidfd_(main_reaper_pidfd), stop_(eventfd(0, EFD_CLOEXEC)) {
    if (!stop_.valid()) throw SysError("eventfd", "the container's control server", errno);
    thread_ = std::thread([this] { serve(); });
}

bool ControlServer::stop() {
    if (thread_.joinable()) {
        const std::uint64_t one = 1;
        (void)!::write(stop_.get(), &one, sizeof one);
        thread_.join();
    }
    std::vector<std::thread> execs;
    {
        std::lock_guard<std::mutex> hold(execs_lock_);
        execs.swap(execs_);
    }
    abandon_.store(true);
    if (!execs.empty()) (void)supervisor::signal_through_pidfd(box_.pidfd(), SIGKILL);
    for (auto& t : execs) t.join();
    return box_killed_.load();
}

void ControlServer::serve() {
    for (;;) {
        pollfd fds[2] = {{listener_, POLLIN, 0}, {stop_.get(), POLLIN, 0}};
        int rc = poll(fds, 2, -1);
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0 || (fds[1].revents & POLLIN)) return;
        if (fds[0].revents & POLLIN) handle(Fd(accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC)));
    }
}

void ControlServer::handle(Fd conn) {
    if (!conn.valid()) return;
    auto got = read_control_request(conn.get());
    if (!got) return answer_control(conn.get(), "not a request");
    ControlRequest& req = got->request;
    if (req.kind == ControlRequest::Kind::start) return answer_control(conn.get(), "the container is already running");
    if (req.kind == ControlRequest::Kind::pids) return answer_pids(conn.get(), box_processes(box_));
    if (req.kind == ControlRequest::Kind::kill) {
        const std::string problem = deliver_signal(box_, main_reaper_pidfd_, req.signal, req.all);
        if (problem.empty() && req.signal == SIGKILL) box_killed_.store(true);
        return answer_control(conn.get(), problem);
    }
    if (got->fds.size() != 3) return answer_control(conn.get(), "exec: expected the caller's stdin, stdout and stderr");
    std::lock_guard<std::mutex> hold(execs_lock_);
    const int number = ++exec_count_;
    execs_.emplace_back([this, c = std::move(conn), r = std::move(req), f = std::move(got->fds), number]() mutable {
        run_exec(std::move(c), std::move(r), std::move(f), number);
    });
}

// One exec: an invocation of the agent's role in the box, supervised as a
// session's exec is; the caller's hang-up stops it (with the box's grace).
void ControlServer::run_exec(Fd conn, ControlRequest request, std::vector<Fd> fds, int number) {
    const supervisor::SandboxSpec& box_spec = box_.spec();
    supervisor::InvocationSpec spec;
    spec.argv = std::move(request.args);
    spec.env = std::move(request.env);
    spec.cwd = request.cwd.empty() ? box_spec.cwd : request.cwd;
    spec.log_dir = box_spec.run_dir + "/execs/" + std::to_string(number);
    spec.stop_grace = box_spec.stop_grace;
    spec.log_limit_bytes = box_spec.log_limit_bytes;
    // A terminal: the pty's master goes to the engine's console socket
    // before the command may start (gated), so it never writes to nobody.
    const bool console = !request.console_socket.empty();
    spec.console = spec.gated = console;
    spec.console_rows = request.rows;
    spec.console_cols = request.cols;
    spec.stdin_fd = console ? -1 : passable_stdin(fds[0]);
    try {
        if (::mkdir((box_spec.run_dir + "/execs").c_str(), 0700) != 0 && errno != EEXIST)
            throw SysError("mkdir", box_spec.run_dir + "/execs", errno);
        check_sys(::mkdir(spec.log_dir.c_str(), 0700), "mkdir", spec.log_dir);
        supervisor::Invocation inv = supervisor::spawn_invocation(box_, spec);
        if (console) {
            send_console(request.console_socket, inv.take_console());
            inv.start_command();
        }
        answer_control(conn.get(), "");
        Fd out = run::own_nonblocking_copy(std::move(fds[1])), err = run::own_nonblocking_copy(std::move(fds[2]));
        supervisor::OutputSinks sinks{out.get(), err.get(), -1};
        sinks.hangup_fd = conn.get();
        sinks.abandon = &abandon_;
        const supervisor::SuperviseResult result = supervisor::supervise(inv, box_, sinks);
        answer_exit(conn.get(), run::command_outcome(result, false).status);
    } catch (const std::exception& e) {
        answer_control(conn.get(), std::string("exec: ") + e.what());
    }
}

}  // namespace corral::oci
