#include "run/session_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/fd.hpp"
#include "base/log.hpp"
#include "base/parse.hpp"
#include "base/sys_error.hpp"
#include "journal/covered_files.hpp"
#include "run/exec_protocol.hpp"
#include "run/exec_wire.hpp"
#include "run/outcome.hpp"
#include "run/run_journal.hpp"
#include "supervisor/fd_passing.hpp"
#include "supervisor/init_channel.hpp"
#include "supervisor/run_record.hpp"
#include "supervisor/invocation.hpp"
#include "supervisor/agent_gone.hpp"

namespace corral::run {

using namespace std::chrono_literals;
using nlohmann::json;
using supervisor::Role;

std::string session_socket_path(const std::string& run_dir) { return run_dir + "/session.sock"; }

namespace {

using Clock = std::chrono::steady_clock;

ExecAnswer refusal(int status, const std::string& message) {
    ExecAnswer a;
    a.status = status;
    a.outcome = supervisor::Outcome::refused;
    a.messages.push_back(message);
    return a;
}

void make_private_subdir(const std::string& path) {
    if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) throw SysError("mkdir", path, errno);
}

class SessionServer {
    struct Connection {
        Fd fd;
        std::thread thread;
        bool done = false;       // under mu_
        bool answering = false;  // under mu_: its request was read, an answer is owed
    };

public:
    SessionServer(supervisor::Sandbox& box, int interrupt_fd, const SessionServerOptions& o)
        : box_(box), interrupt_fd_(interrupt_fd), o_(o) {}

    supervisor::SuperviseResult run() {
        const std::string path = session_socket_path(o_.run_dir);
        Fd listener = listen_at(path);
        try {
            serve(listener, path);
        } catch (...) {
            // Whatever failed, no exec thread is left running into the teardown.
            listener.reset();
            ::unlink(path.c_str());
            stop_everything(0ms);
            throw;
        }
        return result_;
    }

private:
    void serve(Fd& listener, const std::string& path) {
        make_private_subdir(o_.run_dir + "/execs");
        if (o_.on_ready) o_.on_ready();
        std::optional<Clock::time_point> deadline;
        if (o_.timeout) deadline = Clock::now() + *o_.timeout;
        std::chrono::milliseconds grace = o_.grace;
        for (;;) {
            pollfd fds[3] = {{listener.get(), POLLIN, 0}, {interrupt_fd_, POLLIN, 0}, {box_.pidfd(), POLLIN, 0}};
            int timeout_ms = -1;
            if (deadline) {
                auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now()).count();
                timeout_ms = static_cast<int>(std::max<long long>(0, left));
            }
            int rc = poll(fds, 3, timeout_ms);  // a negative fd (no interrupt fd) is ignored
            if (rc < 0 && errno == EINTR) continue;
            if (rc < 0) throw SysError("poll", "session socket", errno);
            if (deadline && Clock::now() >= *deadline) {
                result_.deadline_hit = true;
                break;
            }
            if (fds[2].revents & POLLIN) {
                log::warn("the session's init exited; the session ends");
                init_died_ = true;
                break;
            }
            if (fds[1].revents & POLLIN) {
                signalfd_siginfo si{};
                if (read(interrupt_fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
                    result_.interrupted_by = static_cast<int>(si.ssi_signo);
                    // `corral stop` queues its SIGTERM (SI_QUEUE), with its --grace in ms or -1.
                    if (si.ssi_code == SI_QUEUE) {
                        result_.stopped_by_request = true;
                        if (si.ssi_int >= 0) grace = std::chrono::milliseconds(si.ssi_int);
                    }
                    break;
                }
            }
            if (fds[0].revents & POLLIN) accept_one(listener.get());
        }
        listener.reset();
        ::unlink(path.c_str());  // a late `corral exec` is told the session ended, not left waiting
        {
            std::lock_guard<std::mutex> lock(mu_);
            session_end_ = why_session_ends(grace);
        }
        stop_everything(grace);
    }

