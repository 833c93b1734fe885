// supervisor/sandbox_supervise.cpp — supervise: the command's output to the
// caller and the run dir's logs, the deadline, the caller's signals and the
// init's reports, until the init has exited and both pipes reached EOF
// (docs/architecture.md, "While it runs: supervise").
#include "supervisor/sandbox.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <cerrno>

#include "base/log.hpp"
#include "base/sys_error.hpp"
#include "supervisor/command_path.hpp"
#include "supervisor/init_channel.hpp"
#include "supervisor/log_cap.hpp"
#include "supervisor/invocation.hpp"

namespace corral::supervisor {

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// False when the reader is gone (EPIPE). A sink that is full (EAGAIN: a
// non-blocking description, or a socket, written with MSG_DONTWAIT when
// `abandon` is given) is waited on while `abandon` stays false, and given up
// (false) once it is true: a session's stop never waits on a caller that
// reads nothing. Without `abandon` (a run) a full non-blocking sink drops
// the chunk, as it always did. Other failures are ignored: a terminal that
// errs must not stop the log or the run. `while_blocked` runs every 100 ms
// of such a wait: the command's deadline and grace keep their times while
// its caller reads nothing.
bool write_to_sink(int fd, const char* data, std::size_t len, const std::atomic<bool>* abandon,
                   const std::function<void()>& while_blocked) {
    bool socket = abandon != nullptr;   // tried as a socket first; ENOTSOCK: a plain write from then on
    while (len > 0) {
        ssize_t n = socket ? send(fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL) : write(fd, data, len);
        if (n < 0 && errno == ENOTSOCK) {
            socket = false;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EPIPE) return false;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (abandon == nullptr) return true;
            if (abandon->load()) return false;
            pollfd p{fd, POLLOUT, 0};
            if (poll(&p, 1, 100) == 0 && while_blocked) while_blocked();
            continue;
        }
        if (n <= 0) return true;
        data += n;
        len -= static_cast<std::size_t>(n);
    }
    return true;
}

// The stdout log is a plain file of the run dir, and none of corral's own.
void check_stdout_log_name(const std::string& name) {
    if (name.empty() || name.find('/') != std::string::npos || name == "stderr.log" || name == "run.json")
        throw UsageError("stdout log name \"" + name + "\": expected a plain file name in the run dir");
}

// A new, truncated log in the run dir (0600, never through a symlink).
Fd open_run_log(const std::string& dir, const std::string& name) {
    std::string path = dir + "/" + name;
    Fd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) throw SysError("open", path, errno);
    return fd;
}

int ms_until(Clock::time_point when, Clock::time_point now) {
    return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(when - now).count());
}

// One round's poll set: -1 for what is not watched.
struct PollSet {
    pollfd fds[7 + TerminalRelay::kMaxPollFds];
    int n = 0;
    int interrupt = -1, hangup = -1, out = -1, err = -1, report = -1, pid = -1;
    int tty_out = -1, tty_first = 0, tty_count = 0;   // --tty: the pty master's output, the relay's own

    int add(int fd) {
        fds[n] = {fd, POLLIN, 0};
        return n++;
    }
    bool has(int idx, short events) const { return idx >= 0 && (fds[idx].revents & events) != 0; }
};

constexpr short kReadable = POLLIN | POLLHUP | POLLERR;

// What one supervise() watches: a run's sandbox (its init) or one
// invocation of a session (its reaper).
struct Watched {
    Fd& out;                     // read ends of the command's stdout/stderr
    Fd& err;
    Fd& report;                  // InitMessages
    int pidfd;                   // the init's, or the invocation reaper's
    TerminalRelay* tty;          // --tty: a run's, or an exec's (corral exec --tty)
    std::string log_dir;
    std::string stdout_log_name;
    std::uint64_t log_limit;
    std::optional<std::chrono::milliseconds> timeout;
    std::chrono::milliseconds grace;
    std::function<std::string()> paths_tried;   // "CMD (searched PATH=...)" for a command not found
    const rootfs::MountPlan& plan;
    const rootfs::MountPlan& proc_plan;
    // A session's invocation outlives its command while background jobs
    // run: its end is the command's status, not the reaper's exit.
    bool done_at_status;
};

// "CMD (searched PATH=...)", or the path itself when it has a '/'.
std::string describe_paths_tried(const std::string& cmd, const std::vector<std::string>& env) {
    std::string tried = cmd;
    if (tried.find('/') == std::string::npos) tried += " (searched PATH=" + env_value(env, "PATH") + ")";
    return tried;
}

}  // namespace

