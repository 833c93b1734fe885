#include "supervisor/terminal.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/sys_error.hpp"

namespace corral::supervisor {

namespace {

[[noreturn]] void refuse_not_a_terminal(const char* which) {
    throw UsageError(std::string("--tty: corral's ") + which +
                     " is not a terminal; --tty joins the caller's terminal to a pty in the box, so run it from a "
                     "terminal (for piped input use --stdin without --tty)");
}

// Window-size changes and caller input are signals and bytes, never reasons
// to stop the run: a failed ioctl leaves the size as it was.
constexpr std::size_t kInputChunk = 4096;

}  // namespace

void require_caller_terminal(int in_fd, int out_fd) {
    if (!isatty(in_fd)) refuse_not_a_terminal("stdin");
    if (!isatty(out_fd)) refuse_not_a_terminal("stdout");
}

std::string box_terminal_type(const char* caller_term) {
    constexpr const char* kFallback = "xterm-256color";
    if (caller_term == nullptr) return kFallback;
    std::string_view t(caller_term);
    if (t.empty() || t.size() > 64 || t == "dumb") return kFallback;
    for (char c : t) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                  c == '+' || c == '-';
        if (!ok) return kFallback;
    }
    return std::string(t);
}

Fd watch_window_size_changes() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGWINCH);
    check_sys(sigprocmask(SIG_BLOCK, &set, nullptr), "sigprocmask", "SIG_BLOCK SIGWINCH");
    Fd fd(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!fd.valid()) throw SysError("signalfd", "SIGWINCH", errno);
    return fd;
}

RawTerminal::RawTerminal(int fd) : fd_(fd) { check_sys(tcgetattr(fd_, &saved_), "tcgetattr", "the caller's terminal"); }

RawTerminal::~RawTerminal() { restore(); }

void RawTerminal::enter_raw() {
    termios raw = saved_;
    cfmakeraw(&raw);
    // TCSAFLUSH: input typed before the command started is not replayed to it.
    check_sys(tcsetattr(fd_, TCSAFLUSH, &raw), "tcsetattr", "the caller's terminal (raw mode)");
    raw_ = true;
    start_guardian();
}

// The guardian is forked from a process that may have threads (the
// gateway's): it makes system calls only (close_range, read, tcsetattr,
// _exit). It keeps the supervisor's blocked signal mask, so the caller's
// SIGINT, SIGTERM or SIGHUP to the process group cannot take it first. If
// it cannot be started, the run goes on without it (restore() still runs on
// every path but SIGKILL).
void RawTerminal::start_guardian() noexcept {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return;
    pid_t pid = fork();
    if (pid == 0) {
        const int keep_low = std::min(fd_, p[0]), keep_high = std::max(fd_, p[0]);
        if (keep_low > 0) close_range(0, static_cast<unsigned>(keep_low) - 1, 0);
        if (keep_high > keep_low + 1) close_range(static_cast<unsigned>(keep_low) + 1, static_cast<unsigned>(keep_high) - 1, 0);
        close_range(static_cast<unsigned>(keep_high) + 1, ~0U, 0);
        prctl(PR_SET_NAME, "corral-ttyguard", 0, 0, 0);
        // By the time corral is gone its caller's shell has usually taken the
        // terminal back: tcsetattr from a background process group is then
        // EIO (an orphaned group) or a stop by SIGTTOU, unless SIGTTOU is
        // blocked, which lets it through.
        sigset_t ttou;
        sigemptyset(&ttou);
        sigaddset(&ttou, SIGTTOU);
        sigprocmask(SIG_BLOCK, &ttou, nullptr);
        char said = 0;
        ssize_t n;
        do n = read(p[0], &said, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1 || said != 'R') tcsetattr(fd_, TCSAFLUSH, &saved_);  // the box's unread answers discarded too
        _exit(0);
    }
    close(p[0]);
    if (pid < 0) {
        close(p[1]);
        return;
    }
    guardian_pipe_ = p[1];
    guardian_ = pid;
}

void RawTerminal::release_guardian() noexcept {
    if (guardian_pipe_ >= 0) {
        (void)!write(guardian_pipe_, "R", 1);
        close(guardian_pipe_);
        guardian_pipe_ = -1;
    }
    if (guardian_ > 0) {
        while (waitpid(guardian_, nullptr, 0) < 0 && errno == EINTR) {
        }
        guardian_ = -1;
    }
}

