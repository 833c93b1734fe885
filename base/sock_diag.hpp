// base/sock_diag.hpp — the NETLINK_SOCK_DIAG transport both of corral's
// socket questions use: who owns one TCP socket (gateway/socket_owner) and
// which sockets a uid still has (supervisor/socket_sweep).
#pragma once

#include <cstddef>

#include "base/fd.hpp"

namespace corral {

// A non-blocking NETLINK_SOCK_DIAG socket in the caller's network namespace
// (the kernel queues its answer before sendto returns: nothing to read means
// no answer is coming, so an event loop that asks never blocks on it). It
// answers for that namespace, whichever the caller is in later.
// Throws SysError("socket(NETLINK_SOCK_DIAG)", errno).
Fd open_sock_diag_socket();

// Every netlink message of the datagram lies inside it. libmnl's mnl_nlmsg_ok
// compares (int)nlmsg_len with the bytes left, so a length of 2^31 or more
// passes as negative and its callbacks then read past the datagram: check
// this before mnl_cb_run.
bool netlink_messages_fit(const void* answer, std::size_t len);

}  // namespace corral
