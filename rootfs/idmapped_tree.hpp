// rootfs/idmapped_tree.hpp — a host directory shown to the box with its owner mapped to the agent.
//
// The workspace belongs to someone on the host (its owner and group), while
// the agent runs with a UID leased per run. An idmapped mount (Linux 5.12)
// shows the directory's on-disk owner as the agent: the agent can write what
// the owner can, and what it creates lands on disk as the owner's, so nothing
// on the host keeps a leased UID that a later run would get again. Every other
// on-disk ID shows as the overflow ID (nobody) and grants only "other" access.
//
// The tree is made in the supervisor, detached (open_tree(OPEN_TREE_CLONE) +
// mount_setattr(MOUNT_ATTR_IDMAP)), so a file system that cannot be ID-mapped
// is known before the sandbox exists; the init only attaches it (move_mount,
// MountKind::AttachTree). Nothing of this touches the host's mount table.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/fd.hpp"

namespace corral::rootfs {

// On-disk IDs (the directory's owner and group) and the IDs the box sees them as.
struct OwnerMapping {
    uid_t disk_uid = 0;
    gid_t disk_gid = 0;
    uid_t box_uid = 0;
    gid_t box_gid = 0;
};

// A user namespace whose only mappings are disk_uid -> box_uid and
// disk_gid -> box_gid: the namespace an idmapped mount reads on-disk IDs through.
// Made by a short-lived child (CLONE_NEWUSER) whose maps the caller (root)
// writes; the child is killed and reaped before this returns. Throws SysError.
Fd user_namespace_mapping(const OwnerMapping& mapping);

// Why an ID-mapped tree could not be made.
enum class IdmapRefusal {
    none,
    owned_by_root,  // DIR's owner or group is root: mapping root to the agent would make it root over DIR
    unsupported,    // the file system, the source mount or the kernel cannot ID-map (EINVAL, EOPNOTSUPP,
                    // ENOSYS, EPERM for an already ID-mapped source), or no user namespace can be made
};

struct IdmappedTree {
    Fd tree;                                     // the detached copy, ID-mapped iff refusal == none
    IdmapRefusal refusal = IdmapRefusal::none;
    std::string detail;                          // for refusal: the failed call and errno text
};

// A detached, non-recursive, private copy of `source`'s mount (like MS_BIND;
// submounts are not included), made from one symlink-free open of source
// that is checked on its fd first: not "/", not a kernel pseudo file system,
// not at, inside or around any of `protected_dirs` (by inode). Through the
// copy, source's owner and group (written back into mapping.disk_*) show as
// mapping.box_*, unless source is owned by root or cannot be ID-mapped: then
// the copy is returned as is, with the refusal, for the caller to say so.
// Throws UsageError for a refused source, including a tree holding a set-ID
// or file-capability file the agent could rewrite (a write through a shared
// mmap keeps those bits) or one it cannot check completely; SysError else.
// `option` ("--workspace", "--bind") starts every refusal's message.
IdmappedTree idmapped_tree(const std::string& option, const std::string& source, OwnerMapping& mapping,
                           const std::vector<std::string>& protected_dirs);

}  // namespace corral::rootfs
