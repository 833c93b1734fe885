// supervisor/sandbox_init.hpp — corral's init: PID 1 of the sandbox.
//
// It is corral's own code (no execve of another binary), forked by clone3 from
// the single-threaded supervisor. It finishes building the sandbox from the
// inside, starts the command in a nested PID namespace on request, reaps every
// orphan and reports the command's wait status. Everything it needs is prepared
// by the parent before the clone (InitContext): it only reads that memory and
// makes system calls, and reports failures as {step, errno} (setup_step.hpp).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "rootfs/mount_plan.hpp"
#include "supervisor/seccomp_policy.hpp"

namespace corral::supervisor {

struct InitContext {
    const rootfs::MountPlan* plan;
    const rootfs::MountPlan* proc_plan;  // the plan's /proc ops, rooted at "/" (applied by the reaper)
    const char* hostname;
    bool capture_routes;                 // add_capture_routes after lo is up (SandboxSpec::capture)
    uid_t uid;
    gid_t gid;
    const char* cwd;                     // the command's working directory in the box
    char* const* argv;                   // NULL-terminated
    char* const* envp;                   // NULL-terminated
    char* const* exec_candidates;        // NULL-terminated: argv[0] resolved against PATH, in order
    const SeccompProgram* seccomp;
    const SeccompProgram* stacked_seccomp;  // installed after `seccomp` on each command; nullptr: none
    int report_fd;                       // write end, CLOEXEC
    int control_fd;                      // read end: "start"
    // The run's v1 cgroups (hybrid hosts; on v2 CLONE_INTO_CGROUP put the
    // init in its cgroup at birth): each one's `tasks` file, opened by the
    // supervisor. The init's first step writes "0" to each, moving itself in
    // before any of its work. A thread that moves itself needs no cgroup
    // threadgroup lock; a join by cgroup.procs takes it for writing, which
    // waits for an RCU grace period (7-15 ms here, most of a run's start).
    static constexpr int kMaxV1Cgroups = 8;
    int v1_tasks_fds[kMaxV1Cgroups];
    int v1_tasks_count;
    int stdout_fd;                       // write ends of the output pipes
    int stderr_fd;
    int stdin_fd;                        // the command's stdin (stdin_handover.hpp); -1: the box's /dev/null
    // --tty: the init's end of a socket pair over which it hands the master
    // of the box's pty to the supervisor (SCM_RIGHTS); -1 without --tty.
    int tty_channel_fd;
    int tty_slave_fd;                    // -1; set by the init itself once it opened the pty
    // A session (`corral session start`): the init's end of the SOCK_SEQPACKET
    // pair its supervisor sends exec requests over (invocation_wire.hpp); the
    // init then starts no command of its own but one invocation per request.
    // -1 for a run.
    int session_fd;
    uid_t role_uids[2];                  // a session's service and verifier UIDs (GID alike); 0 for a run
    std::uint64_t task_limit;            // RLIMIT_NPROC of the command's (run-exclusive) UID
    std::uint64_t open_file_limit;       // RLIMIT_NOFILE of the command
    int command_oom_score_adj;           // the command's oom_score_adj (corral's own processes: -1000)
    char* cmdline_start;                 // the supervisor's argv area (/proc/self/stat arg_start..arg_end),
    std::size_t cmdline_len;             // overwritten in the init; nullptr/0 if unknown
};

// Never returns. Exit status of the init: 0 after reporting the command's
// status (a session's: once its supervisor closed the channel); 125 after
// reporting a failed step (or if the supervisor vanished).
[[noreturn]] void run_sandbox_init(const InitContext& ctx) noexcept;

}  // namespace corral::supervisor
