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
#include "base/suggest.hpp"
#include "base/sys_error.hpp"
#include "base/terminal_text.hpp"
#include "run/agent_run.hpp"
#include "run/exec_protocol.hpp"
#include "run/outcome.hpp"
#include "run/request.hpp"
#include "run/session_server.hpp"
#include "run/state_dir.hpp"
#include "supervisor/invocation.hpp"
#include "supervisor/fd_passing.hpp"
#include "supervisor/init_channel.hpp"
#include "supervisor/terminal.hpp"
#include "tools/commands.hpp"
#include "tools/session_client.hpp"

namespace corral::cli {

namespace {

constexpr const char* kExecHelp = R"(usage: corral exec [--role agent|service|verifier] [--timeout D] [--grace D]
                   [--env K=V]... [--cwd DIR] [--tty] [--state-dir DIR] ID -- CMD [ARGS...]
       corral exec [--timeout D] [--grace D] [--env K=V]... [--cwd DIR]
                   [--state-dir DIR] (--prompt TEXT | --prompt-file F) ID

Runs CMD in session ID (its id, a unique prefix of at least 4 characters, or
its --name) as PID 1 of a new PID namespace, with the role's own UID:
  agent     the session's agent (the workspace's owner); the default
  service   a UID of its own, for trusted services (a database, a server)
  verifier  a third UID; before it starts, every process of the agent is
            killed and the kill confirmed by a pass over /proc
CMD's stdout and stderr stream to corral's and to the session's
execs/N/stdout.log and stderr.log. Background jobs live on until the
session ends (or, for the agent, until a verifier starts).

--tty runs CMD on a pty of the session's own devpts (the role's), as its
session leader with the pty as controlling terminal, relayed to corral
exec's terminal (in raw mode meanwhile, restored on every exit): job
control in `bash -i`, full-screen programs, window-size changes passed on,
Ctrl-C and Ctrl-Z for CMD. stdin and stdout must be a terminal; the output
is logged to execs/N/stdout.log. Not with --prompt.

--prompt TEXT (or --prompt-file F, read as `corral run --prompt-file` reads
it) runs the session's worker's agent CLI on TEXT as the agent role, with
the command line, home and sentinel credentials `corral run --prompt` gives
it; its JSON lines stream to stdout. The session must have been started with
--config DIR --worker NAME of a worker with an agent whose credential is
available.

Exit status: CMD's, as `corral run`'s: 124 the --timeout, 125 corral's own
failure (also: no such session, a session that ended or was lost), 127 CMD
not found, 128+N a signal, 2 bad usage. A closed connection (corral exec
killed) stops CMD with the grace.
)";

Fd connect_to(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) throw std::runtime_error("session socket path too long: " + path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    Fd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) throw SysError("socket", "AF_UNIX", errno);
    if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        const int err = errno;
        if (err == ENOENT || err == ECONNREFUSED)
            throw std::runtime_error("the session takes no more execs (it is stopping): " + path);
        throw SysError("connect", path, err);
    }
    return fd;
}

// `corral exec`'s command line: the request as the session will read it, the
// session's handle and the state dir.
struct ExecArgs {
    run::ExecRequest request;
    std::string state_dir = run::default_state_dir();
    std::string key;
    bool help = false;
};

// --timeout / --grace: a duration of at most 30 days.
std::chrono::milliseconds exec_duration(std::string_view option, const std::string& v) {
    std::chrono::milliseconds d;
    try {
        d = parse_duration(v);
    } catch (const UsageError& e) {
        throw UsageError(std::string(option) + ": " + e.what());
    }
    if (d > std::chrono::hours(24 * 30)) throw UsageError(std::string(option) + ": at most 30 days, got " + v);
    return d;
}

// --prompt TEXT or --prompt-file FILE (read here, as --prompt-file of `corral run` is).
std::string exec_prompt(std::string_view option, std::string v) {
    if (option != "--prompt-file") return v;
    try {
        return run::read_prompt_file("--prompt-file", v);
    } catch (const UsageError&) {
        throw;
    } catch (const std::exception& e) {  // a SysError naming the failed call
        throw UsageError("--prompt-file " + v + ": " + e.what());
    }
}

[[noreturn]] void unknown_exec_option(std::string_view a) {
    static constexpr std::string_view kOptions[] = {"--role", "--timeout", "--grace", "--env", "--cwd",
                                                    "--tty", "--prompt", "--prompt-file", "--state-dir"};
    std::string near;
    if (auto n = closest_name(a, kOptions)) near = " (did you mean " + *n + "?)";
    throw UsageError("unknown option \"" + std::string(a) + "\"" + near +
                     "; expected --role, --timeout, --grace, --env, --cwd, --tty, --prompt, --prompt-file, "
                     "--state-dir");
}

