// workspace/collect.hpp — every change of a reviewed workspace: its upper
// layer (RUN_DIR/workspace/upper) read against the host's DIR as it is now.
//
// How the layer is read (overlayfs's own rules, docs/workspace.md): a 0/0
// character device is a whiteout (the path was deleted; a deleted directory
// lists each of the host's files below it too); a directory with
// trusted.overlay.opaque "y" replaced the host's (every host entry below it
// that the layer lacks was deleted); any other entry is the path's new
// content. redirect_dir and metacopy are off in the box's overlay, so no
// entry points elsewhere or holds only metadata.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workspace/change.hpp"
#include "workspace/review_upper.hpp"

namespace corral::workspace {

// The changes, sorted by path, the renames that can be told marked
// (mark_renames). The host side is walked by fd without
// following any link and without crossing a mount. Must run as root (the
// layer's trusted.* xattrs and files of any mode). Throws SysError naming the
// call and path.
// `live_ids`: the layer is a running box's (its tmpfs, not the copy made
// after it), whose entries carry the agent's IDs: read as DIR's owner's, as
// the copy has them.
std::vector<Change> collect_changes(const std::string& upper_dir, const std::string& workspace_dir,
                                    std::int64_t fence_ns, const IdTranslation* live_ids = nullptr);

// The SHA-256 of everything `fd` reads from its start (streamed: no more than
// a buffer in memory, whatever the size).
std::string digest_of_fd(int fd, const std::string& what);

}  // namespace corral::workspace