// One supervise() call: its state and its steps.
class Supervision {
public:
    Supervision(Watched w, const OutputSinks& sinks)
        : w_(std::move(w)), sinks_(sinks), out_cap_{w_.log_limit}, err_cap_{w_.log_limit} {
        check_stdout_log_name(w_.stdout_log_name);
        out_log_ = open_run_log(w_.log_dir, w_.stdout_log_name);
        err_log_ = open_run_log(w_.log_dir, "stderr.log");
        if (w_.timeout) deadline_ = Clock::now() + *w_.timeout;
    }

    static Watched of(Sandbox& box) {
        const SandboxSpec& spec = box.spec_;
        return Watched{box.stdout_, box.stderr_, box.report_, box.pidfd_.get(), box.tty_.get(), spec.run_dir,
                       spec.stdout_log_name, spec.log_limit_bytes, spec.timeout, spec.stop_grace,
                       [&spec] { return describe_paths_tried(spec.argv.front(), command_environment(spec)); },
                       box.plan_, box.proc_plan_, false};
    }

    static Watched of(Invocation& inv, const Sandbox& box) {
        const InvocationSpec& spec = inv.spec_;
        return Watched{inv.stdout_, inv.stderr_, inv.report_, inv.pidfd_.get(), inv.tty_.get(), spec.log_dir, "stdout.log",
                       spec.log_limit_bytes, spec.timeout, spec.stop_grace,
                       [&inv] { return describe_paths_tried(inv.spec_.argv.front(), inv.env_); },
                       box.plan_, box.proc_plan_, true};
    }

    SuperviseResult run() {
        if (w_.tty) w_.tty->ask_through(sinks_.questions);
        while (anything_left_to_watch()) {
            PollSet set = poll_set();
            const auto now = Clock::now();
            if (stop_at_deadline(now) || kill_after_grace(now)) continue;
            if (drain_until_ && now >= *drain_until_) break;  // something holds a pipe open after the init died (D state)
            if (!wait_for_events(set, poll_timeout_ms(now))) continue;
            forward_output(set.has(set.out, kReadable), w_.out, sinks_.stdout_fd, out_log_, out_cap_,
                           w_.stdout_log_name, result_.stdout_reader_gone);
            forward_output(set.has(set.err, kReadable), w_.err, sinks_.stderr_fd, err_log_, err_cap_, "stderr.log",
                           result_.stderr_reader_gone);
            if (w_.tty) {
                forward_output(set.has(set.tty_out, kReadable), w_.tty->master(), sinks_.stdout_fd, out_log_,
                               out_cap_, w_.stdout_log_name, result_.stdout_reader_gone);
                w_.tty->step(set.fds + set.tty_first, set.tty_count);
            }
            if (set.has(set.report, kReadable)) take_report();
            if (set.has(set.interrupt, POLLIN)) stop_on_signal();
            if (set.has(set.hangup, kReadable)) read_caller();
            if (set.has(set.pid, POLLIN)) {
                init_exited_ = true;
                drain_until_ = Clock::now() + 2s;
                // Nobody waits for an answer any more; the box's last output is shown.
                if (w_.tty) w_.tty->end_questions();
            }
            if (w_.done_at_status && !init_exited_ && command_ended()) {
                // Background jobs may keep the reaper (and the pipes) alive:
                // what they write after 1 s is no longer this exec's.
                init_exited_ = true;
                drain_until_ = Clock::now() + 1s;
            }
        }
        if (w_.tty) {
            w_.tty->end_questions();
            restore_callers_terminal();
        }
        result_.stdout_bytes = out_cap_.produced;
        result_.stdout_logged = out_cap_.logged;
        result_.stderr_bytes = err_cap_.produced;
        result_.stderr_logged = err_cap_.logged;
        return result_;
    }

private:
    bool anything_left_to_watch() const {
        return w_.out.valid() || w_.err.valid() || w_.report.valid() || !init_exited_ ||
               (w_.tty && w_.tty->master().valid());
    }

    // Before corral says anything about the run's end, the caller's
    // terminal is as it was (teardown restores it too, on every path).
    void restore_callers_terminal() {
        if (std::string problem = w_.tty->restore_caller(); !problem.empty())
            result_.notes.push_back("warning: restoring the terminal's settings after the run: " + problem);
    }