    // What each exec still running is told of its session's end (with its
    // own status: its command was stopped with the session).
    std::string why_session_ends(std::chrono::milliseconds grace) const {
        const std::string stop = "every exec got SIGTERM, the session was killed after the " + format_duration(grace) + " grace";
        if (result_.deadline_hit)
            return "the session ended: its deadline (--timeout " + format_duration(*o_.timeout) + ") was reached; " + stop;
        if (init_died_) return "the session ended: its init exited";
        if (result_.stopped_by_request) return "the session ended: stopped by `corral session stop` or `corral stop`; " + stop;
        if (result_.interrupted_by)
            return std::string("the session ended: its supervisor got SIG") + sigabbrev_np(*result_.interrupted_by) + "; " + stop;
        return "the session ended; " + stop;
    }

    // One thread per connection; finished ones are joined here, and reapers
    // seen gone dropped, so a long session holds only what is live.
    void accept_one(int listener) {
        Fd conn(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
        if (!conn.valid()) {
            // Out of fds: wait instead of spinning on a listener that stays readable.
            if (errno == EMFILE || errno == ENFILE) std::this_thread::sleep_for(100ms);
            return;
        }
        std::lock_guard<std::mutex> lock(mu_);
        reap_finished_locked();
        auto slot = std::make_shared<Connection>();
        slot->fd = std::move(conn);
        try {
            ++active_;
            slot->thread = std::thread([this, slot] {
                serve_connection(*slot);
                std::lock_guard<std::mutex> done(mu_);
                slot->fd.reset();  // EOF after the answer: the caller reads until it
                slot->done = true;
                --active_;
                idle_.notify_all();
            });
            connections_.push_back(slot);
        } catch (const std::exception& e) {
            --active_;
            send_answer(slot->fd.get(), refusal(kExitSetup, std::string("the session cannot start a thread for this exec: ") + e.what()));
        }
    }

    void reap_finished_locked() {
        for (auto it = connections_.begin(); it != connections_.end();) {
            if ((*it)->done) {
                if ((*it)->thread.joinable()) (*it)->thread.join();
                it = connections_.erase(it);
            } else {
                ++it;
            }
        }
        for (auto it = reapers_.begin(); it != reapers_.end();)
            it = supervisor::pidfd_exited(it->pidfd.get()) ? reapers_.erase(it) : it + 1;
    }

    void serve_connection(Connection& slot) {
        Fd& conn = slot.fd;
        const long uid = peer_uid(conn.get());
        if (uid != 0) {
            // Only root may run commands in a sandbox (as corral run needs root).
            send_answer(conn.get(), refusal(kExitSetup, "refused: the session serves root only (the peer is uid " +
                                                            std::to_string(uid) + ")"));
            return;
        }
        ReceivedRequest received;
        ExecRequest request;
        try {
            received = receive_request(conn.get());
            if (auto applied = parse_workspace_applied_line(received.line)) {
                send_answer(conn.get(), record_workspace_applied(*applied));
                return;
            }
            request = parse_exec_request_line(received.line);
        } catch (const UsageError& e) {
            send_answer(conn.get(), refusal(kExitUsage, e.what()));
            return;
        } catch (const std::exception& e) {
            send_answer(conn.get(), refusal(kExitSetup, e.what()));
            return;
        }
        {
            std::lock_guard<std::mutex> lock(mu_);
            slot.answering = true;
        }
        // tty: stdin and the window-change pipe; stdin: stdin alone; else neither.
        if (request.tty != (received.in.valid() && received.window_changes.valid()) ||
            (request.stdin && (!received.in.valid() || received.window_changes.valid())) ||
            (!request.tty && !request.stdin && received.in.valid())) {
            send_answer(conn.get(), refusal(kExitUsage, request.tty ? "exec request: tty: the caller's stdin and window-change pipe did not come with it (SCM_RIGHTS)"
                                                        : request.stdin ? "exec request: stdin: the caller's stdin (alone) did not come with it (SCM_RIGHTS)"
                                                                        : "exec request: more fds than stdout and stderr without tty or stdin"));
            return;
        }
        Fd out = own_nonblocking_copy(std::move(received.out));
        Fd err = own_nonblocking_copy(std::move(received.err));
        std::optional<supervisor::CallerTerminal> terminal;
        // The caller's stdin stays as it came (the relay polls it; raw mode
        // is set on it), its stdout is our non-blocking copy.
        if (request.tty)
            terminal = supervisor::CallerTerminal{received.in.get(), out.get(), received.window_changes.get(),
                                                  supervisor::box_terminal_type(request.term.c_str())};
        send_answer(conn.get(), run_exec(conn.get(), request, out.get(), err.get(), terminal,
                                         request.stdin ? received.in.get() : -1));
    }

    ExecAnswer record_workspace_applied(const nlohmann::json& applied) {
        if (!o_.workspace_applied) return refusal(kExitUsage, "this session has no reviewed workspace (--review)");
        const std::string why = o_.workspace_applied(applied);
        if (!why.empty()) return refusal(kExitSetup, "the apply was not recorded: " + why);
        ExecAnswer ok;
        ok.status = 0;
        ok.outcome = supervisor::Outcome::exited;
        return ok;
    }

    // A prompt: the worker's agent CLI, its command line made as `corral run
    // --prompt` makes it; exec.json keeps the prompt's size, not its text.
    std::optional<ExecAnswer> prompt_argv(const std::string& prompt, std::vector<std::string>& argv, json& record) {
        if (!o_.prompt_argv) return refusal(kExitUsage, "--prompt: " + o_.no_agent);
        try {
            argv = o_.prompt_argv(prompt);
        } catch (const UsageError& e) {
            return refusal(kExitUsage, e.what());
        }
        record["prompt_bytes"] = prompt.size();
        record["argv"] = json(nullptr);
        return std::nullopt;
    }

    supervisor::InvocationSpec invocation_spec(const ExecRequest& request, std::vector<std::string> argv,
                                               const std::string& dir,
                                               const std::optional<supervisor::CallerTerminal>& terminal,
                                               int stdin_fd) const {
        supervisor::InvocationSpec spec;
        spec.role = request.role;
        spec.argv = std::move(argv);
        spec.env = request.env;
        spec.cwd = request.cwd.value_or("");
        spec.log_dir = dir;
        spec.timeout = request.timeout;
        spec.stop_grace = request.grace.value_or(o_.grace);
        spec.log_limit_bytes = o_.log_limit_bytes;
        spec.terminal = terminal;
        spec.stdin_fd = stdin_fd;
        return spec;
    }

    // How the exec ended, in its answer (run/outcome.hpp's one rule).
    static void answer_exec_end(const supervisor::SuperviseResult& result, const supervisor::InvocationSpec& spec,
                                ExecAnswer& answer) {
        CommandOutcome o = command_outcome(result, false);
        // The first cause names the end: a caller that left after its deadline was reached does not.
        if (result.caller_gone && !result.deadline_hit) o.outcome = supervisor::Outcome::caller_gone;
        answer.status = o.status;
        answer.outcome = o.outcome;
        if (o.message) answer.messages.push_back(*o.message);
        const std::string how =
            result.stop_grace ? stop_how(*result.stop_grace, result.stop_killed, result.second_signal, "CMD") : "";
        if (result.deadline_hit)
            answer.messages.push_back("deadline of " + std::to_string(spec.timeout->count()) + " ms reached; " +
                                      (result.stop_killed ? "killed after the grace" : "ended within the grace"));
        else if (result.interrupted_by)
            answer.messages.push_back(std::string("interrupted by SIG") + sigabbrev_np(*result.interrupted_by) +
                                      " (corral exec's, passed on); " + how);
    }

    // exec.json's fields of the exec's end.
    static void record_exec_end(const supervisor::SuperviseResult& result, const ExecAnswer& answer, json& record) {
        record["ended_at"] = supervisor::format_rfc3339_ms(std::chrono::system_clock::now());
        record["status"] = answer.status;
        record["outcome"] = supervisor::outcome_name(answer.outcome);
        record["exit_code"] = json(nullptr);
        record["signal"] = json(nullptr);
        if (result.wait_status) {
            if (WIFEXITED(*result.wait_status)) record["exit_code"] = WEXITSTATUS(*result.wait_status);
            if (WIFSIGNALED(*result.wait_status)) record["signal"] = WTERMSIG(*result.wait_status);
        }
        record["deadline_hit"] = result.deadline_hit;
        record["caller_gone"] = result.caller_gone;
        record["stop"] = result.stop_grace ? json{{"grace_ms", result.stop_grace->count()}, {"killed", result.stop_killed}}
                                           : json(nullptr);
        record["output"] = {{"stdout", {{"bytes", result.stdout_bytes}, {"logged", result.stdout_logged},
                                        {"reader_gone", result.stdout_reader_gone}}},
                            {"stderr", {{"bytes", result.stderr_bytes}, {"logged", result.stderr_logged},
                                        {"reader_gone", result.stderr_reader_gone}}}};
    }

    // The exec's start in the journal, group-committed like the gateway's
    // decisions: the session's admission (durable) authorised the box; an
    // exec is an act within it, visible at once and durable within the group
    // commit's bound (docs/journal.md "What a session records"). A refusal
    // when it cannot be written: the command does not start.
    std::optional<ExecAnswer> journal_exec_start(const json& record, const supervisor::InvocationSpec& spec) {
        if (!o_.journal) return std::nullopt;
        try {
            o_.journal->append(journal::kTypeExec, exec_start_payload(record, spec), journal::Commit::group);
        } catch (const std::exception& e) {
            return refusal(kExitSetup,
                           std::string("journal: the exec record was not written, the command does not start: ") + e.what());
        }
        return std::nullopt;
    }

    // An exec whose start failed after its number was taken: 125, recorded.
    ExecAnswer exec_failed(const std::string& dir, const std::string& why, json& record, ExecAnswer answer) {
        answer.status = kExitSetup;
        answer.outcome = supervisor::Outcome::setup_failed;
        answer.messages.push_back(why);
        record["status"] = answer.status;
        record["outcome"] = supervisor::outcome_name(answer.outcome);
        write_exec_record(dir, record);
        journal_exec_end(dir, record, answer);
        return answer;
    }

    // Refusal lines for a non-tty exec's caller while its command runs (with
    // --tty the box's program owns the caller's screen: none, as corral run --tty).
    // The line is written without waiting: a caller that reads nothing misses it.
    int listen_to_refusals(const ExecRequest& request, int err_fd) {
        if (!o_.refusals || request.tty) return 0;
        return o_.refusals->add(std::string(supervisor::role_name(request.role)), [err_fd](const std::string& line) {
            const std::string text = "corral exec: " + line + "\n";
            ssize_t n = send(err_fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n < 0 && errno == ENOTSOCK) n = write(err_fd, text.data(), text.size());
            (void)n;
        });
    }

    ExecAnswer run_exec(int conn, const ExecRequest& request, int out_fd, int err_fd,
                        const std::optional<supervisor::CallerTerminal>& terminal, int stdin_fd) {
        json record{{"role", std::string(supervisor::role_name(request.role))}, {"argv", request.argv}, {"tty", request.tty}};
        // A prompt: the worker's agent CLI, its command line made as `corral
        // run --prompt` makes it; exec.json keeps the prompt's size, not its text.
        std::vector<std::string> argv = request.argv;
        if (request.prompt)
            if (auto refused = prompt_argv(*request.prompt, argv, record)) return *refused;
        json env_names = json::array();
        for (const auto& kv : request.env) env_names.push_back(kv.first);
        record["env_names"] = env_names;
        const auto started = std::chrono::system_clock::now();
        record["started_at"] = supervisor::format_rfc3339_ms(started);
        // The agent's execs start under the gate shared, a verifier's under it
        // alone: no agent exec can be between its spawn and its tracking
        // while a verifier kills the agent's invocations, sweeps and starts.
        std::shared_lock<std::shared_mutex> agent_gate(role_gate_, std::defer_lock);
        std::unique_lock<std::shared_mutex> verifier_gate(role_gate_, std::defer_lock);
        if (request.role == Role::verifier) {
            verifier_gate.lock();
            try {
                record["agent_stopped"] = stop_agent_processes();
            } catch (const std::exception& e) {
                return refusal(kExitSetup, std::string("the verifier did not start: ") + e.what());
            }
        } else if (request.role == Role::agent) {
            agent_gate.lock();
        }
        int n = 0;
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (stopping_) return refusal(kExitSetup, "the session is stopping; no new exec starts");
            n = ++next_exec_;
        }
        const std::string dir = o_.run_dir + "/execs/" + std::to_string(n);
        const supervisor::InvocationSpec spec = invocation_spec(request, std::move(argv), dir, terminal, stdin_fd);
        ExecAnswer answer;
        answer.exec = n;
        record["exec"] = n;
        if (auto refused = journal_exec_start(record, spec)) return *refused;
        supervisor::SuperviseResult result;
        try {
            make_private_subdir(dir);
            supervisor::Invocation inv = supervisor::spawn_invocation(box_, spec);
            record["uid"] = inv.uid();
            try {
                track(n, request.role, inv.pidfd());
            } catch (...) {
                kill_and_wait(inv.pidfd());  // never a command nobody supervises
                throw;
            }
            if (agent_gate.owns_lock()) agent_gate.unlock();
            if (verifier_gate.owns_lock()) verifier_gate.unlock();
            const int listener = listen_to_refusals(request, err_fd);
            try {
                result = supervisor::supervise(inv, box_, supervisor::OutputSinks{out_fd, err_fd, -1, conn, &abandon_sinks_});
            } catch (...) {
                if (listener) o_.refusals->remove(listener);
                kill_and_wait(inv.pidfd());
                throw;
            }
            if (listener) o_.refusals->remove(listener);
        } catch (const UsageError& e) {
            return refusal(kExitUsage, e.what());
        } catch (const std::exception& e) {
            return exec_failed(dir, e.what(), record, answer);
        }
        answer_exec_end(result, spec, answer);
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (!session_end_.empty()) answer.messages.push_back(session_end_);
        }
        record_exec_end(result, answer, record);
        write_exec_record(dir, record);
        journal_exec_end(dir, record, answer);
        return answer;
    }

