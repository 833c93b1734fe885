// supervisor/sweep.hpp — finding processes on the whole host after teardown.
//
// Both scans read /proc of the caller's mount namespace (the host's /proc) and
// skip processes that vanish mid-scan. They list thread-group leaders only.
#pragma once

#include <sys/types.h>

#include <optional>
#include <vector>

namespace corral::supervisor {

// Processes with `uid` as any of their real, effective, saved or filesystem uid
// (the Uid: line of /proc/<pid>/status).
std::vector<pid_t> processes_of_uid(uid_t uid);

// Whether a pass may skip kernel threads: kthreadd (PID 2 with PF_KTHREAD)
// and those of its children (read in one go) that have no user-space image
// (/proc/<pid>/exe fails with ENOENT). They are most of a host's processes.
// A user-space helper the kernel starts (a core_pattern pipe such as apport,
// which may take the crashing process's UID) is a child of kthreadd too, but
// has an image, so it always gets the full check.
enum class KernelThreads { include, skip };

// Processes with `uid` in any Uid: field or `gid` in any Gid: field.
std::vector<pid_t> processes_of_identity(uid_t uid, gid_t gid, KernelThreads kthreads = KernelThreads::include);

// Processes whose /proc/<pid>/ns/pid is the namespace with inode `ns_inode`.
std::vector<pid_t> processes_in_pid_namespace(ino_t ns_inode);

// One pass over /proc answering both teardown questions (kernel threads
// skipped, see KernelThreads): which processes are in
// the PID namespace `ns_inode`, and which have `uid` in any Uid: field or `gid`
// in any Gid: field (the same checks as processes_in_pid_namespace and
// processes_of_identity, from one directory listing).
struct HostScan {
    std::vector<pid_t> in_pid_namespace;
    std::vector<pid_t> of_identity;
};
HostScan scan_host(ino_t ns_inode, uid_t uid, gid_t gid);

// Inode of the pid namespace of `pid` (stat of /proc/<pid>/ns/pid); nullopt if the
// process is gone.
std::optional<ino_t> pid_namespace_inode(pid_t pid);

}  // namespace corral::supervisor