    PollSet poll_set() const {
        PollSet set;
        if (sinks_.interrupt_fd >= 0 && !result_.stop_killed && !init_exited_) set.interrupt = set.add(sinks_.interrupt_fd);
        if (sinks_.hangup_fd >= 0 && !result_.caller_gone && !init_exited_) set.hangup = set.add(sinks_.hangup_fd);
        if (w_.out.valid()) set.out = set.add(w_.out.get());
        if (w_.err.valid()) set.err = set.add(w_.err.get());
        if (w_.report.valid()) set.report = set.add(w_.report.get());
        if (!init_exited_) set.pid = set.add(w_.pidfd);
        if (w_.tty) {
            // While a question is up the box's output waits in its pty.
            if (w_.tty->master().valid() && !w_.tty->output_paused()) set.tty_out = set.add(w_.tty->master().get());
            set.tty_first = set.n;
            set.tty_count = w_.tty->add_poll_fds(set.fds + set.n);
            set.n += set.tty_count;
        }
        return set;
    }

    // A stop: SIGTERM to the command now (through the init, which passes it
    // on: sandbox_init.cpp), SIGKILL to the whole sandbox when the grace ends
    // (killing the init makes the kernel kill every process in its PID
    // namespace). A grace of 0 kills at once.
    void begin_stop(std::chrono::milliseconds grace) {
        result_.stop_grace = grace;
        if (grace.count() <= 0) return kill_now();
        signal_through_pidfd(w_.pidfd, SIGTERM);
        kill_at_ = Clock::now() + grace;
    }

    void kill_now() {
        signal_through_pidfd(w_.pidfd, SIGKILL);
        result_.stop_killed = true;
        kill_at_.reset();
    }

    bool stopping() const { return result_.stop_grace.has_value(); }

    bool command_ended() const { return result_.wait_status || result_.not_found || result_.setup_failure; }

    // The caller's connection: a byte that is SIGINT, SIGTERM or SIGHUP is
    // that signal, which the caller got and passes on (corral exec's Ctrl-C),
    // taken as a run takes its own (stop_for_signal); any other byte is
    // dropped. EOF: the caller is gone, the exec stops with the spec's grace.
    void read_caller() {
        unsigned char got[256];
        ssize_t n = recv(sinks_.hangup_fd, got, sizeof got, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        if (n > 0) {
            for (ssize_t i = 0; i < n; ++i)
                if (got[i] == SIGINT || got[i] == SIGTERM || got[i] == SIGHUP) stop_for_signal(got[i], false, -1);
            return;
        }
        result_.caller_gone = true;
        if (!stopping()) begin_stop(w_.grace);
    }

    // The deadline covers the whole sandbox. True when the stop began just now.
    bool stop_at_deadline(Clock::time_point now) {
        if (!deadline_ || result_.deadline_hit || stopping() || now < *deadline_) return false;
        result_.deadline_hit = true;
        begin_stop(w_.grace);
        return true;
    }

    // The grace is over and the sandbox still runs. True when it was killed just now.
    bool kill_after_grace(Clock::time_point now) {
        if (!kill_at_ || init_exited_ || now < *kill_at_) return false;
        kill_now();
        return true;
    }

    // Until the deadline or the grace's end, and after the init's death at
    // most until the drain ends; -1: no bound.
    int poll_timeout_ms(Clock::time_point now) const {
        int timeout_ms = -1;
        auto bound = [&](Clock::time_point when) {
            const int left = ms_until(when, now);
            timeout_ms = timeout_ms < 0 ? left : std::min(timeout_ms, left);
        };
        if (deadline_ && !result_.deadline_hit && !stopping()) bound(*deadline_);
        if (kill_at_ && !init_exited_) bound(*kill_at_);
        if (drain_until_) bound(*drain_until_);
        return timeout_ms;
    }

    // False if a signal interrupted the wait.
    static bool wait_for_events(PollSet& set, int timeout_ms) {
        int rc = poll(set.fds, static_cast<nfds_t>(set.n), timeout_ms);
        if (rc >= 0) return true;
        if (errno == EINTR) return false;
        throw SysError("poll", "sandbox output", errno);
    }

    // The log keeps the first spec.log_limit_bytes; the sink gets everything.
    // EOF (or a read error) closes the pipe: it is not watched again. A sink
    // whose reader is gone (`corral run -- yes | head -2`) closes it too: the
    // command then gets EPIPE/SIGPIPE on its next write, as it would outside
    // corral, instead of writing on into a pipe nobody reads.
    void forward_output(bool readable, Fd& pipe, int sink, const Fd& log, LogCap& cap, const std::string& name,
                        bool& reader_gone) {
        if (!readable) return;
        ssize_t got = read(pipe.get(), buf_, sizeof buf_);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) return;  // EAGAIN: the --tty master is non-blocking
        if (got <= 0) {
            pipe.reset();
            return;
        }
        const std::size_t keep = cap.admit(static_cast<std::size_t>(got));
        if (keep > 0) write_all(log.get(), buf_, keep, w_.log_dir + "/" + name);
        if (cap.cut_now)
            result_.notes.push_back("warning: " + name + " reached --log-limit (" + std::to_string(w_.log_limit) +
                                    " bytes); the rest of the command's output is not logged, only streamed");
        const auto keep_time = [this] {
            const auto now = Clock::now();
            if (!stop_at_deadline(now)) kill_after_grace(now);
        };
        if (sink >= 0 && !write_to_sink(sink, buf_, static_cast<std::size_t>(got), sinks_.abandon, keep_time)) {
            reader_gone = true;
            pipe.reset();
        }
    }