    // The exec record's payload: what exec.json says at the start (argv or
    // the prompt's size, never its text; env names, never values).
    static json exec_start_payload(const json& record, const supervisor::InvocationSpec& spec) {
        json payload{{"exec", record["exec"]}, {"role", record["role"]}, {"argv", record["argv"]},
                     {"tty", record["tty"]},   {"env_names", record["env_names"]},
                     {"cwd", spec.cwd.empty() ? json(nullptr) : json(spec.cwd)},
                     {"timeout_ms", spec.timeout ? json(spec.timeout->count()) : json(nullptr)}};
        if (record.contains("prompt_bytes")) payload["prompt_bytes"] = record["prompt_bytes"];
        return payload;
    }

    // The exec_end record: how it ended and its logs' SHA-256. A journal
    // that cannot take it says so in the answer: the exec's end is then
    // unsigned, and every later exec is refused (the writer failed closed).
    void journal_exec_end(const std::string& dir, const json& record, ExecAnswer& answer) {
        if (!o_.journal) return;
        json payload{{"exec", record["exec"]}, {"status", record["status"]}, {"outcome", record["outcome"]}};
        for (const char* f : {"uid", "exit_code", "signal", "deadline_hit", "caller_gone", "ended_at"})
            if (record.contains(f)) payload[f] = record[f];
        if (record.contains("output")) {
            payload["output"] = record["output"];
            for (const char* stream : {"stdout", "stderr"})
                payload["output"][stream]["log_sha256"] = journal::file_sha256(dir + "/" + stream + ".log");
        }
        try {
            o_.journal->append(journal::kTypeExecEnd, payload, journal::Commit::group);
        } catch (const std::exception& e) {
            answer.messages.push_back(std::string("journal: the exec's end was not recorded: ") + e.what());
            if (answer.status == 0) answer.status = kExitSetup;
        }
    }

