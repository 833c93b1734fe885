// gateway/daemon_claim.hpp — one `corral gateway` per state dir and per socket.
//
// A second daemon started on a running one's state dir would recover the live
// daemon's journal as "lost" and, stopping, remove the socket the first one
// serves. A daemon therefore claims both before it touches either: an
// exclusive lock on <state_dir>/gateway.lock and, when it listens on a Unix
// socket, on <listen_unix>.lock, each taken without waiting and held until the
// process exits (the kernel drops a flock with its last fd, so a killed daemon
// leaves no claim behind). The socket is removed at the end only if it is
// still the one this daemon bound (same device and inode).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "base/fd.hpp"

namespace corral::gateway {

class DaemonClaim {
public:
    // Throws UsageError naming the other daemon (its pid, as it wrote it in
    // the lock file) and what to do, if either claim is held; SysError for
    // other failures. The state dir and the socket's directory must exist
    // and be root's alone (the caller checks: rootfs/host_paths.hpp).
    static DaemonClaim take(const std::string& state_dir, const std::string& listen_unix);

private:
    DaemonClaim() = default;
    Fd state_lock_;
    Fd socket_lock_;
};

// Which file a bound Unix socket is, to tell it from one put there since.
struct SocketFileId {
    dev_t dev = 0;
    ino_t ino = 0;
};
std::optional<SocketFileId> socket_file_id(const std::string& path);

// Removes `path` only if it is still the socket `bound` names; returns
// whether it did.
bool remove_socket_if_ours(const std::string& path, const SocketFileId& bound);

}  // namespace corral::gateway
