// rootfs/capped_tmpfs.hpp — a size-capped tmpfs made with the new mount API
// and left detached: the reviewed workspace's upper layer (docs/workspace.md),
// made by prepare_idmapped_trees for each launch attempt, attached by the
// init, kept by the supervisor's fd after the box's mount namespace is gone.
#pragma once

#include <cstdint>

#include "base/fd.hpp"

namespace corral::rootfs {

// A detached tmpfs of size_bytes, root's, 0700, nosuid, nodev; never in the
// host's mount table. Throws SysError naming the call.
Fd make_capped_tmpfs(std::uint64_t size_bytes);

}  // namespace corral::rootfs
