// rootfs/host_paths.hpp — host directories only root can change.
//
// The root supervisor writes its records (--run-dir, --state-dir) and reads
// images (--rootfs DIR) by path. If a directory on such a path could be
// renamed or replaced by someone else — an operator's user, or a sandbox
// acting as that user inside its ID-mapped workspace — root's writes and
// mounts could be redirected anywhere. So those paths must run through
// directories that only root can change.
#pragma once

#include <string>
#include <string_view>

namespace corral::rootfs {

// Throws UsageError unless every existing component of `path` (as given, and
// at its real location) is owned by root and, if a directory, not writable by
// group or others unless sticky (like /tmp, where others cannot rename what
// root owns). Symlinks on the way must be root's; ".." is refused. Components
// that do not exist yet are fine only below a directory nobody but root can
// write (in a sticky one someone else could take the name first).
// The message names `option`, the path and the offending component.
void require_root_only_tree(std::string_view option, const std::string& path);

}  // namespace corral::rootfs
