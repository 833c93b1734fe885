// supervisor/privilege_drop.hpp — becoming the agent: the one-way trip from root to
// an unprivileged UID with no capabilities, in the only safe order.
//
// Order matters: the bounding set can only be dropped while CAP_SETPCAP is
// held; groups only while CAP_SETGID is held; the gid before the uid (after
// setresuid the process can no longer change its gid); the remaining cap sets
// and ambient after, so nothing can be regained; no_new_privs and seccomp last
// (seccomp would otherwise have to allow the calls above).
//
// These run in the invocation child between clone and execve: no throw, no
// log; each returns 0 or -errno and the caller reports the step.
#pragma once

#include <sys/types.h>

#include <cstdint>

namespace corral::supervisor {

// RLIMIT_CORE soft = hard = 1 byte: no core file (below the one-page minimum
// of an ELF dump) and no core_pattern pipe (the kernel skips pipe helpers at
// exactly 1). A pipe helper runs as root on the host, outside the run's
// cgroup, parsing memory the box controls; the hard limit keeps it that way.
int disable_core_dumps() noexcept;
// RLIMIT_NPROC soft = hard = `tasks`: processes and threads of the real UID,
// counted host-wide by the kernel at each fork. Set while root (lowering the
// hard limit needs no privilege; the agent cannot raise it again).
int cap_task_count(std::uint64_t tasks) noexcept;
// RLIMIT_NOFILE soft = hard = `files`: the command cannot raise it (raising the
// hard limit needs CAP_SYS_RESOURCE), so its tasks × files stay below the
// host's file table (host_budget.hpp).
int cap_open_files(std::uint64_t files) noexcept;
// oom_score_adj of the calling process (and, the kernel's rule, of every
// process sharing its memory). Lowering below the process's minimum needs
// CAP_SYS_RESOURCE: corral's init sets -1000 when it may; the command raises
// its own before execve.
int set_oom_score_adj(int adj) noexcept;
// The calling process's oom_score_adj (0 if it cannot be read).
int oom_score_adj_of_self() noexcept;
int drop_bounding_set() noexcept;          // every cap out of the bounding set (libcap)
int clear_groups() noexcept;               // setgroups(0): no supplementary groups
int set_agent_gid(gid_t gid) noexcept;     // setresgid(gid, gid, gid)
int set_agent_uid(uid_t uid) noexcept;     // setresuid(uid, uid, uid)
int clear_capabilities() noexcept;         // empty E/P/I sets and ambient (libcap)
int set_no_new_privs() noexcept;           // PR_SET_NO_NEW_PRIVS: no setuid/file-cap gains via execve

}  // namespace corral::supervisor
