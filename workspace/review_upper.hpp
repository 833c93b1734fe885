// workspace/review_upper.hpp — the reviewed workspace's upper layer around
// the box: a DIR that cannot be reviewed refused before it, and the layer
// (a capped tmpfs, rootfs/capped_tmpfs.hpp, whose upper/ and work/ the mount
// plan made: rootfs/mount_plan.cpp plan_review_workspace) copied into the run
// dir once the box is gone.
//
// Why a tmpfs and a copy rather than an upper directory on the run dir's
// disk: the layer must be capped (the box must not fill the host's disk, and a
// full layer must be a plain ENOSPC in the box), and a tmpfs's size= is the one
// cap every host has. The tmpfs is detached (never in the host's mount table)
// and held by the supervisor's fd, so it outlives the box's mount namespace
// until the copy is made.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/fd.hpp"

namespace corral::workspace {

// The overlay's upper and work directories' names in the tmpfs (the mount
// plan names them too: rootfs/mount_plan.cpp plan_review_workspace).
inline constexpr const char* kUpperSubdir = "upper";

// Refuses (UsageError naming the mount) a workspace with a mount below it:
// the overlay's lower layer is a non-recursive copy of DIR, so the box would
// see what the mount covers, and an apply would write into another file system.
void require_reviewable(const std::string& option, const std::string& dir);

// The IDs the agent wrote with, and whose they are on the host.
struct IdTranslation {
    uid_t agent_uid = 0, owner_uid = 0;
    gid_t agent_gid = 0, owner_gid = 0;
};

struct CopyOutStats {
    std::uint64_t entries = 0;
    std::uint64_t bytes = 0;
};

// Copies the tmpfs's upper/ into dest_dir (which must not exist; made 0700):
// directories, regular files (hard links kept as links), symlinks, overlay
// whiteouts and any other node as it is, with modes, times, user.* xattrs
// and trusted.overlay.opaque; the agent's IDs become the owner's (`ids`), so
// upper/ speaks in host IDs. Never follows a link on either side. Refuses a
// tree deeper than 256 directories. Throws SysError naming the call and path.
CopyOutStats copy_out_upper(int upper_mnt_fd, const std::string& dest_dir, const IdTranslation& ids);

}  // namespace corral::workspace
