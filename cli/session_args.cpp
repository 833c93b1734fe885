// cli/session_args.cpp — the option table of `corral exec` (a data table),
// its --help and parser; `corral session`'s help and start's table for the docs.
#include "cli/session_args.hpp"

#include <vector>

#include "base/parse.hpp"
#include "base/sys_error.hpp"
#include "cli/command_table.hpp"
#include "run/agent_run.hpp"
#include "run/request.hpp"
#include "supervisor/invocation.hpp"

namespace corral::cli {

namespace {

constexpr const char* kExecHead = R"(usage: corral exec [--role agent|service|verifier] [--timeout D] [--grace D]
                   [--env K=V]... [--cwd DIR] [--tty | -i] [--state-dir DIR] ID -- CMD [ARGS...]
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

-i, --stdin passes corral exec's stdin to CMD (without it CMD reads
/dev/null): a pipe, FIFO, regular file (reopened read-only) or connected
socket, as `corral run --stdin` takes it; a terminal is refused (--tty).
Ctrl-C (SIGINT, SIGTERM, SIGHUP) without --tty is passed on: CMD gets
SIGTERM, then SIGKILL after the grace (a second Ctrl-C: at once), and
corral exec waits for it and exits with its status, as `corral run` does.

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

options:
)";

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

// --prompt-file FILE, read here as --prompt-file of `corral run` is.
std::string read_exec_prompt_file(const std::string& v) {
    try {
        return run::read_prompt_file("--prompt-file", v);
    } catch (const UsageError&) {
        throw;
    } catch (const std::exception& e) {  // a SysError naming the failed call
        throw UsageError("--prompt-file " + v + ": " + e.what());
    }
}

void set_prompt(ExecArgs& x, std::string prompt) {
    if (x.request.prompt) throw UsageError("--prompt and --prompt-file: give one of them, once");
    x.request.prompt = std::move(prompt);
}

const Option<ExecArgs> kExecOptions[] = {
    {{"--role", "agent|service|verifier", "who runs CMD (default agent)"},
     [](ExecArgs& x, const std::string& v) {
         auto r = supervisor::parse_role(v);
         if (!r) throw UsageError("--role " + v + ": expected agent, service or verifier");
         x.request.role = *r;
     }},
    {{"--timeout", "D", "stop CMD after D (at most 30 days)"},
     [](ExecArgs& x, const std::string& v) {
         const auto d = exec_duration("--timeout", v);
         if (d.count() == 0) throw UsageError("--timeout: must be more than 0");
         x.request.timeout = d;
     }},
    {{"--grace", "D", "time between SIGTERM and SIGKILL when CMD is stopped"},
     [](ExecArgs& x, const std::string& v) { x.request.grace = exec_duration("--grace", v); }},
    {{"--env", "K=V", "add K=V to CMD's environment (repeatable)", {}, true},
     [](ExecArgs& x, const std::string& v) {
         try {
             x.request.env.push_back(parse_env_pair(v));
         } catch (const UsageError& e) {
             throw UsageError(std::string("--env: ") + e.what());
         }
     }},
    {{"--cwd", "DIR", "CMD's start directory, absolute in the sandbox"},
     [](ExecArgs& x, const std::string& v) {
         if (v.empty() || v.front() != '/') throw UsageError("--cwd " + v + ": expected an absolute path in the sandbox");
         x.request.cwd = v;
     }},
    {{"--tty", "", "run CMD on a terminal of the session's"}, [](ExecArgs& x, const std::string&) { x.request.tty = true; }},
    {{"--stdin", "", "pass corral exec's stdin to CMD (a pipe, a file, a socket; not a terminal: --tty)", "-i"},
     [](ExecArgs& x, const std::string&) { x.request.stdin = true; }},
    {{"--prompt", "TEXT", "run the session's agent CLI on TEXT"},
     [](ExecArgs& x, const std::string& v) { set_prompt(x, v); }},
    {{"--prompt-file", "F", "the same, the prompt read from F"},
     [](ExecArgs& x, const std::string& v) {
         set_prompt(x, "");  // refused before F is read when a prompt is there
         x.request.prompt = read_exec_prompt_file(v);
     }},
    {{"--state-dir", "DIR", "default $CORRAL_STATE_DIR, else /var/lib/corral"},
     [](ExecArgs& x, const std::string& v) { x.state_dir = v; }},
};

std::string exec_habit(std::string_view flag) {
    if (flag == "-it" || flag == "-t")
        return "corral exec has no " + std::string(flag) + "; use --tty for a terminal";
    return {};
}

constexpr const char* kSessionHelp = R"(usage: corral session start [--name NAME] [RUN OPTIONS]
       corral session stop [--grace D] [--state-dir DIR] ID
       corral session ls [--json] [-a|--all] [--state-dir DIR]

start  builds a sandbox (namespaces, rootfs, bridge and gateway, cgroup) and
       keeps it: prints the session's id on stdout (one line) and returns; the
       session's supervisor goes on in the background. RUN OPTIONS are
       `corral run`'s (--config/--worker, --rootfs, --workspace [--review],
       limits, --timeout for the session's life, --grace), without a command,
       --prompt, --stdin or --tty. NAME: [a-z0-9][a-z0-9-]{0,39}, usable
       instead of the id while the session runs.
stop   as `corral stop`: every exec gets SIGTERM, the sandbox is killed after
       the grace and torn down with the same verified steps as a run.
ls     the sessions (running ones; -a: all).

Run commands in a session with `corral exec ID -- CMD` (corral exec --help).
)";


// A session has no command, stdin, terminal or prompt of its own.
bool only_for_a_command(std::string_view name) {
    for (std::string_view n : {"--prompt", "--prompt-file", "--system-prompt-file", "--stdin", "--tty"})
        if (n == name) return true;
    return false;
}

}  // namespace

ExecArgs parse_exec_args(int argc, char** argv) {
    ExecArgs x;
    x.state_dir = run::default_state_dir();
    CommandLine line = parse_options<ExecArgs>({"corral exec", 1, exec_habit}, kExecOptions, argc, argv, x);
    x.help = line.help;
    if (!line.positionals.empty()) x.key = line.positionals.front();
    x.request.argv = std::move(line.command);
    return x;
}

std::span<const OptionSpec> exec_option_specs() { return option_specs_of<kExecOptions>(); }

const std::string& exec_help() {
    static const std::string text = help_with_options(kExecHead, exec_option_specs());
    return text;
}

std::span<const OptionSpec> session_start_option_specs() {
    static const auto specs = [] {
        std::vector<OptionSpec> out{run::session_name_option()};
        for (const auto& o : run::run_option_specs())
            if (!only_for_a_command(o.name)) out.push_back(o);
        return out;
    }();
    return specs;
}

const std::string& session_help() {
    static const std::string text = kSessionHelp;
    return text;
}

}  // namespace corral::cli
