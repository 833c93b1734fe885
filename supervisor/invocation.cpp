// supervisor/invocation.cpp — the supervisor's side of a session's invocations:
// the role's identity and environment, the request to the init (invocation_wire.hpp)
// and the pidfd it answers with.
#include "supervisor/invocation.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "base/sys_error.hpp"
#include "supervisor/command_path.hpp"
#include "supervisor/fd_passing.hpp"
#include "supervisor/init_channel.hpp"
#include "supervisor/invocation_wire.hpp"

namespace corral::supervisor {

std::string_view role_name(Role role) {
    switch (role) {
        case Role::agent: return "agent";
        case Role::service: return "service";
        case Role::verifier: return "verifier";
    }
    return "agent";
}

std::optional<Role> parse_role(std::string_view text) {
    for (Role r : {Role::agent, Role::service, Role::verifier})
        if (text == role_name(r)) return r;
    return std::nullopt;
}

std::pair<uid_t, gid_t> role_uid_gid(const Sandbox& box, Role role) {
    if (role == Role::agent) return {box.uid(), box.gid()};
    const std::size_t index = role == Role::service ? 0 : 1;
    if (box.role_leases().size() <= index) throw UsageError("this sandbox is not a session: it has no " + std::string(role_name(role)) + " role");
    const UidLease& lease = box.role_leases()[index];
    return {lease.uid(), lease.gid()};
}

std::vector<std::string> role_environment(const SandboxSpec& spec, Role role,
                                          const std::vector<std::pair<std::string, std::string>>& extra) {
    // The run's own variables (the proxy, the CA, the worker's [env], --env)
    // hold for every role; the exec's come after them.
    SandboxSpec view = spec;
    view.env.insert(view.env.end(), extra.begin(), extra.end());
    std::vector<std::string> env = command_environment(view);
    if (role == Role::agent) return env;
    const std::string name(role_name(role));
    for (auto& kv : env) {
        const std::string key = kv.substr(0, kv.find('='));
        bool given = false;
        for (const auto& e : extra) given = given || e.first == key;
        if (given) continue;
        if (key == "HOME") kv = "HOME=" + std::string(kRoleHomesDir) + "/" + name;
        if (key == "USER") kv = "USER=" + name;
        if (key == "LOGNAME") kv = "LOGNAME=" + name;
    }
    return env;
}

// The steps that reach into the Sandbox (its channel and lock).
struct SessionChannel {
    static Invocation spawn(Sandbox& box, InvocationSpec spec);
};

namespace {

// The rest of the exec image (the spec's command, cwd, environment, the
// terminal's size) encoded for the init; a request too large for the
// channel is bad input, said so.
std::vector<char> encoded_exec_request(ExecImage& image, const InvocationSpec& spec, const std::vector<std::string>& env,
                                       const winsize& window) {
    image.cwd = spec.cwd;
    image.argv = spec.argv;
    image.env = env;
    image.candidates = exec_candidates(spec.argv.front(), env);
    image.tty = spec.terminal.has_value() || spec.console;
    image.gated = spec.gated;
    image.stdin_is_stdout = spec.stdio_socket >= 0;
    image.own_stdin = spec.stdin_fd >= 0;
    image.rows = window.ws_row;
    image.cols = window.ws_col;
    try {
        return encode_exec_request(image);
    } catch (const std::length_error& e) {
        throw UsageError(std::string("exec: ") + e.what() + "; pass large input in a file of the workspace");
    } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("exec: ") + e.what());
    }
}

// The caller's terminal relayed to the pty `master` the init sent. The
// command runs already: whatever fails here kills it (its reaper, and with
// it the invocation's PID namespace).
std::unique_ptr<TerminalRelay> relay_caller_terminal(Fd master, const CallerTerminal& terminal, int pidfd) {
    try {
        if (!master.valid()) throw SysError("recvmsg", "session init channel: no pty master came", EPROTO);
        Fd changes(fcntl(terminal.window_changes, F_DUPFD_CLOEXEC, 3));
        if (!changes.valid()) throw SysError("fcntl(F_DUPFD_CLOEXEC)", "the caller's window-change pipe", errno);
        if (fcntl(changes.get(), F_SETFL, O_NONBLOCK) != 0)
            throw SysError("fcntl(F_SETFL, O_NONBLOCK)", "the caller's window-change pipe", errno);
        auto relay = std::make_unique<TerminalRelay>(std::move(master), std::move(changes), terminal.in, terminal.out);
        relay->start();
        return relay;
    } catch (...) {
        signal_through_pidfd(pidfd, SIGKILL);
        throw;
    }
}

// A command, and at most one of: a terminal, a stdio socket, the caller's
// stdin, a console (each is the command's stdin).
void require_one_stdin(const InvocationSpec& spec) {
    if (spec.argv.empty()) throw UsageError("missing command");
    if (spec.terminal && spec.stdio_socket >= 0) throw UsageError("an exec with a terminal has no stdio socket");
    if (spec.stdin_fd >= 0 && (spec.terminal || spec.stdio_socket >= 0))
        throw UsageError("an exec's stdin is its terminal, its stdio socket or the caller's stdin: one of them");
    if (spec.console && (spec.terminal || spec.stdio_socket >= 0 || spec.stdin_fd >= 0))
        throw UsageError("an exec's console is its only stdin: no terminal, stdio socket or stdin with it");
}

}  // namespace