    // The invocation's exit status (the reaper's report comes first, the
    // init's, for a reaper killed first, after it), or a step of the
    // invocation that failed before execve. EOF: nothing more will come.
    void take_report() {
        InitMessage msg{};
        if (!read_message(w_.report.get(), msg)) {
            w_.report.reset();
        } else if (msg.kind == InitMessageKind::command_exited) {
            if (!result_.wait_status) result_.wait_status = msg.wait_status;
            // A session's reaper reports nothing more: its exec is over
            // without waiting for the reaper to close the pipe.
            if (w_.done_at_status) w_.report.reset();
        } else if (msg.kind == InitMessageKind::setup_failed) {
            if (msg.step == SetupStep::exec_command && msg.err == ENOENT)
                result_.not_found = w_.paths_tried();
            else
                result_.setup_failure = setup_error(msg, w_.plan, w_.proc_plan);
        }
    }

    // A signal to the supervisor stops the sandbox, which is then still torn
    // down and verified (instead of being left to the parent-death signal).
    // A signal queued with a value is `corral stop`'s (the value is --grace D
    // in milliseconds, or -1); a second signal during the grace kills at once.
    void stop_on_signal() {
        signalfd_siginfo si{};
        if (read(sinks_.interrupt_fd, &si, sizeof si) != static_cast<ssize_t>(sizeof si)) return;
        // SI_QUEUE is `corral stop`'s, with or without --grace (-1: the run's
        // own grace); a plain kill(1) or Ctrl-C is SI_USER / SI_KERNEL.
        stop_for_signal(static_cast<int>(si.ssi_signo), si.ssi_code == SI_QUEUE, si.ssi_int);
    }

    // A signal for the command: the first begins the stop (SIGTERM, SIGKILL
    // after the grace: `grace_ms` when `queued` gives one, else the spec's),
    // a second during the grace kills at once.
    void stop_for_signal(int signo, bool queued, int grace_ms) {
        if (stopping()) {
            if (!result_.stop_killed) {
                result_.second_signal = signo;
                kill_now();
            }
            return;
        }
        result_.interrupted_by = signo;
        auto grace = w_.grace;
        if (queued) {
            result_.stopped_by_request = true;
            if (grace_ms >= 0) grace = std::chrono::milliseconds(grace_ms);
        }
        begin_stop(grace);
    }

    Watched w_;
    const OutputSinks& sinks_;
    LogCap out_cap_;
    LogCap err_cap_;
    Fd out_log_;
    Fd err_log_;
    std::optional<Clock::time_point> deadline_;
    std::optional<Clock::time_point> drain_until_;   // set once the init has exited
    std::optional<Clock::time_point> kill_at_;       // a stop's grace ends here
    bool init_exited_ = false;
    SuperviseResult result_;
    char buf_[65536];
};

SuperviseResult supervise(Sandbox& box, const OutputSinks& sinks) { return Supervision(Supervision::of(box), sinks).run(); }

SuperviseResult supervise(Invocation& inv, const Sandbox& box, const OutputSinks& sinks) {
    return Supervision(Supervision::of(inv, box), sinks).run();
}

}  // namespace corral::supervisor
