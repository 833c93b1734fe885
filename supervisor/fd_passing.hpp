// supervisor/fd_passing.hpp — bytes with descriptors over a Unix socket
// (SCM_RIGHTS), one message each, for both sides of the init's channels: the
// init (which may not allocate or throw: these only make system calls) and
// the supervisor (init_channel.hpp wraps them with errors that name the call).
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace corral::supervisor {

// The most one message carries: an exec request between the init and its
// invocation with its gate and the pty's slave (invocation_wire.hpp's kExecMaxFds).
inline constexpr int kMaxPassedFds = 5;

// One sendmsg of `len` bytes with `nfds` (≤ kMaxPassedFds) descriptors;
// retried on EINTR, never SIGPIPE. 0, or -errno.
int send_with_fds(int sock, const void* data, std::size_t len, const int* fds, int nfds) noexcept;

// One recvmsg into `buf`; the descriptors that came (CLOEXEC) go to `fds`, up
// to `max_fds` (the rest are closed), their count to `nfds`. The byte count
// (0: the peer closed), or -errno; -EMSGSIZE when the message or its
// descriptors did not fit (those that came are still in `fds`).
ssize_t receive_with_fds(int sock, void* buf, std::size_t size, int* fds, int max_fds, int& nfds) noexcept;

}  // namespace corral::supervisor