// One option `a` (its value from `value()` when it takes one) into `x`.
void take_exec_option(std::string_view a, const std::function<std::string()>& value, ExecArgs& x) {
    run::ExecRequest& request = x.request;
    if (a == "--role") {
        std::string v = value();
        auto r = supervisor::parse_role(v);
        if (!r) throw UsageError("--role " + v + ": expected agent, service or verifier");
        request.role = *r;
    } else if (a == "--timeout") {
        const auto d = exec_duration(a, value());
        if (d.count() == 0) throw UsageError("--timeout: must be more than 0");
        request.timeout = d;
    } else if (a == "--grace") {
        request.grace = exec_duration(a, value());
    } else if (a == "--env") {
        std::string v = value();
        try {
            request.env.push_back(parse_env_pair(v));
        } catch (const UsageError& e) {
            throw UsageError(std::string("--env: ") + e.what());
        }
    } else if (a == "--cwd") {
        std::string v = value();
        if (v.empty() || v.front() != '/') throw UsageError("--cwd " + v + ": expected an absolute path in the sandbox");
        request.cwd = v;
    } else if (a == "--prompt" || a == "--prompt-file") {
        if (request.prompt) throw UsageError("--prompt and --prompt-file: give one of them, once");
        request.prompt = exec_prompt(a, value());
    } else if (a == "--tty") {
        request.tty = true;
    } else if (a == "--state-dir") {
        x.state_dir = value();
    } else if (a == "-it" || a == "-t" || a == "-i") {
        throw UsageError("corral exec has no " + std::string(a) + "; use --tty for a terminal");
    } else {
        unknown_exec_option(a);
    }
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
}

// Throws UsageError naming the option and what it takes.
ExecArgs parse_exec_args(int argc, char** argv) {
    ExecArgs x;
    int i = 1;
    for (; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a == "--") {
            ++i;
            break;
        }
        if (a == "--help" || a == "-h") {
            x.help = true;
            return x;
        }
        if (a.starts_with("-")) {
            take_exec_option(a, [&]() -> std::string {
                if (i + 1 >= argc) throw UsageError(std::string(a) + ": missing value; see `corral exec --help`");
                return argv[++i];
            }, x);
        } else if (x.key.empty()) {
            x.key = std::string(a);
        } else {
            break;  // the command starts here
        }
    }
    for (; i < argc; ++i) x.request.argv.emplace_back(argv[i]);
    check_exec_args(x);
    return x;
}

// The session's answer line, read while passing window-size changes (--tty)
// on: the session's supervisor cannot get our SIGWINCH; it reads a byte per
// change from the pipe and asks our terminal for its size.
std::string read_exec_answer(int conn, int window_signals, int changes_write, const std::string& session_id) {
    std::string answer;
    char buf[4096];
    for (;;) {
        pollfd p[2] = {{conn, POLLIN, 0}, {window_signals, POLLIN, 0}};
        if (poll(p, window_signals >= 0 ? 2 : 1, -1) < 0) {
            if (errno == EINTR) continue;
            throw SysError("poll", "session " + session_id, errno);
        }
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
// window-change pipe) to the session and returns the exec's status.
int exec_in_session(const run::RunEntry& session, const std::string& line, bool tty) {
    Fd conn = connect_to(run::session_socket_path(session.run_dir));
    Fd window_signals, changes_read, changes_write;
    if (tty) {
        window_signals = supervisor::watch_window_size_changes();
        auto [r, w] = supervisor::make_pipe();
        changes_read = std::move(r);
        changes_write = std::move(w);
        check_sys(fcntl(changes_write.get(), F_SETFL, O_NONBLOCK), "fcntl(F_SETFL, O_NONBLOCK)", "the window-change pipe");
    }
    const int fds[4] = {1, 2, 0, changes_read.get()};
    if (int rc = supervisor::send_with_fds(conn.get(), line.data(), line.size(), fds, tty ? 4 : 2); rc < 0)
        throw SysError("sendmsg", "exec request to session " + session.id, -rc);
    changes_read.reset();
    const std::string answer = read_exec_answer(conn.get(), window_signals.valid() ? window_signals.get() : -1,
                                                changes_write.get(), session.id);
    run::ExecAnswer a = run::parse_exec_answer_line(answer);
    for (const auto& m : a.messages) std::fprintf(stderr, "corral exec: %s\n", terminal_text(m).c_str());
    return a.status;
}

}  // namespace

int cmd_exec(int argc, char** argv) {
    ExecArgs x;
    std::string line;  // the request, once checked
    try {
        x = parse_exec_args(argc, argv);
        if (x.help) return std::fputs(kExecHelp, stdout), 0;
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
                               x.request.tty);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "corral exec: %s\n", terminal_text(e.what()).c_str());
        return run::kExitSetup;
    }
}

}  // namespace corral::cli
