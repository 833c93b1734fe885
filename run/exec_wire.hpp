// run/exec_wire.hpp — the session's end of its socket (docs/sessions.md
// "Protocol"): the listener, who the peer is, the request with its fds, the
// answer, and the caller's output as descriptions the session may hold.
#pragma once

#include <optional>
#include <string>

#include "base/fd.hpp"
#include "run/exec_protocol.hpp"

namespace corral::run {

// A listening AF_UNIX stream socket at `path` (a stale one from a crashed
// supervisor of this run dir cannot exist: the run dir is new).
Fd listen_at(const std::string& path);

// A connection to the AF_UNIX stream socket at `path`, or nullopt when
// nobody listens there (ENOENT, ECONNREFUSED: its server is gone or going).
// Throws UsageError for a path longer than sun_path, SysError for the rest.
std::optional<Fd> connect_unix(const std::string& path);

// uid of the connected peer, or -1.
long peer_uid(int fd);

// The answer line; a caller already gone is no error of the session's. The
// connection carries nothing else our way, so one line fits its buffer: the
// send never waits (a session's stop joins the thread that sends it).
void send_answer(int fd, const ExecAnswer& answer);

// A request other than an exec's (parse_workspace_applied_line) sent to
// the session listening at `path` with our stdout and stderr, and its
// answer; nullopt when nobody listens (the session ended). An answer not
// back within 60 s is an error (SysError).
std::optional<ExecAnswer> ask_session(const std::string& path, const std::string& line);

// The request line and the caller's stdout and stderr (SCM_RIGHTS with its
// first bytes; a terminal request's also its stdin and the read end of its
// window-change pipe). Throws UsageError for what is not a request.
struct ReceivedRequest {
    std::string line;
    Fd out, err, in, window_changes;
};

// A caller that sends no whole line within 10 s is dropped.
ReceivedRequest receive_request(int conn);

// The caller's stdout or stderr as a description of our own, non-blocking,
// when it is a pipe, FIFO or terminal (reopened through /proc/self/fd: its
// O_NONBLOCK is then ours, not the caller's): a caller that stops reading
// cannot hold the session's stop. A regular file never blocks and keeps the
// caller's description (and offset, shared with its own messages); a socket
// cannot be reopened and is used as is.
Fd own_nonblocking_copy(Fd fd);

}  // namespace corral::run
