// oci/runtime/container_body.cpp — the supervisor's part of a container's
// life: created, started, killed, ended.
#include "oci/runtime/container_body.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/atomic_file.hpp"
#include "base/sys_error.hpp"
#include "oci/runtime/control.hpp"
#include "run/exec_wire.hpp"
#include "supervisor/init_channel.hpp"

namespace corral::oci {

namespace {

using supervisor::Sandbox;
using supervisor::SuperviseResult;

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

// The box's processes on the host: its init, the invocation's reaper (the
// init's only child in a run) and the command (the reaper's first child).
struct BoxPids {
    pid_t init = 0, reaper = 0, command = 0;
};
BoxPids box_pids(const Sandbox& box) {
    BoxPids p;
    p.init = box.init_pid();
    p.reaper = first_child(p.init);
    if (p.reaper > 0) p.command = first_child(p.reaper);
    return p;
}

// A pidfd first: a pid read from /proc may be reused by the time it is used.
std::string signal_pid(pid_t pid, int sig) {
    Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd.valid()) return "pidfd_open(" + std::to_string(pid) + "): " + errno_text(errno);
    if (supervisor::signal_through_pidfd(pidfd.get(), sig) != 0)
        return "pidfd_send_signal(" + std::to_string(pid) + "): " + errno_text(errno);
    return "";
}

std::string signal_every_box_process(const Sandbox& box, int sig) {
    const BoxPids own = box_pids(box);
    for (const auto& dir : box.cgroup().paths()) {
        FILE* f = std::fopen((dir + "/cgroup.procs").c_str(), "re");
        if (f == nullptr) continue;
        long pid = 0;
        while (std::fscanf(f, "%ld", &pid) == 1)
            if (pid != own.init && pid != own.reaper) (void)kill(static_cast<pid_t>(pid), sig);
        std::fclose(f);
    }
    return "";
}

void write_notes(const std::string& run_dir, const std::vector<ConfigNote>& notes) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& n : notes) j.push_back({{"kind", to_string(n.kind)}, {"field", n.field}, {"text", n.text}});
    write_file_atomically({run_dir, "oci-config.json", 0600, Durability::visible}, j.dump(2) + "\n");
}

void set_status(ContainerLaunch& c, ContainerStatus status) {
    c.record.state.status = status;
    c.dir.write(c.record);
}

// One control connection: a request read, done, answered.
// `box_killed`: set when a SIGKILL was sent to the box's init (its
// process then dies without a status to report).
void serve_connection(int listener, const Sandbox& box, bool started, std::optional<ControlRequest>* start_or_kill,
                      std::atomic<bool>* box_killed = nullptr) {
    Fd conn(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn.valid()) return;
    auto req = read_control_request(conn.get());
    if (!req) return answer_control(conn.get(), "not a request");
    if (req->kind == ControlRequest::Kind::start) {
        if (started) return answer_control(conn.get(), "the container is already running");
        *start_or_kill = req;
        return answer_control(conn.get(), "");
    }
    if (!started) {
        // runc's created container is its init waiting to exec: a signal
        // ends it. Here the box ends without its command having run.
        *start_or_kill = req;
        return answer_control(conn.get(), "");
    }
    const std::string problem = deliver_signal(box, req->signal, req->all);
    if (problem.empty() && req->signal == SIGKILL && box_killed != nullptr) box_killed->store(true);
    answer_control(conn.get(), problem);
}

// Until start, or a kill or a signal to the supervisor before it (then the
// result the run is judged by).
std::optional<SuperviseResult> wait_for_start(int listener, int interrupt_fd, const Sandbox& box) {
    for (;;) {
        pollfd fds[2] = {{listener, POLLIN, 0}, {interrupt_fd, POLLIN, 0}};
        int rc = poll(fds, interrupt_fd >= 0 ? 2 : 1, -1);
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0) throw SysError("poll", "the container's control socket", errno);
        if (interrupt_fd >= 0 && (fds[1].revents & POLLIN)) {
            signalfd_siginfo si{};
            if (::read(interrupt_fd, &si, sizeof si) != sizeof si) continue;
            SuperviseResult r;
            r.interrupted_by = static_cast<int>(si.ssi_signo);
            return r;
        }
        if (fds[0].revents & POLLIN) {
            std::optional<ControlRequest> got;
            serve_connection(listener, box, false, &got);
            if (!got) continue;
            if (got->kind == ControlRequest::Kind::start) return std::nullopt;
            SuperviseResult r;
            r.interrupted_by = got->signal;
            r.stopped_by_request = true;
            return r;
        }
    }
}

