// supervisor/sweep.hpp — finding processes on the whole host after teardown.
//
// Both scans read /proc of the caller's mount namespace (the host's /proc) and
// skip processes that vanish mid-scan. They list thread-group leaders only.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
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
std::vector<pid_t> processes_owned_by(uid_t uid, gid_t gid, KernelThreads kthreads = KernelThreads::include);

// Processes whose /proc/<pid>/ns/pid is the namespace with inode `ns_inode`.
std::vector<pid_t> processes_in_pid_namespace(ino_t ns_inode);

// One pass over /proc answering both teardown questions (kernel threads
// skipped, see KernelThreads): which processes are in
// the PID namespace `ns_inode`, and which have `uid` in any Uid: field or `gid`
// in any Gid: field (the same checks as processes_in_pid_namespace and
// processes_owned_by, from one directory listing).
struct HostScan {
    std::vector<pid_t> in_pid_namespace;
    std::vector<pid_t> owned_by;
};
HostScan scan_host(ino_t ns_inode, uid_t uid, gid_t gid);

// SIGKILLs the process now at `pid` only if it still has `uid` in a Uid: field
// or `gid` in a Gid: field. The process is pinned with a pidfd before it is
// checked and signalled through that pidfd, so a pid that was listed by a
// scan, exited and was reused by someone else's process is never hit.
// True if a signal was sent.
bool kill_if_owned_by(pid_t pid, uid_t uid, gid_t gid);

// The same for a process that must still be in the cgroup whose path, as
// /proc/<pid>/cgroup shows it, starts with `cgroup_path` ("/corral/<run-id>").
bool kill_if_in_cgroup(pid_t pid, const std::string& cgroup_path);

// Inode of the pid namespace of `pid` (stat of /proc/<pid>/ns/pid); nullopt if the
// process is gone.
std::optional<ino_t> pid_namespace_inode(pid_t pid);

}  // namespace corral::supervisor
