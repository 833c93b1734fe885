// tools/cmd_exec.cpp — `corral exec [OPTIONS] SESSION -- CMD [ARGS...]`: the
// request checked here as the session will read it (run/exec_protocol.hpp),
// sent over the session's root-only socket with our stdout and stderr (and,
// with --tty, our terminal and a window-change pipe), the exec's status back.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include "base/fd.hpp"
#include "base/parse.hpp"
#include "base/sys_error.hpp"
#include "base/terminal_text.hpp"
#include "run/agent_run.hpp"
#include "run/exec_protocol.hpp"
#include "run/exec_wire.hpp"
#include "run/outcome.hpp"
#include "run/request.hpp"
#include "run/session_server.hpp"
#include "run/state_dir.hpp"
#include "supervisor/invocation.hpp"
#include "supervisor/fd_passing.hpp"
#include "supervisor/init_channel.hpp"
#include "supervisor/stdin_handover.hpp"
#include "supervisor/terminal.hpp"
#include "cli/session_args.hpp"
#include "tools/commands.hpp"
#include "tools/session_client.hpp"

namespace corral::cli {

namespace {


Fd connect_to(const std::string& path) {
    if (auto fd = run::connect_unix(path)) return std::move(*fd);
    throw std::runtime_error("the session takes no more execs (it is stopping): " + path);
}

// --stdin: what of corral exec's stdin CMD gets, checked as `corral run
// --stdin` checks its own (stdin_handover.hpp), before anything is sent. A
// terminal is refused: the session's seccomp policy was made without the
// rules an inherited terminal needs, and --tty is the way to give one. The
// null device: none is sent (CMD gets the box's /dev/null).
Fd exec_stdin(bool wanted) {
    if (!wanted) return Fd();
    supervisor::StdinHandover h = supervisor::hand_over_stdin(0);
    if (h.terminal)
        throw UsageError("--stdin: stdin is a terminal; use --tty to run CMD on a terminal (or pass input through a "
                         "pipe or a file)");
    return std::move(h.fd);
}

// What the options leave to check: a session, a command or a prompt, a
// terminal for --tty.
void check_exec_args(ExecArgs& x) {
    run::ExecRequest& request = x.request;
    if (x.key.empty()) throw UsageError("missing session: expected `corral exec [OPTIONS] ID -- CMD [ARGS...]`");
    if (!request.prompt) {
        if (request.argv.empty())
            throw UsageError("missing command: expected `corral exec [OPTIONS] ID -- CMD [ARGS...]` or `--prompt TEXT`");
        if (request.argv.front().empty()) throw UsageError("empty command name");
    }
    if (request.tty) {
        if (request.prompt)
            throw UsageError("--tty with --prompt: the agent's one-shot task takes no terminal; run "
                             "`corral exec --tty ID -- CLAUDE-OR-CODEX` for an interactive agent");
        supervisor::require_caller_terminal(0, 1);
        request.term = supervisor::box_terminal_type(std::getenv("TERM"));
    }
    if (request.tty && request.stdin) throw UsageError("--stdin with --tty: the terminal is CMD's stdin already");
}

// Without --tty: SIGINT, SIGTERM and SIGHUP blocked and read from a
// signalfd, each passed on to the session as one byte (its number) on the
// connection: the session stops CMD as a run stops its own on Ctrl-C
// (SIGTERM, SIGKILL after the grace; a second one at once) and answers with
// its status, which corral exec waits for. With --tty Ctrl-C is the pty's.
Fd watch_stop_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, s);
    check_sys(sigprocmask(SIG_BLOCK, &set, nullptr), "sigprocmask(SIG_BLOCK)", "SIGINT, SIGTERM, SIGHUP");
    Fd fd(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!fd.valid()) throw SysError("signalfd", "SIGINT, SIGTERM, SIGHUP", errno);
    return fd;
}