// kill requests while the command runs, on a thread of its own beside
// supervise(); ended through an eventfd before the box is torn down.
class KillServer {
public:
    KillServer(int listener, const Sandbox& box) : stop_(eventfd(0, EFD_CLOEXEC)) {
        if (!stop_.valid()) throw SysError("eventfd", "the container's kill server", errno);
        thread_ = std::thread([this, listener, &box] { serve(listener, box); });
    }
    ~KillServer() { stop(); }
    // Ends the thread; whether a kill request took the box down with SIGKILL.
    bool stop() {
        if (thread_.joinable()) {
            const std::uint64_t one = 1;
            (void)!::write(stop_.get(), &one, sizeof one);
            thread_.join();
        }
        return box_killed_.load();
    }

private:
    void serve(int listener, const Sandbox& box) {
        for (;;) {
            pollfd fds[2] = {{listener, POLLIN, 0}, {stop_.get(), POLLIN, 0}};
            int rc = poll(fds, 2, -1);
            if (rc < 0 && errno == EINTR) continue;
            if (rc < 0 || (fds[1].revents & POLLIN)) return;
            std::optional<ControlRequest> unused;
            if (fds[0].revents & POLLIN) serve_connection(listener, box, true, &unused, &box_killed_);
        }
    }
    Fd stop_;
    std::atomic<bool> box_killed_{false};
    std::thread thread_;
};

SuperviseResult serve_container(ContainerLaunch& c, Sandbox& box, int interrupt_fd) {
    const std::string& run_dir = box.spec().run_dir;
    write_notes(run_dir, c.notes);
    const Fd dir = c.dir.open_dir();
    Fd listener = run::listen_at(ContainerDir::control_socket_via(dir.get()));
    c.record.run_id = box.run_id();
    c.record.run_dir = run_dir;
    set_status(c, ContainerStatus::created);
    write_all(c.ready.get(), "ok\n", 3, "create's ready pipe");
    c.ready.reset();
    // The supervisor's own lines go to the run dir from now on: the
    // engine's stdio are the container's output alone.
    redirect_output_to_file(run_dir + "/oci.log");
    if (auto ended = wait_for_start(listener.get(), interrupt_fd, box)) {
        set_status(c, ContainerStatus::stopped);
        return *ended;
    }
    supervisor::start_command(box);
    set_status(c, ContainerStatus::running);
    KillServer kills(listener.get(), box);
    supervisor::OutputSinks sinks{c.out_fd, c.err_fd, interrupt_fd};
    SuperviseResult result = supervisor::supervise(box, sinks);
    // `kill KILL` took the init with the process: no status was reported;
    // the run ended as a stop asked for by the engine (137, "stopped").
    if (kills.stop() && !result.wait_status && !result.interrupted_by) {
        result.interrupted_by = SIGKILL;
        result.stopped_by_request = true;
    }
    // The process has ended (the spec's "stopped"); the teardown's verdict
    // and the exit status follow once the Run has torn the box down.
    set_status(c, ContainerStatus::stopped);
    return result;
}

}  // namespace

std::string deliver_signal(const Sandbox& box, int sig, bool all) {
    if (sig == SIGKILL) {
        if (supervisor::signal_through_pidfd(box.pidfd(), SIGKILL) != 0 && errno != ESRCH)
            return "pidfd_send_signal(the box's init, SIGKILL): " + errno_text(errno);
        return "";
    }
    if (all) return signal_every_box_process(box, sig);
    if (sig == SIGTERM) {
        if (supervisor::signal_through_pidfd(box.pidfd(), SIGTERM) != 0 && errno != ESRCH)
            return "pidfd_send_signal(the box's init, SIGTERM): " + errno_text(errno);
        return "";
    }
    const BoxPids pids = box_pids(box);
    if (pids.command <= 0) return "the container's process is gone";
    return signal_pid(pids.command, sig);
}

run::RunBody container_body(ContainerLaunch& launch) {
    run::RunBody body;
    body.prefix = "corral-oci";
    body.serve = [&launch](Sandbox& box, int interrupt_fd, const run::BodyContext&) {
        return serve_container(launch, box, interrupt_fd);
    };
    return body;
}

}  // namespace corral::oci
