// tools/cmd_session.cpp — `corral session start|stop|ls` and `corral exec`.
//
// `session start` forks the session's supervisor before anything else (no
// thread exists yet), which runs the session as a run (run/run.hpp) with a body that serves
// execs (run/session_server.hpp) and goes on in the background once the
// session's socket listens; the caller waits for that moment, prints the id
// and exits 0, or prints why the session did not start and exits with the
// status a run would have. docs/sessions.md.
#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/bounded_lock.hpp"
#include "base/fd.hpp"
#include "base/parse.hpp"
#include "base/suggest.hpp"
#include "base/terminal_text.hpp"
#include "base/sys_error.hpp"
#include "run/agent_run.hpp"
#include "run/exec_protocol.hpp"
#include "run/outcome.hpp"
#include "run/request.hpp"
#include "run/run.hpp"
#include "run/run_index.hpp"
#include "run/session_server.hpp"
#include "run/state_dir.hpp"
#include "supervisor/fd_passing.hpp"
#include "supervisor/init_channel.hpp"
#include "supervisor/terminal.hpp"
#include "cli/runs_args.hpp"
#include "cli/session_args.hpp"
#include "tools/commands.hpp"
#include "tools/session_client.hpp"

namespace corral::cli {

namespace {

using nlohmann::json;



}  // namespace

namespace {

// ---- session start

using run::session_name_of;

// STATE/session-names.lock, held exclusively (the state dir is the one
// make_private_dir returned). Another start holds it only until its session
// is ready: the wait is bounded all the same.
Fd lock_session_names(const std::string& state_dir) {
    const std::string path = state_dir + "/session-names.lock";
    Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) throw SysError("open", path, errno);
    lock_within(fd.get(), path, LockKind::exclusive);
    return fd;
}

// A name stands for one running session. Named starts hold the state dir's
// session-names.lock from this check until their session is ready (its
// run.json then says running, with the name) or has failed, so two starts
// racing for one name cannot both pass it. Returns the exit status of a
// refused start, else nullopt with the lock in `names_lock`.
std::optional<int> claim_session_name(const run::RunRequest& request, Fd& names_lock) {
    if (!request.session_name) return std::nullopt;
    std::string state_dir;
    try {
        // Checked (or made) first: nothing is created or locked in a
        // directory anyone but root could change.
        state_dir = run::make_private_dir("--state-dir", request.state_dir.value_or(run::default_state_dir()),
                                          run::DirRole::state);
        names_lock = lock_session_names(state_dir);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "corral session start: %s\n", terminal_text(e.what()).c_str());
        return run::kExitSetup;
    }
    for (const auto& e : run::list_runs(state_dir))
        if (is_session(e) && e.state == "running" && session_name_of(*e.record) == *request.session_name)
            return usage_error("corral session start", "--name " + *request.session_name +
                                                           ": taken by running session " + e.id +
                                                           "; stop it or pick another name");
    return std::nullopt;
}

// A session's body: serves its execs (run/session_server.hpp) and, once
// ready, tells the caller the session's id on `ready` and sends its own
// output to the session's log.
run::RunBody session_body(Fd& ready) {
    run::RunBody body;
    body.prefix = "corral session";
    body.serve = [&ready](supervisor::Sandbox& box, int interrupt_fd, const run::BodyContext& context) {
        const auto& record_now = context.record_now;
        run::SessionServerOptions o;
        if (context.agent) {
            const run::AgentRun* agent = context.agent;
            o.prompt_argv = [agent](const std::string& prompt) { return run::agent_prompt_argv(*agent, prompt); };
        }
        o.no_agent = context.no_agent;
        o.journal = context.journal;
        o.refusals = context.refusals;
        o.workspace_applied = context.workspace_applied;
        o.run_dir = box.spec().run_dir;
        o.grace = box.spec().stop_grace;
        o.log_limit_bytes = box.spec().log_limit_bytes;
        o.timeout = box.spec().timeout;
        o.on_ready = [&] {
            record_now();
            const std::string line = box.run_id() + "\n";
            write_all(ready.get(), line.data(), line.size(), "session start's ready pipe");
            ready.reset();
            // The supervisor's stderr reached the caller until now (never
            // left on the caller's pipe: `session start` waits for its EOF).
            redirect_output_to_file(box.spec().run_dir + "/session.log");
        };
        return run::serve_session(box, interrupt_fd, o);
    };
    return body;
}