Invocation SessionChannel::spawn(Sandbox& box, InvocationSpec spec) {
    if (!box.session_.valid() || !box.session_lock_) throw UsageError("this sandbox is not a session");
    require_one_stdin(spec);
    if (spec.cwd.empty())
        spec.cwd = spec.role == Role::agent ? box.spec_.cwd : std::string(kRoleHomesDir) + "/" + std::string(role_name(spec.role));
    Invocation inv;
    const auto [uid, gid] = role_uid_gid(box, spec.role);
    inv.uid_ = uid;
    winsize window{};
    auto extra = spec.env;
    if (spec.terminal) {
        require_caller_terminal(spec.terminal->in, spec.terminal->out);
        if (ioctl(spec.terminal->out, TIOCGWINSZ, &window) != 0) ioctl(spec.terminal->in, TIOCGWINSZ, &window);
        bool term_given = false;
        for (const auto& kv : spec.env) term_given = term_given || kv.first == "TERM";
        if (!term_given) extra.emplace_back("TERM", spec.terminal->term);
    }
    if (spec.console) {
        window.ws_row = spec.console_rows;
        window.ws_col = spec.console_cols;
    }
    inv.env_ = role_environment(box.spec_, spec.role, extra);

    ExecImage image;
    image.uid = uid;
    image.gid = gid;
    // Each role's UID is the session's alone: the cap bounds that role's tasks.
    image.task_limit = box.task_limit_;
    image.open_file_limit = box.open_file_limit_;
    const std::vector<char> request = encoded_exec_request(image, spec, inv.env_, window);

    auto report = make_pipe();
    std::pair<Fd, Fd> out;   // none with a stdio socket: the command writes to the socket
    if (spec.stdio_socket < 0) out = make_pipe();
    auto err = make_pipe();
    std::pair<Fd, Fd> gate;
    if (spec.gated) gate = make_pipe();
    int fds[kExecRequestFds + 2] = {report.second.get(), spec.stdio_socket >= 0 ? spec.stdio_socket : out.second.get(),
                                    err.second.get(), -1, -1};
    int nfds_sent = kExecRequestFds;
    if (spec.stdin_fd >= 0) fds[nfds_sent++] = spec.stdin_fd;
    if (spec.gated) fds[nfds_sent++] = gate.first.get();
    ExecReply reply{};
    int answered[2] = {-1, -1};
    int nfds = 0;
    {
        std::lock_guard<std::mutex> one_request_at_a_time(*box.session_lock_);
        box.started_ = true;  // from here on a process of a role's UID may exist: teardown sweeps them
        if (int rc = send_with_fds(box.session_.get(), request.data(), request.size(), fds, nfds_sent); rc < 0)
            throw SysError("sendmsg", "session init channel (exec request)", -rc);
        ssize_t n = receive_with_fds(box.session_.get(), &reply, sizeof reply, answered, 2, nfds);
        if (n < 0) {
            for (int i = 0; i < nfds; ++i) close(answered[i]);
            throw SysError("recvmsg", "session init channel (exec reply)", static_cast<int>(-n));
        }
        if (n == 0) throw SysError("recvmsg", "session init channel: the init is gone", EPIPE);
    }
    Fd owned_pidfd(nfds >= 1 ? answered[0] : -1);
    Fd master(nfds >= 2 ? answered[1] : -1);
    if (reply.err != 0) throw SysError("clone3", "the session's init could not start the invocation", reply.err);
    if (!owned_pidfd.valid()) throw SysError("recvmsg", "session init channel: no pidfd came", EPROTO);
    if (spec.terminal) inv.tty_ = relay_caller_terminal(std::move(master), *spec.terminal, owned_pidfd.get());
    if (spec.console) {
        if (!master.valid()) {
            signal_through_pidfd(owned_pidfd.get(), SIGKILL);
            throw SysError("recvmsg", "session init channel: no pty master came", EPROTO);
        }
        inv.console_ = std::move(master);
    }
    inv.gate_ = std::move(gate.second);
    inv.pidfd_ = std::move(owned_pidfd);
    inv.report_ = std::move(report.first);
    inv.stdout_ = std::move(out.first);
    inv.stderr_ = std::move(err.first);
    inv.spec_ = std::move(spec);
    return inv;
}

Invocation spawn_invocation(Sandbox& box, InvocationSpec spec) { return SessionChannel::spawn(box, std::move(spec)); }

void Invocation::start_command() {
    if (!gate_.valid()) return;
    const char go = 1;
    ssize_t n;
    while ((n = ::write(gate_.get(), &go, 1)) < 0 && errno == EINTR) {
    }
    const int err = errno;
    gate_.reset();
    if (n != 1) throw SysError("write", "the invocation's start gate", err);
}

}  // namespace corral::supervisor
