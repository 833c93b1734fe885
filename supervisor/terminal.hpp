// supervisor/terminal.hpp — `corral run --tty` and `corral exec --tty`: the
// caller's terminal joined to a pty of the box's own devpts.
//
// The box never holds the caller's terminal. Its init opens a pty on the
// box's private devpts (/dev/ptmx -> pts/ptmx), gives the slave to the
// command as its controlling terminal and fds 0/1/2, and hands the master to
// the supervisor over a socket (SCM_RIGHTS). The supervisor then relays:
//   caller's stdin  -> master            (raw bytes: Ctrl-C, Ctrl-Z are the
//                                         program's line discipline's to act on)
//   master          -> caller's stdout and the run dir's stdout log (the
//                                         log cap applies; sandbox_supervise.cpp)
//   SIGWINCH        -> TIOCGWINSZ on the caller, TIOCSWINSZ on the master
//                      (an exec's caller gets the signal: it writes a byte to
//                       a pipe the session's supervisor watches instead)
// with the caller's terminal in raw mode meanwhile. A run's questions for
// the operator (approvals, terminal_prompt.hpp) are asked on the caller's
// terminal between the box's output, never through the box's pty. RawTerminal owns that
// mode: whoever leaves (normal end, deadline, signal, setup failure,
// exception) puts the saved settings back, at the latest in its destructor.
#pragma once

#include <poll.h>
#include <sys/types.h>
#include <termios.h>

#include <optional>
#include <string>
#include <string_view>

#include "base/fd.hpp"
#include "supervisor/terminal_prompt.hpp"

namespace corral::supervisor {

// Throws UsageError unless corral's stdin and stdout are both terminals:
// "--tty: corral's stdout is not a terminal (...)".
void require_caller_terminal(int in_fd = 0, int out_fd = 1);

// The box's TERM for a caller whose TERM is `caller_term` (may be null): kept
// if it is a plain terminfo name (letters, digits, . _ + -, at most 64),
// else "xterm-256color". The box reads terminfo from its own rootfs.
std::string box_terminal_type(const char* caller_term);

// Blocks SIGWINCH (must be called while the process is single-threaded, so
// that every later thread inherits the block and the signal is left pending
// for the signalfd) and returns a signalfd for it.
Fd watch_window_size_changes();

// The caller's terminal settings, saved at construction; raw mode on
// enter_raw(); put back by restore() and by the destructor, each at most once.
// enter_raw() also forks a guardian (corral-ttyguard) that holds the saved
// settings and a pipe from this process: if the pipe reaches EOF without
// restore() having said so (corral was killed by SIGKILL, which no handler
// sees), the guardian puts the settings back itself, then exits.
class RawTerminal {
public:
    explicit RawTerminal(int fd);   // tcgetattr; throws SysError
    RawTerminal(const RawTerminal&) = delete;
    RawTerminal& operator=(const RawTerminal&) = delete;
    ~RawTerminal();

    void enter_raw();               // cfmakeraw on the saved settings; throws SysError
    // "" or what failed (a hung-up terminal cannot be restored).
    std::string restore() noexcept;
    bool raw() const { return raw_; }

private:
    // The guardian's pipe (written "R" and closed by restore()) and pid.
    void start_guardian() noexcept;
    void release_guardian() noexcept;
    // Reads and drops the terminal's answers to the box's queries (bounded).
    void discard_answers() noexcept;

    int fd_;
    termios saved_{};
    bool raw_ = false;
    int guardian_pipe_ = -1;
    pid_t guardian_ = -1;
};

// The relay between the caller's terminal and the box's pty master. The
// master is non-blocking, so a program that does not read its input never
// stalls the supervisor (pending input waits for POLLOUT).
class TerminalRelay {
public:
    // `window_signals`: a non-blocking signalfd for SIGWINCH or the read end
    // of a non-blocking pipe (each byte a change; its EOF ends the watch).
    TerminalRelay(Fd master, Fd window_signals, int caller_in = 0, int caller_out = 1);

    // Raw mode on the caller's terminal and its window size on the pty:
    // called just before the command starts.
    void start();
    // The master, read by the supervisor like an output pipe (reset at EOF:
    // the last holder of the slave has exited).
    Fd& master() { return master_; }

    // --tty runs: `source`'s questions are asked at the caller's terminal
    // (terminal_prompt.hpp), one at a time, oldest first. Not owned; it
    // must outlive the relay's use (end_questions() ends it).
    void ask_through(QuestionSource* source) { questions_ = source; }
    // A question is up: the supervisor does not read the master meanwhile
    // (the box's output waits in its pty).
    bool output_paused() const { return dialog_.modal(); }
    // The box is gone: a question still up is closed, saying so, and no
    // more are asked.
    void end_questions() noexcept;

    // Adds what the relay waits for to `out` (room for kMaxPollFds); returns
    // the count. step() then takes the same entries with their revents.
    static constexpr int kMaxPollFds = 4;
    int add_poll_fds(pollfd* out) const;
    void step(const pollfd* fds, int count);

    // The caller's terminal as it was (raw mode off); "" or what failed.
    std::string restore_caller() noexcept { return raw_.restore(); }

private:
    void copy_window_size() noexcept;
    void read_caller_input();
    void write_pending_input();
    void take_window_signal();
    void take_question_changes();
    void show_next_question();
    void take_keys(std::string_view typed);
    void show(const std::string& bytes) noexcept;
    void nudge_redraw() noexcept;

    Fd master_;
    Fd window_signals_;
    int caller_in_;
    int caller_out_;
    RawTerminal raw_;
    bool caller_input_open_ = true;
    std::string pending_;       // caller input the master has not taken yet
    QuestionSource* questions_ = nullptr;
    PromptDialog dialog_;
};

}  // namespace corral::supervisor
