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

void write_best_effort(int fd, const char* data, std::size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // a closed terminal must not stop the log or the run
        data += n;
        len -= static_cast<std::size_t>(n);
    }
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
            if (kill_at_deadline(now)) continue;
            if (drain_until_ && now >= *drain_until_) break;  // something holds a pipe open after the init died (D state)
            if (!wait_for_events(set, poll_timeout_ms(now))) continue;
            forward_output(set.has(set.out, kReadable), box_.stdout_, sinks_.stdout_fd, out_log_, out_cap_,
                           spec_.stdout_log_name);
            forward_output(set.has(set.err, kReadable), box_.stderr_, sinks_.stderr_fd, err_log_, err_cap_, "stderr.log");
            if (box_.tty_) {
                forward_output(set.has(set.tty_out, kReadable), box_.tty_->master(), sinks_.stdout_fd, out_log_,
                               out_cap_, spec_.stdout_log_name);
                box_.tty_->step(set.fds + set.tty_first, set.tty_count);
            }
            if (set.has(set.report, kReadable)) take_report();
            if (set.has(set.interrupt, POLLIN)) kill_on_interrupt();
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
        if (sinks_.interrupt_fd >= 0 && !result_.interrupted_by && !init_exited_) set.interrupt = set.add(sinks_.interrupt_fd);
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

    // The deadline covers the whole sandbox: its init is killed, and the
    // kernel kills every process in the PID namespace with it. True when it
    // was killed just now.
    bool kill_at_deadline(Clock::time_point now) {
        if (!deadline_ || result_.deadline_hit || now < *deadline_) return false;
        signal_through_pidfd(box_.pidfd_.get(), SIGKILL);
        result_.deadline_hit = true;
        return true;
    }

    // Until the deadline, and after the init's death at most until the drain
    // ends; -1: no bound.
    int poll_timeout_ms(Clock::time_point now) const {
        int timeout_ms = -1;
        if (deadline_ && !result_.deadline_hit) timeout_ms = ms_until(*deadline_, now);
        if (drain_until_) {
            const int left = ms_until(*drain_until_, now);
            timeout_ms = timeout_ms < 0 ? left : std::min(timeout_ms, left);
        }
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
    // EOF (or a read error) closes the pipe: it is not watched again.
    void forward_output(bool readable, Fd& pipe, int sink, const Fd& log, LogCap& cap, const std::string& name) {
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
        if (sink >= 0) write_best_effort(sink, buf_, static_cast<std::size_t>(got));
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

    // A signal to the supervisor kills the sandbox, which is then still torn
    // down and verified (instead of being left to the parent-death signal).
    void kill_on_interrupt() {
        signalfd_siginfo si{};
        if (read(sinks_.interrupt_fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
            signal_through_pidfd(box_.pidfd_.get(), SIGKILL);
            result_.interrupted_by = static_cast<int>(si.ssi_signo);
        }
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
    bool init_exited_ = false;
    SuperviseResult result_;
    char buf_[65536];
};

SuperviseResult supervise(Sandbox& box, const OutputSinks& sinks) { return Supervision(box, sinks).run(); }

}  // namespace corral::supervisor
