// supervisor/socket_sweep.hpp — no socket a uid created is left alive in a
// network namespace: what "the agent is gone" means for kernel objects
// before a session's verifier starts (docs/sessions.md, docs/security.md).
//
// Killing every process of a uid does not close its sockets: a socket passed
// over SCM_RIGHTS and still queued in a message lives on in the message, and
// a listener among them keeps accepting connections. The kernel records the
// uid that created each socket (fixed at creation; passing the fd on or
// setuid does not change it) and reports it over NETLINK_SOCK_DIAG, which can
// also destroy a TCP or UDP socket (SOCK_DESTROY). It cannot destroy a Unix
// socket: one that is left is reported, never ignored.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/fd.hpp"

namespace corral::supervisor {

// Leaves no socket of `uid` alive in the network namespace `diag_fd` answers
// for (a NETLINK_SOCK_DIAG socket: open_sock_diag_socket_in). Every TCP, UDP
// and UDP-Lite socket, IPv4 and IPv6, in any state, that `uid` created and
// that a file still holds is destroyed (SOCK_DESTROY; one the kernel no
// longer finds was closed meanwhile), then all are listed again. Returns how
// many it destroyed. Throws std::runtime_error naming every socket of `uid`
// still alive afterwards, each with its address and inode: a Unix socket
// (the kernel cannot destroy one), a socket the kernel refused to destroy,
// one still listed after it was destroyed. Throws SysError when the kernel
// cannot be asked (a dump it refuses: sockets it cannot list are not known
// to be gone).
//
// A TCP or UDP socket no file holds (an orphan the kernel is closing, a
// TIME_WAIT remnant) is not counted: no process can ever hold it again. A
// TCP socket in state CLOSE after its SOCK_DESTROY is gone: it neither
// accepts, sends nor receives (the kernel may still list it while its port
// is bound).
int leave_no_socket_of_uid(int diag_fd, uid_t uid);

// A NETLINK_SOCK_DIAG socket made in the network namespace `netns_fd` (setns
// on the calling thread and back; the socket answers for the namespace it
// was made in). Throws SysError naming the failed call; aborts the process if
// the thread cannot return to its own namespace (nothing may run on there).
Fd open_sock_diag_socket_in(int netns_fd);

// How a Unix socket's address is shown in an error: a path as it is, an
// abstract name as "@name", none as "(unnamed)"; bytes outside printable
// ASCII (and the backslash) as \xNN, since the name came from the box.
std::string shown_unix_address(const std::string& sun_path);

}  // namespace corral::supervisor
