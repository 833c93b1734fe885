// supervisor/stdin_handover.hpp — what of the caller's stdin the box may get
// with --stdin, and the caller's terminal given back as it was.
//
// The box gets an fd, and an fd is more than a byte stream: a directory fd
// is the host's file system (openat relative to it, /proc/self/fd/0/..), a
// writable file is a write into the host, an O_PATH fd can be reopened with
// other rights, an unconnected or listening socket is a way out of the
// box's network namespace. So only what is a stream of input is handed over,
// each kind in the one form that is nothing more:
//   - a terminal (not a pty master): as is; TIOCSCTTY is then denied in the
//     box (seccomp_policy.hpp inherited_terminal_rules) and its settings are
//     restored after the run (TerminalState);
//   - a pipe or FIFO open read-only: as is;
//   - a connected stream or seqpacket socket (not listening): as is; it
//     talks to its one peer only;
//   - a regular file open for reading: reopened read-only through
//     /proc/self/fd (a new open file description at the same offset), so
//     the box never holds the caller's writable one;
//   - the null device: the box's own /dev/null instead.
// Anything else (a directory, an O_PATH fd, another device, a write-only
// fd, a pty master, a datagram or unconnected socket) is refused before
// anything of the sandbox is built: one line naming what stdin is and what
// is accepted (UsageError; corral run exits 125, a semantic input error).
#pragma once

#include <termios.h>

#include <optional>

#include "base/fd.hpp"

namespace corral::supervisor {

// A terminal's state that a box holding it can change and that outlives the
// run: termios (echo, canonical mode, speed, ...), exclusive mode
// (TIOCEXCL: nobody but root could open it any more) and stopped output
// (tcflow TCOOFF).
struct TerminalState {
    int fd = -1;  // not owned: the caller's stdin
    termios settings{};
    bool exclusive = false;
};

struct StdinHandover {
    Fd fd;                                // what the box gets as fd 0; invalid: the box's /dev/null
    bool terminal = false;                // fd is a host terminal
    std::optional<TerminalState> saved;   // its state before the run (terminal only)
};

// Checks `fd` (the caller's stdin) as described above; throws UsageError
// ("--stdin: stdin is a directory; ...") for anything else.
StdinHandover hand_over_stdin(int fd);

// Puts the terminal back as `state` recorded it (best effort: a terminal that
// was hung up meanwhile is left alone). Returns "" or what failed.
std::string restore_terminal(const TerminalState& state) noexcept;

}  // namespace corral::supervisor