// A terminal answers the queries a box wrote to it (cursor position, device
// attributes, window title, clipboard contents) by typing the answer into
// its input, often after the box is gone; left there, the caller's next
// program (its shell) would read the answer as typed. Terminals answer in
// order, so a query of corral's own (DSR, "where is the cursor") written
// last is answered after every query the box wrote: the input is read and
// discarded until a cursor-position answer (ESC [ digits ; digits R) has
// come and kAnswersQuiet passed without more, or kAnswersBound in all (a
// terminal that answers nothing). A terminal that cannot be written to
// gets no query; TCSAFLUSH then discards what has come so far.
void RawTerminal::discard_answers() noexcept {
    using Clock = std::chrono::steady_clock;
    constexpr auto kAnswersBound = std::chrono::milliseconds(1000), kAnswersQuiet = std::chrono::milliseconds(30);
    if (write(fd_, "\033[6n", 4) != 4) return;
    const auto give_up = Clock::now() + kAnswersBound;
    enum { plain, escape, parameters } at = plain;
    bool answered = false;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now());
        if (left.count() <= 0) return;
        pollfd p{fd_, POLLIN, 0};
        const int rc = poll(&p, 1, static_cast<int>(answered ? std::min(left, kAnswersQuiet).count() : left.count()));
        if (rc < 0 && errno == EINTR) continue;
        char buf[256];
        const ssize_t n = rc > 0 ? read(fd_, buf, sizeof buf) : -1;
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // quiet after the answer, or a terminal hung up
        for (ssize_t i = 0; i < n; ++i) {
            const char c = buf[i];
            if (at == parameters && c == 'R') answered = true;
            at = c == '\033' ? escape
                 : (at == escape && c == '[') || (at == parameters && (std::isdigit(static_cast<unsigned char>(c)) || c == ';'))
                     ? parameters
                     : plain;
        }
    }
}

std::string RawTerminal::restore() noexcept {
    if (!raw_) return {};
    raw_ = false;
    std::string problem;
    // The program's last output is shown with the settings it was written for
    // (tcdrain), the terminal's answers to its queries are not left behind,
    // and TCSAFLUSH drops whatever input is still pending with them.
    (void)tcdrain(fd_);
    discard_answers();
    if (tcsetattr(fd_, TCSAFLUSH, &saved_) != 0) problem = "tcsetattr: " + errno_text(errno);
    release_guardian();  // after ours: it must not restore once more, over what came after
    return problem;
}

TerminalRelay::TerminalRelay(Fd master, Fd window_signals, int caller_in, int caller_out)
    : master_(std::move(master)), window_signals_(std::move(window_signals)), caller_in_(caller_in),
      caller_out_(caller_out), raw_(caller_in) {
    int flags = fcntl(master_.get(), F_GETFL);
    if (flags < 0 || fcntl(master_.get(), F_SETFL, flags | O_NONBLOCK) != 0)
        throw SysError("fcntl(F_SETFL, O_NONBLOCK)", "the box's pty master", errno);
}

void TerminalRelay::start() {
    copy_window_size();
    raw_.enter_raw();
}

void TerminalRelay::copy_window_size() noexcept {
    if (!master_.valid()) return;
    winsize ws{};
    if (ioctl(caller_out_, TIOCGWINSZ, &ws) != 0 && ioctl(caller_in_, TIOCGWINSZ, &ws) != 0) return;
    // The kernel sends SIGWINCH to the pty's foreground process group.
    ioctl(master_.get(), TIOCSWINSZ, &ws);
}

int TerminalRelay::add_poll_fds(pollfd* out) const {
    int n = 0;
    // A question's keys are read whatever the box has not taken yet.
    if (caller_input_open_ && (dialog_.modal() || (master_.valid() && pending_.empty())))
        out[n++] = {caller_in_, POLLIN, 0};
    if (master_.valid() && !pending_.empty()) out[n++] = {master_.get(), POLLOUT, 0};
    if (window_signals_.valid()) out[n++] = {window_signals_.get(), POLLIN, 0};
    if (questions_ != nullptr) out[n++] = {questions_->changes_fd(), POLLIN, 0};
    return n;
}

