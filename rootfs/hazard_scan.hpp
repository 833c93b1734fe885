// rootfs/hazard_scan.hpp — what in a host tree the agent could turn against
// the host, found before the tree is handed to the box.
//
// A workspace or bind source is refused when it holds, among what the agent
// could write (the owner's, or group/other-writable; only other-writable when
// attached as is): a regular file that is set-user-ID, set-group-ID or has
// file capabilities (a write through a shared mmap keeps those bits, so the
// agent could make it its own privileged program on the host), a UNIX socket
// (a host process serving it would take the box's requests outside the
// sandbox) or a FIFO. docs/rootfs.md, "Workspace ownership", step 4.
//
// The scan fails closed: a tree it cannot read completely, or one deeper than
// kMaxHazardScanDepth directories, is refused. It costs two system calls per
// file, so a large tree is shared out among up to kMaxHazardScanThreads
// threads (never more than the CPUs this process may run on); helpers start
// only once the tree has proved large, and all of them are joined before
// refuse_hazards returns or throws.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>

namespace corral::rootfs {

inline constexpr int kMaxHazardScanDepth = 512;
inline constexpr unsigned kMaxHazardScanThreads = 8;

// The IDs whose files the agent can write: a workspace's owner and group, or
// (uid_t)-1 / (gid_t)-1 for a tree attached as is (the agent is "others").
struct AgentWrites {
    uid_t owner;
    gid_t group;
};

// Why dir_fd/name (whose lstat is `st`) may not be handed to the agent, or
// null. Throws SysError when an extended attribute cannot be read.
const char* hazard_of(int dir_fd, const char* name, const struct stat& st, AgentWrites who);

// Scans the tree below `tree_fd` (a detached copy: one mount, no submounts).
// Throws UsageError "OPTION SOURCE: PATH <hazard>" for a hazard (one of them,
// if the tree holds several), UsageError for a tree too deep, SysError for
// anything it could not read.
void refuse_hazards(int tree_fd, AgentWrites who, const std::string& source, const std::string& option);

// How many threads refuse_hazards used in this process's last scan (1: none
// started): for tests and the debug log.
unsigned last_hazard_scan_threads();

}  // namespace corral::rootfs