    static void write_exec_record(const std::string& dir, const json& record) {
        try {
            supervisor::write_record_file(dir, "exec.json", record);
        } catch (const std::exception& e) {
            log::warn(std::string("writing ") + dir + "/exec.json: " + e.what());
        }
    }

    // Every invocation's reaper, until it is seen gone: a session's
    // invocation outlives its command while its background jobs run.
    struct Reaper {
        int exec;
        Role role;
        Fd pidfd;
    };

    void track(int n, Role role, int pidfd) {
        Fd copy(fcntl(pidfd, F_DUPFD_CLOEXEC, 3));
        if (!copy.valid()) throw SysError("fcntl(F_DUPFD_CLOEXEC)", "invocation pidfd", errno);
        std::lock_guard<std::mutex> lock(mu_);
        reapers_.push_back({n, role, std::move(copy)});
    }

    static void kill_and_wait(int pidfd) {
        supervisor::signal_through_pidfd(pidfd, SIGKILL);
        pollfd p{pidfd, POLLIN, 0};
        poll(&p, 1, 10000);
    }

    // Before a verifier: every invocation of the agent is handed to
    // supervisor::leave_nothing_of_the_agent (killed, no process and no
    // socket of its UID left). Throws if something is.
    json stop_agent_processes() {
        std::vector<Fd> agent;
        {
            std::lock_guard<std::mutex> lock(mu_);
            for (auto it = reapers_.begin(); it != reapers_.end();) {
                if (it->role == Role::agent) {
                    agent.push_back(std::move(it->pidfd));
                    it = reapers_.erase(it);
                } else {
                    ++it;
                }
            }
        }
        return supervisor::leave_nothing_of_the_agent(box_, std::move(agent));
    }

