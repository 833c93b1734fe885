// oci/runtime/container_body.cpp — the supervisor's part of a container's
// life: created, started, killed, ended.
#include "oci/runtime/container_body.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/atomic_file.hpp"
#include "base/sys_error.hpp"
#include "oci/runtime/container_control.hpp"
#include "oci/runtime/control.hpp"
#include "run/exec_wire.hpp"
#include "supervisor/invocation.hpp"

namespace corral::oci {

namespace {

using supervisor::Sandbox;
using supervisor::SuperviseResult;

void write_notes(const std::string& run_dir, const std::vector<ConfigNote>& notes) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& n : notes) j.push_back({{"kind", to_string(n.kind)}, {"field", n.field}, {"text", n.text}});
    write_file_atomically({run_dir, "oci-config.json", 0600, Durability::visible}, j.dump(2) + "\n");
}

void set_status(ContainerLaunch& c, ContainerStatus status) {
    c.record.state.status = status;
    c.dir.write(c.record);
}

// One control connection before start: start, or a kill (runc's created
// container is its init waiting to exec: a signal ends it; here the box
// ends without its process having run). An exec is refused: nothing runs;
// pids are answered (corral's own, before the process is).
std::optional<ControlRequest> serve_before_start(int listener, const Sandbox& box) {
    Fd conn(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
    if (!conn.valid()) return std::nullopt;
    auto got = read_control_request(conn.get());
    if (!got) {
        answer_control(conn.get(), "not a request");
        return std::nullopt;
    }
    if (got->request.kind == ControlRequest::Kind::exec) {
        answer_control(conn.get(), "the container is not running (created): start it first");
        return std::nullopt;
    }
    if (got->request.kind == ControlRequest::Kind::pids) {
        answer_pids(conn.get(), box_processes(box));
        return std::nullopt;
    }
    answer_control(conn.get(), "");
    return std::move(got->request);
}

// Until start, or a kill or a signal to the supervisor before it (then the
// result the run is judged by).
std::optional<SuperviseResult> wait_for_start(int listener, const Sandbox& box, int interrupt_fd) {
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
            auto got = serve_before_start(listener, box);
            if (!got) continue;
            if (got->kind == ControlRequest::Kind::start) return std::nullopt;
            SuperviseResult r;
            r.interrupted_by = got->signal;
            r.stopped_by_request = true;
            return r;
        }
    }
}

// The container's process: the box's first invocation, in the agent's
// role, with the bundle's cwd, its logs the run dir's own; made now, its
// command held until start (gated); with a terminal, its 0/1/2 a pty.
supervisor::InvocationSpec process_spec(const Sandbox& box, const ContainerLaunch& c) {
    const supervisor::SandboxSpec& s = box.spec();
    supervisor::InvocationSpec spec;
    spec.gated = true;
    spec.console = !c.console_socket.empty();
    spec.console_rows = c.console_rows;
    spec.console_cols = c.console_cols;
    spec.argv = s.argv;
    spec.cwd = s.cwd;
    spec.log_dir = s.run_dir;
    spec.timeout = s.timeout;
    spec.stop_grace = s.stop_grace;
    spec.log_limit_bytes = s.log_limit_bytes;
    return spec;
}

SuperviseResult serve_container(ContainerLaunch& c, Sandbox& box, int interrupt_fd) {
    const std::string& run_dir = box.spec().run_dir;
    write_notes(run_dir, c.notes);
    supervisor::Invocation process = supervisor::spawn_invocation(box, process_spec(box, c));
    if (process.spec().console) send_console(c.console_socket, process.take_console());  // before create returns
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
    if (auto ended = wait_for_start(listener.get(), box, interrupt_fd)) {
        set_status(c, ContainerStatus::stopped);
        return *ended;
    }
    process.start_command();
    set_status(c, ContainerStatus::running);
    ControlServer control(listener.get(), box, process.pidfd());
    supervisor::OutputSinks sinks{c.out_fd, c.err_fd, interrupt_fd};
    SuperviseResult result = supervisor::supervise(process, box, sinks);
    // `kill KILL` took the init with the process: no status was reported;
    // the run ended as a stop asked for by the engine (137, "stopped").
    if (control.stop() && !result.wait_status && !result.interrupted_by) {
        result.interrupted_by = SIGKILL;
        result.stopped_by_request = true;
    }
    // The process has ended (the spec's "stopped"); the teardown's verdict
    // and the exit status follow once the Run has torn the box down.
    set_status(c, ContainerStatus::stopped);
    return result;
}

}  // namespace

run::RunBody container_body(ContainerLaunch& launch) {
    run::RunBody body;
    body.prefix = "corral-oci";
    body.serve = [&launch](Sandbox& box, int interrupt_fd, const run::BodyContext&) {
        return serve_container(launch, box, interrupt_fd);
    };
    return body;
}

}  // namespace corral::oci
