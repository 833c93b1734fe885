// rootfs/host_paths.hpp — host directories only root can change.
//
// The root supervisor writes its records (--run-dir, --state-dir) and reads
// images (--rootfs DIR) by path. If a directory on such a path could be
// renamed or replaced by someone else — an operator's user, or a sandbox
// acting as that user inside its ID-mapped workspace — root's writes and
// mounts could be redirected anywhere. So those paths must run through
// directories that only root can change.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "base/fd.hpp"

namespace corral::rootfs {

// Throws UsageError unless every existing component of `path` (as given, and
// at its real location) is owned by root and, if a directory, not writable by
// group or others unless sticky (like /tmp, where others cannot rename what
// root owns). Symlinks on the way must be root's; ".." is refused. Components
// that do not exist yet are fine only below a directory nobody but root can
// write (in a sticky one someone else could take the name first).
// The message names `option`, the path and the offending component.
void require_root_only_tree(std::string_view option, const std::string& path);

// require_root_only_tree, then the directory itself: opened (O_RDONLY) by
// walking its real path from "/" by fd without following links, creating what
// is missing (0755 on the way, `leaf_mode` for the leaf if it is new; the umask
// plays no part). Every directory met must be root's; an existing leaf keeps
// its mode (the caller judges it with fstat). Throws UsageError or SysError.
Fd open_root_only_dir(std::string_view option, const std::string& path, mode_t leaf_mode);

}  // namespace corral::rootfs
