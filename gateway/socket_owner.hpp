// gateway/socket_owner.hpp — who owns the socket at the other end of a loopback
// TCP connection, asked of the kernel over NETLINK_SOCK_DIAG (libmnl).
//
// SO_PEERCRED exists only for Unix sockets. For TCP on loopback the peer's
// socket lives in the caller's own network namespace, so the kernel can be
// asked for it by its exact four-tuple (inet_diag_req_v2, one round trip) and
// answers with the uid that created it (idiag_uid, in the caller's user
// namespace). That uid is fixed when the socket is made: setuid afterwards or
// passing the fd on does not change it, and nobody but root can make a socket
// that root owns.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include <boost/asio/ip/tcp.hpp>

#include "base/fd.hpp"
#include "base/sock_diag.hpp"

struct nlmsghdr;

namespace corral::gateway {

// The uid owning the TCP socket whose own address is `local` and whose peer
// is `remote` (for an accepted connection: pass the accepted socket's
// remote_endpoint() as `local` and its local_endpoint() as `remote`), in the
// caller's network namespace. Throws SysError("sock_diag", "TCP L -> R", err)
// where err is the kernel's answer (ENOENT: no such socket, e.g. it was
// closed meanwhile), ESTALE when what answered is not that live socket (a
// TIME_WAIT remnant or a half-open request, whose uid the kernel reports as 0;
// a listener the kernel fell back to), EPROTO for an unreadable answer, or
// the errno of the failed socket call. Fails closed: no uid without a live
// socket that has exactly these ends.
uid_t tcp_socket_owner(const boost::asio::ip::tcp::endpoint& local, const boost::asio::ip::tcp::endpoint& remote);

// The same question on `diag_socket` (open_sock_diag_socket), which answers
// for the network namespace it was made in, whichever the caller is in now:
// a session's bridge asks about the box's sockets from the host's namespace.
// Not for concurrent use of one socket (the caller serialises).
uid_t tcp_socket_owner(int diag_socket, const boost::asio::ip::tcp::endpoint& local,
                       const boost::asio::ip::tcp::endpoint& remote);

// open_sock_diag_socket lives with the rest of the transport in base/sock_diag.hpp.
using corral::open_sock_diag_socket;

// The parts of tcp_socket_owner that need no kernel, for tests.

// Bytes put_tcp_owner_query writes at most.
inline constexpr std::size_t kTcpOwnerQueryBytes = 128;

// Writes the SOCK_DIAG_BY_FAMILY request for exactly that one socket into
// `buf` (kTcpOwnerQueryBytes, suitably aligned) and returns its header.
nlmsghdr* put_tcp_owner_query(void* buf, const boost::asio::ip::tcp::endpoint& local,
                              const boost::asio::ip::tcp::endpoint& remote, unsigned seq);

// Reads the kernel's answer to `query` from one received datagram: 0 and the
// owner in *uid, or -errno as tcp_socket_owner describes (the kernel's own
// error, -ESTALE, -EPROTO; as libmnl checks them: -EPROTO for another
// sequence number, -ESRCH for another port id). `portid` 0 skips that check.
int read_tcp_owner_answer(const nlmsghdr* query, const void* answer, std::size_t len, unsigned portid, uid_t* uid);

}  // namespace corral::gateway
