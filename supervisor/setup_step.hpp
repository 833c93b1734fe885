// supervisor/setup_step.hpp — how the sandbox's init talks to the supervisor.
//
// Between clone3 and execve nothing may throw across the clone boundary or log
// (the child shares no stderr discipline with the parent). Every message is a
// fixed-size InitMessage written whole to a CLOEXEC pipe (smaller than
// PIPE_BUF, so writes are atomic): the parent names the failed step from the
// enum and the errno, e.g.
//   corral run: setup step enter_rootfs failed: pivot_root: Invalid argument
#pragma once

#include <cstdint>
#include <string_view>

namespace corral::supervisor {

// Every step a failure can be reported for, in the order it runs
// (docs/architecture.md). A step that cannot fail reportably has no value:
// the reaper's wait for "start" ends the run without a report when the
// supervisor is gone, and making every mount private is apply_mount_plan's
// first op.
enum class SetupStep : std::uint32_t {
    set_parent_death_signal,
    exempt_from_oom_killer,   // corral-init: oom_score_adj -1000 (the reaper inherits it)
    wait_for_supervisor,
    join_run_cgroup,          // the init into the run's v1 cgroups (join_v1_cgroups_self; v2: CLONE_INTO_CGROUP)
    verify_uid_unused,        // supervisor side, while the init builds the rootfs
    join_cgroup_namespace,
    apply_mount_plan,
    enter_rootfs,
    bring_up_loopback,
    add_capture_routes,       // transparent capture: local routes for the synthetic ranges on lo
    verify_only_loopback,
    set_hostname,
    open_box_pty,             // --tty: a pty of the box's own devpts, its master handed to the supervisor
    spawn_invocation,
    mount_invocation_proc,    // the invocation's own mount ns + a /proc of its PID namespace
    make_role_homes,          // a session: /tmp/corral-roles/{service,verifier}, each its role's alone
    // --- inside the invocation (PID 1 of the nested PID namespace)
    start_new_session,
    set_controlling_terminal, // --tty: the box's pty becomes the new session's controlling terminal
    redirect_stdio,
    close_inherited_fds,
    disable_core_dumps,
    cap_task_count,
    cap_open_files,
    make_oom_killable,        // the command: oom_score_adj back up before execve
    drop_bounding_set,
    clear_groups,
    set_gid,
    set_uid,
    clear_capabilities,
    enter_workspace,
    set_no_new_privs,
    install_seccomp,
    exec_command,
};

std::string_view step_name(SetupStep step);

enum class InitMessageKind : std::uint32_t {
    setup_failed = 1,     // step + err + detail (the failed call)
    ready = 2,            // rootfs entered, lo up, hostname set: the hook point
    command_exited = 3,   // wait_status of the invocation
};

struct InitMessage {
    InitMessageKind kind;
    SetupStep step;
    std::int32_t err;          // errno of the failed call
    std::int32_t wait_status;  // for command_exited
    std::uint32_t mount_op;    // apply_mount_plan/enter_rootfs: rootfs::MountFailure::op_index
    std::uint32_t mount_call;  // ... and rootfs::FailedCall
    char detail[240];          // NUL-terminated: the failed call, or the path tried
};
static_assert(sizeof(InitMessage) < 512, "must stay far below PIPE_BUF so writes are atomic");

}  // namespace corral::supervisor