    // The session's end: SIGTERM to every live invocation (its reaper passes
    // it on to the command's process group), the grace, then the init killed
    // (the kernel kills every invocation with it) and the exec threads joined.
    void stop_everything(std::chrono::milliseconds grace) {
        std::unique_lock<std::mutex> lock(mu_);
        stopping_ = true;
        bool any_alive = false;
        for (auto& r : reapers_)
            if (!supervisor::pidfd_exited(r.pidfd.get())) {
                any_alive = true;
                if (grace.count() > 0) supervisor::signal_through_pidfd(r.pidfd.get(), SIGTERM);
            }
        result_.stop_grace = grace;
        const auto until = Clock::now() + grace;
        auto all_gone = [&] {
            if (active_ > 0) return false;
            for (auto& r : reapers_)
                if (!supervisor::pidfd_exited(r.pidfd.get())) return false;
            return true;
        };
        while (any_alive && grace.count() > 0 && Clock::now() < until && !all_gone())
            idle_.wait_for(lock, 50ms);
        result_.stop_killed = any_alive && !all_gone();
        lock.unlock();
        supervisor::signal_through_pidfd(box_.pidfd(), SIGKILL);
        abandon_sinks_ = true;
        // The exec threads end as their invocations die (a sink the caller
        // leaves full is given up: abandon_sinks_) and answer their callers,
        // who get their command's status (143 for the SIGTERM). Only a caller
        // that has not sent its whole request yet is cut off: it is owed no answer.
        std::vector<std::shared_ptr<Connection>> connections;
        {
            std::lock_guard<std::mutex> l(mu_);
            connections.swap(connections_);
            for (auto& c : connections)
                if (!c->done && !c->answering) ::shutdown(c->fd.get(), SHUT_RDWR);
        }
        for (auto& c : connections)
            if (c->thread.joinable()) c->thread.join();
        if (init_died_ && !result_.interrupted_by && !result_.deadline_hit) result_.wait_status.reset();
    }

    supervisor::Sandbox& box_;
    int interrupt_fd_;
    const SessionServerOptions& o_;

    std::mutex mu_;
    std::condition_variable idle_;
    std::shared_mutex role_gate_;
    std::vector<std::shared_ptr<Connection>> connections_;
    std::vector<Reaper> reapers_;
    int next_exec_ = 0;
    int active_ = 0;
    bool stopping_ = false;
    bool init_died_ = false;
    std::string session_end_;  // under mu_: why_session_ends, once the session stops
    std::atomic<bool> abandon_sinks_{false};
    supervisor::SuperviseResult result_;
};

}  // namespace

supervisor::SuperviseResult serve_session(supervisor::Sandbox& box, int interrupt_fd, const SessionServerOptions& options) {
    return SessionServer(box, interrupt_fd, options).run();
}

}  // namespace corral::run
