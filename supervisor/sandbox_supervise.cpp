// supervisor/sandbox_supervise.cpp — supervise: the command's output to the
// caller and the run dir's logs, the deadline, the caller's signals and the
// init's reports, until the init has exited and both pipes reached EOF
// (docs/architecture.md, "While it runs: supervise").
#include "supervisor/sandbox.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/log.hpp"
#include "base/sys_error.hpp"
#include "supervisor/command_path.hpp"
#include "supervisor/init_channel.hpp"
#include "supervisor/log_cap.hpp"

namespace corral::supervisor {

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// False when the reader is gone (EPIPE). Other failures are ignored: a
// terminal that errs must not stop the log or the run.
bool write_to_sink(int fd, const char* data, std::size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EPIPE) return false;
        if (n <= 0) return true;
        data += n;
        len -= static_cast<std::size_t>(n);
    }
    return true;
}

// The stdout log is a plain file of the run dir, and none of corral's own.
void check_stdout_log_name(const SandboxSpec& spec) {
    if (spec.stdout_log_name.empty() || spec.stdout_log_name.find('/') != std::string::npos ||
        spec.stdout_log_name == "stderr.log" || spec.stdout_log_name == "run.json")
        throw UsageError("stdout log name \"" + spec.stdout_log_name + "\": expected a plain file name in the run dir");
}

// A new, truncated log in the run dir (0600, never through a symlink).
Fd open_run_log(const SandboxSpec& spec, const std::string& name) {
    std::string path = spec.run_dir + "/" + name;
    Fd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) throw SysError("open", path, errno);
    return fd;
}

int ms_until(Clock::time_point when, Clock::time_point now) {
    return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(when - now).count());
}

// One round's poll set: -1 for what is not watched.
struct PollSet {
    pollfd fds[6 + TerminalRelay::kMaxPollFds];
    int n = 0;
    int interrupt = -1, out = -1, err = -1, report = -1, pid = -1;
    int tty_out = -1, tty_first = 0, tty_count = 0;   // --tty: the pty master's output, the relay's own

    int add(int fd) {
        fds[n] = {fd, POLLIN, 0};
        return n++;
    }
    bool has(int idx, short events) const { return idx >= 0 && (fds[idx].revents & events) != 0; }
};

constexpr short kReadable = POLLIN | POLLHUP | POLLERR;

}  // namespace

// One supervise() call: its state and its steps.
class Supervision {
public:
    Supervision(Sandbox& box, const OutputSinks& sinks)
        : box_(box), spec_(box.spec_), sinks_(sinks), out_cap_{spec_.log_limit_bytes}, err_cap_{spec_.log_limit_bytes} {
        check_stdout_log_name(spec_);
        out_log_ = open_run_log(spec_, spec_.stdout_log_name);
        err_log_ = open_run_log(spec_, "stderr.log");
        if (spec_.timeout) deadline_ = Clock::now() + *spec_.timeout;
    }

    SuperviseResult run() {
        while (anything_left_to_watch()) {
            PollSet set = poll_set();
            const auto now = Clock::now();
            if (stop_at_deadline(now) || kill_after_grace(now)) continue;
            if (drain_until_ && now >= *drain_until_) break;  // something holds a pipe open after the init died (D state)
            if (!wait_for_events(set, poll_timeout_ms(now))) continue;
            forward_output(set.has(set.out, kReadable), box_.stdout_, sinks_.stdout_fd, out_log_, out_cap_,
                           spec_.stdout_log_name, result_.stdout_reader_gone);
            forward_output(set.has(set.err, kReadable), box_.stderr_, sinks_.stderr_fd, err_log_, err_cap_, "stderr.log",
                           result_.stderr_reader_gone);
            if (box_.tty_) {
                forward_output(set.has(set.tty_out, kReadable), box_.tty_->master(), sinks_.stdout_fd, out_log_,
                               out_cap_, spec_.stdout_log_name, result_.stdout_reader_gone);
                box_.tty_->step(set.fds + set.tty_first, set.tty_count);
            }
            if (set.has(set.report, kReadable)) take_report();
            if (set.has(set.interrupt, POLLIN)) stop_on_signal();
            if (set.has(set.pid, POLLIN)) {
                init_exited_ = true;
                drain_until_ = Clock::now() + 2s;
            }
        }
        if (box_.tty_) restore_callers_terminal();
        result_.stdout_bytes = out_cap_.produced;
        result_.stdout_logged = out_cap_.logged;
        result_.stderr_bytes = err_cap_.produced;
        result_.stderr_logged = err_cap_.logged;
        return result_;
    }

private:
    bool anything_left_to_watch() const {
        return box_.stdout_.valid() || box_.stderr_.valid() || box_.report_.valid() || !init_exited_ ||
               (box_.tty_ && box_.tty_->master().valid());
    }