// The forked session supervisor: its own session (no terminal's signals),
// stdin /dev/null, its stdout and stderr to the caller until ready, nothing
// else of the caller's open (a harness waiting for EOF on a pipe of its own
// would hang). Runs the session as a run, then exits with its status.
[[noreturn]] void become_session_supervisor(const run::RunRequest& request, int ready_write, int err_write) {
    setsid();
    if (chdir("/") != 0) _exit(run::kExitSetup);  // holds no directory of the caller's for the session's life
    int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0) dup2(null_fd, 0);
    dup2(err_write, 1);
    dup2(err_write, 2);
    const int ready_fd = fcntl(ready_write, F_DUPFD_CLOEXEC, 3);
    if (ready_fd < 3 || (ready_fd > 3 && close_range(3, static_cast<unsigned>(ready_fd) - 1, 0) != 0) ||
        close_range(static_cast<unsigned>(ready_fd) + 1, ~0U, 0) != 0)
        _exit(run::kExitSetup);
    Fd ready(ready_fd);
    run::RunBody body = session_body(ready);
    std::fflush(nullptr);
    _exit(run::run_as_supervisor(request, std::move(body)));
}

// The caller's side: what the supervisor says before the session is ready
// goes to our stderr; then its id to stdout (exit 0), or, when it ended
// before it was ready, the status a run's would be.
int wait_until_session_ready(pid_t child, Fd ready, Fd errs) {
    char buf[4096];
    for (;;) {
        ssize_t n = read(errs.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        write_all(2, buf, static_cast<std::size_t>(n), "stderr");
    }
    std::string id;
    for (;;) {
        ssize_t n = read(ready.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        id.append(buf, static_cast<std::size_t>(n));
    }
    if (!id.empty() && id.back() == '\n') {
        std::fputs(id.c_str(), stdout);
        return 0;
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status) == 0 ? run::kExitSetup : WEXITSTATUS(status);
    std::fprintf(stderr, "corral session start: the session's supervisor died (%s)\n",
                 WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "?");
    return run::kExitSetup;
}

int session_start(int argc, char** argv) {
    run::RunRequest request;
    try {
        request = run::parse_session_request(argc, argv);
    } catch (const UsageError& e) {
        return usage_error("corral session start", e.what());
    }
    if (request.help) {
        std::fputs(session_help().c_str(), stdout);
        return 0;
    }
    if (geteuid() != 0) {
        std::fprintf(stderr, "corral session start: must run as root (it creates namespaces and cgroups)\n");
        return run::kExitSetup;
    }
    Fd names_lock;
    if (auto refused = claim_session_name(request, names_lock)) return *refused;
    int ready_pipe[2], err_pipe[2];
    if (pipe2(ready_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
        throw SysError("pipe2", "session start", errno);
    std::fflush(nullptr);
    pid_t child = fork();
    if (child < 0) throw SysError("fork", "session supervisor", errno);
    if (child == 0) {
        close(ready_pipe[0]);
        close(err_pipe[0]);
        become_session_supervisor(request, ready_pipe[1], err_pipe[1]);
    }
    close(ready_pipe[1]);
    close(err_pipe[1]);
    return wait_until_session_ready(child, Fd(ready_pipe[0]), Fd(err_pipe[0]));
}

// ---- session stop: `corral stop`, with a session's name as good as its id

int session_stop(int argc, char** argv) {
    RunsArgs parsed;
    try {
        parsed = parse_runs_args("session stop", argc, argv);
    } catch (const UsageError& e) {
        return usage_error("corral session stop", e.what());
    }
    if (parsed.help) return std::fputs(session_help().c_str(), stdout), 0;
    const std::string state_dir = run::require_private_state_dir("--state-dir", parsed.state_dir);
    // `corral stop`'s command line, a running session's name replaced by its id.
    std::vector<std::string> args{"stop", "--state-dir", state_dir};
    if (parsed.grace) args.insert(args.end(), {"--grace", std::to_string(parsed.grace->count()) + "ms"});
    args.push_back("--");
    for (std::string id : parsed.positional) {
        for (auto& e : run::list_runs(state_dir))
            if (is_session(e) && e.state == "running" && session_name_of(*e.record) == id) id = e.id;
        args.push_back(std::move(id));
    }
    std::vector<char*> c;
    for (auto& a : args) c.push_back(a.data());
    c.push_back(nullptr);
    return cmd_stop(static_cast<int>(args.size()), c.data());
}

// ---- session ls

int session_ls(int argc, char** argv) {
    RunsArgs parsed;
    try {
        parsed = parse_runs_args("session ls", argc, argv);
        if (!parsed.help && !parsed.positional.empty())
            throw UsageError("takes no arguments, got \"" + parsed.positional.front() + "\"");
    } catch (const UsageError& e) {
        return usage_error("corral session ls", e.what());
    }
    if (parsed.help) return std::fputs(session_help().c_str(), stdout), 0;
    const bool as_json = parsed.json_out, all = parsed.all;
    const std::string state_dir = run::require_private_state_dir("--state-dir", parsed.state_dir);
    json out = json::array();
    for (const auto& e : run::list_runs(state_dir)) {
        if (!is_session(e) || (!all && e.state != "running")) continue;
        int execs = 0;
        if (const std::string dir = e.run_dir + "/execs"; ::access(dir.c_str(), F_OK) == 0)
            for (int n = 1; ::access((dir + "/" + std::to_string(n)).c_str(), F_OK) == 0; ++n) execs = n;
        const std::string name = session_name_of(*e.record);
        out.push_back({{"id", e.id}, {"name", name.empty() ? json(nullptr) : json(name)}, {"state", e.state},
                       {"worker", e.record->value("worker", json(nullptr))}, {"run_dir", e.run_dir},
                       {"started_at", e.record->value("started_at", json(nullptr))}, {"execs", execs}});
    }
    if (as_json) {
        std::printf("%s\n", terminal_json(out.dump(2, ' ', false, json::error_handler_t::replace)).c_str());
        return 0;
    }
    std::printf("%-27s %-16s %-16s %-9s %s\n", "ID", "NAME", "WORKER", "STATE", "EXECS");
    for (const auto& s : out)
        std::printf("%-27s %-16s %-16s %-9s %d\n", s["id"].get<std::string>().c_str(),
                    s["name"].is_string() ? terminal_text(s["name"].get<std::string>()).c_str() : "-",
                    s["worker"].is_string() ? terminal_text(s["worker"].get<std::string>()).c_str() : "-",
                    s["state"].get<std::string>().c_str(), s["execs"].get<int>());
    return 0;
}


}  // namespace

int cmd_session(int argc, char** argv) {
    if (argc < 2 || std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h" ||
        std::string_view(argv[1]) == "help") {
        std::fputs(session_help().c_str(), argc < 2 ? stderr : stdout);
        return argc < 2 ? run::kExitUsage : 0;
    }
    const std::string_view sub = argv[1];
    if (sub == "start") return session_start(argc - 1, argv + 1);
    if (sub == "stop") return session_stop(argc - 1, argv + 1);
    if (sub == "ls") return session_ls(argc - 1, argv + 1);
    return usage_error("corral session", "unknown subcommand \"" + std::string(sub) + "\"; expected start, stop or ls");
}


}  // namespace corral::cli