void TerminalRelay::step(const pollfd* fds, int count) {
    for (int i = 0; i < count; ++i) {
        if (fds[i].revents == 0) continue;
        if (window_signals_.valid() && fds[i].fd == window_signals_.get())
            take_window_signal();
        else if (questions_ != nullptr && fds[i].fd == questions_->changes_fd())
            take_question_changes();
        else if (fds[i].fd == caller_in_)
            read_caller_input();
        else if (master_.valid() && fds[i].fd == master_.get())
            write_pending_input();
    }
}

void TerminalRelay::read_caller_input() {
    char buf[kInputChunk];
    ssize_t n = read(caller_in_, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (n <= 0) {
        // The caller's terminal hung up: the program keeps running (it may
        // still be writing to the log) but gets no more input, and nobody
        // can answer a question here any more (`corral approve` still can).
        caller_input_open_ = false;
        end_questions();
        return;
    }
    if (dialog_.modal()) return take_keys(std::string_view(buf, static_cast<std::size_t>(n)));
    pending_.append(buf, static_cast<std::size_t>(n));
    write_pending_input();
}

void TerminalRelay::write_pending_input() {
    while (!pending_.empty() && master_.valid()) {
        ssize_t n = write(master_.get(), pending_.data(), pending_.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;  // POLLOUT tells when the program took some
        if (n <= 0) {
            pending_.clear();  // the slave is gone: nobody to read it
            return;
        }
        pending_.erase(0, static_cast<std::size_t>(n));
    }
}

// A signalfd (a run's SIGWINCH) or a pipe of one byte per change (an
// exec's caller writes them): either way, drained, then the size copied
// once. The pipe's EOF (the caller left) ends the watch, not the relay.
void TerminalRelay::take_window_signal() {
    char drained[8 * sizeof(signalfd_siginfo)];
    for (;;) {
        ssize_t n = read(window_signals_.get(), drained, sizeof drained);
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) window_signals_.reset();
        if (n <= 0) break;
    }
    copy_window_size();
}

// Something changed at the source: the question shown may have ended
// without the dialog (a notice then stays until a key), or one is waiting.
void TerminalRelay::take_question_changes() {
    if (questions_ == nullptr) return;
    questions_->changes_seen();
    if (dialog_.state() == PromptDialog::State::asking)
        if (auto how = questions_->ended(dialog_.shown_id())) show(dialog_.ended_elsewhere(*how));
    show_next_question();
}

void TerminalRelay::show_next_question() {
    if (questions_ == nullptr || dialog_.modal()) return;
    if (auto q = questions_->next()) show(dialog_.ask(*q));
}

// The keys of one read while the dialog is up. An answer is decided at the
// source at once (the supervisor's thread; the source must not block), and
// once the dialog is closed the box's output resumes, the box is asked to
// redraw, and the next question (if any) comes up.
void TerminalRelay::take_keys(std::string_view typed) {
    PromptDialog::Keys k = dialog_.keys(typed);
    show(k.show);
    if (k.answer) show(dialog_.answered(questions_->answer(dialog_.shown_id(), *k.answer)));
    if (dialog_.modal()) return;
    nudge_redraw();
    show_next_question();
}

void TerminalRelay::end_questions() noexcept {
    if (questions_ == nullptr) return;
    const bool was_up = dialog_.modal();
    show(dialog_.close(dialog_.shown_id() + ": the box is gone; the question was left unanswered here"));
    questions_ = nullptr;
    if (was_up) nudge_redraw();
}

// To the caller's terminal only: neither the box's pty nor its stdout log.
// Like the box's output, a terminal that errs or is full loses the rest.
void TerminalRelay::show(const std::string& bytes) noexcept {
    const char* p = bytes.data();
    std::size_t left = bytes.size();
    while (left > 0) {
        ssize_t n = write(caller_out_, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

// A full-screen program drew under the dialog's lines: one row less, then
// the caller's size again, makes the kernel send its SIGWINCH (a size set
// to what it was sends none), on which such programs redraw their screen.
// Nothing is written to the box's pty; a line-oriented program just goes on.
void TerminalRelay::nudge_redraw() noexcept {
    if (!master_.valid()) return;
    winsize ws{};
    if (ioctl(master_.get(), TIOCGWINSZ, &ws) != 0 || ws.ws_row < 2) return;
    winsize smaller = ws;
    --smaller.ws_row;
    ioctl(master_.get(), TIOCSWINSZ, &smaller);
    ioctl(master_.get(), TIOCSWINSZ, &ws);
    copy_window_size();  // the caller's, should it have changed meanwhile
}

}  // namespace corral::supervisor