void pass_signals_on(int stop_signals, int conn) {
    signalfd_siginfo si{};
    while (read(stop_signals, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
        const unsigned char byte = static_cast<unsigned char>(si.ssi_signo);
        (void)!send(conn, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
}

// The session's answer line, read while passing window-size changes (--tty)
// on: the session's supervisor cannot get our SIGWINCH; it reads a byte per
// change from the pipe and asks our terminal for its size. Without --tty,
// the stop signals we get are passed on (watch_stop_signals).
std::string read_exec_answer(int conn, int window_signals, int changes_write, int stop_signals,
                             const std::string& session_id) {
    std::string answer;
    char buf[4096];
    for (;;) {
        pollfd p[2] = {{conn, POLLIN, 0}, {window_signals >= 0 ? window_signals : stop_signals, POLLIN, 0}};
        if (poll(p, p[1].fd >= 0 ? 2 : 1, -1) < 0) {
            if (errno == EINTR) continue;
            throw SysError("poll", "session " + session_id, errno);
        }
        if (stop_signals >= 0 && (p[1].revents & POLLIN)) pass_signals_on(stop_signals, conn);
        if (window_signals >= 0 && (p[1].revents & POLLIN)) {
            signalfd_siginfo si[8];
            while (read(window_signals, si, sizeof si) > 0) {
            }
            // Full pipe: a change is pending already, the size is read when it is taken.
            (void)!write(changes_write, "w", 1);
        }
        if (p[0].revents == 0) continue;
        ssize_t n = read(conn, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        answer.append(buf, static_cast<std::size_t>(n));
    }
    if (answer.find('\n') == std::string::npos)
        throw std::runtime_error("session " + session_id + " closed without an answer (its supervisor died?)");
    return answer.substr(0, answer.find('\n'));
}

// Sends the request with our stdout, stderr (and, with --tty, stdin and the
// window-change pipe; with --stdin, what stdin became) to the session and
// returns the exec's status.
int exec_in_session(const run::RunEntry& session, const std::string& line, bool tty, const Fd& in) {
    Fd conn = connect_to(run::session_socket_path(session.run_dir));
    Fd window_signals, changes_read, changes_write, stop_signals;
    if (!tty) stop_signals = watch_stop_signals();
    if (tty) {
        window_signals = supervisor::watch_window_size_changes();
        auto [r, w] = supervisor::make_pipe();
        changes_read = std::move(r);
        changes_write = std::move(w);
        check_sys(fcntl(changes_write.get(), F_SETFL, O_NONBLOCK), "fcntl(F_SETFL, O_NONBLOCK)", "the window-change pipe");
    }
    const int fds[4] = {1, 2, tty ? 0 : in.get(), changes_read.get()};
    if (int rc = supervisor::send_with_fds(conn.get(), line.data(), line.size(), fds, tty ? 4 : in.valid() ? 3 : 2); rc < 0)
        throw SysError("sendmsg", "exec request to session " + session.id, -rc);
    changes_read.reset();
    const std::string answer = read_exec_answer(conn.get(), window_signals.valid() ? window_signals.get() : -1,
                                                changes_write.get(), stop_signals.valid() ? stop_signals.get() : -1,
                                                session.id);
    run::ExecAnswer a = run::parse_exec_answer_line(answer);
    for (const auto& m : a.messages) std::fprintf(stderr, "corral exec: %s\n", terminal_text(m).c_str());
    return a.status;
}

}  // namespace

int cmd_exec(int argc, char** argv) {
    ExecArgs x;
    std::string line;  // the request, once checked
    Fd in;             // --stdin: what CMD gets as its stdin
    try {
        x = parse_exec_args(argc, argv);
        if (x.help) return std::fputs(exec_help().c_str(), stdout), 0;
        check_exec_args(x);
        in = exec_stdin(x.request.stdin);
        x.request.stdin = in.valid();  // the null device: the box's own, nothing sent
        // The request as the session will read it: the protocol's rules
        // (UTF-8 only; a prompt is not blank, the agent's, without a command)
        // refuse it here, once, with the session's own words.
        line = run::exec_request_line(x.request);
        (void)run::parse_exec_request_line(std::string_view(line).substr(0, line.size() - 1));
    } catch (const UsageError& e) {
        return usage_error("corral exec", e.what());
    }
    if (geteuid() != 0) {
        std::fprintf(stderr, "corral exec: must run as root (the session's socket serves root only)\n");
        return run::kExitSetup;
    }
    signal(SIGPIPE, SIG_IGN);
    try {
        return exec_in_session(find_session(run::require_private_state_dir("--state-dir", x.state_dir), x.key), line,
                               x.request.tty, in);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "corral exec: %s\n", terminal_text(e.what()).c_str());
        return run::kExitSetup;
    }
}

}  // namespace corral::cli
