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

// Follows `path` the way the kernel would and throws UsageError unless
// everything it passes is root's: each existing directory (not writable by
// group or others unless sticky, like /tmp, where others cannot rename what
// root owns), each symlink and, through it, its target's path; the leaf if it
// exists. ".." in `path` is refused. A part that does not exist yet is fine
// only below a directory nobody but root can write (in a sticky one someone
// else could take the name first). Returns the real path (no symlinks).
// The message names `option`, the path and the offending component.
std::string require_root_only_tree(std::string_view option, const std::string& path);

struct RootOnlyDir {
    Fd fd;                  // the directory, O_RDONLY
    std::string real_path;  // where it really is
    bool created = false;   // made just now (with leaf_mode)
};

// require_root_only_tree, then the directory itself: opened by walking its
// real path from "/" by fd without following links, creating what is missing
// (0755 on the way, `leaf_mode` for the leaf if it is new; the umask plays no
// part). Every directory met must be root's; an existing leaf keeps its mode
// (the caller judges it with fstat). Throws UsageError or SysError.
RootOnlyDir open_root_only_dir(std::string_view option, const std::string& path, mode_t leaf_mode);

}  // namespace corral::rootfs