    // Before corral says anything about the run's end, the caller's
    // terminal is as it was (teardown restores it too, on every path).
    void restore_callers_terminal() {
        if (std::string problem = box_.tty_->restore_caller(); !problem.empty())
            log::warn("restoring the terminal's settings after the run: " + problem);
    }

    PollSet poll_set() const {
        PollSet set;
        if (sinks_.interrupt_fd >= 0 && !result_.stop_killed && !init_exited_) set.interrupt = set.add(sinks_.interrupt_fd);
        if (box_.stdout_.valid()) set.out = set.add(box_.stdout_.get());
        if (box_.stderr_.valid()) set.err = set.add(box_.stderr_.get());
        if (box_.report_.valid()) set.report = set.add(box_.report_.get());
        if (!init_exited_) set.pid = set.add(box_.pidfd_.get());
        if (box_.tty_) {
            if (box_.tty_->master().valid()) set.tty_out = set.add(box_.tty_->master().get());
            set.tty_first = set.n;
            set.tty_count = box_.tty_->add_poll_fds(set.fds + set.n);
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
        signal_through_pidfd(box_.pidfd_.get(), SIGTERM);
        kill_at_ = Clock::now() + grace;
    }

    void kill_now() {
        signal_through_pidfd(box_.pidfd_.get(), SIGKILL);
        result_.stop_killed = true;
        kill_at_.reset();
    }

    bool stopping() const { return result_.stop_grace.has_value(); }

    // The deadline covers the whole sandbox. True when the stop began just now.
    bool stop_at_deadline(Clock::time_point now) {
        if (!deadline_ || result_.deadline_hit || stopping() || now < *deadline_) return false;
        result_.deadline_hit = true;
        begin_stop(spec_.stop_grace);
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
        if (keep > 0) write_all(log.get(), buf_, keep, spec_.run_dir + "/" + name);
        if (cap.cut_now)
            log::warn(name + " reached --log-limit (" + std::to_string(spec_.log_limit_bytes) +
                      " bytes); the rest of the command's output is not logged, only streamed");
        if (sink >= 0 && !write_to_sink(sink, buf_, static_cast<std::size_t>(got))) {
            reader_gone = true;
            pipe.reset();
        }
    }

    // The invocation's exit status (the reaper's report comes first, the
    // init's, for a reaper killed first, after it), or a step of the
    // invocation that failed before execve. EOF: nothing more will come.
    void take_report() {
        InitMessage msg{};
        if (!read_message(box_.report_.get(), msg)) {
            box_.report_.reset();
        } else if (msg.kind == InitMessageKind::command_exited) {
            if (!result_.wait_status) result_.wait_status = msg.wait_status;
        } else if (msg.kind == InitMessageKind::setup_failed) {
            if (msg.step == SetupStep::exec_command && msg.err == ENOENT)
                result_.not_found = paths_tried();
            else
                result_.setup_failure = setup_error(msg, box_.plan_, box_.proc_plan_);
        }
    }

    // "CMD (searched PATH=...)", or the path itself when it has a '/'.
    std::string paths_tried() const {
        std::string tried = spec_.argv.front();
        if (tried.find('/') == std::string::npos)
            tried += " (searched PATH=" + env_value(command_environment(spec_), "PATH") + ")";
        return tried;
    }

    // A signal to the supervisor stops the sandbox, which is then still torn
    // down and verified (instead of being left to the parent-death signal).
    // A signal queued with a value is `corral stop --grace D`'s (the value is
    // D in milliseconds); a second signal during the grace kills at once.
    void stop_on_signal() {
        signalfd_siginfo si{};
        if (read(sinks_.interrupt_fd, &si, sizeof si) != static_cast<ssize_t>(sizeof si)) return;
        if (stopping()) {
            if (!result_.stop_killed) kill_now();
            return;
        }
        result_.interrupted_by = static_cast<int>(si.ssi_signo);
        auto grace = spec_.stop_grace;
        if (si.ssi_code == SI_QUEUE && si.ssi_int >= 0) {
            result_.stopped_by_request = true;
            grace = std::chrono::milliseconds(si.ssi_int);
        }
        begin_stop(grace);
    }

    Sandbox& box_;
    const SandboxSpec& spec_;
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

SuperviseResult supervise(Sandbox& box, const OutputSinks& sinks) { return Supervision(box, sinks).run(); }

}  // namespace corral::supervisor
