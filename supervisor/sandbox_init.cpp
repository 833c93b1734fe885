#include "supervisor/sandbox_init.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "supervisor/loopback.hpp"
#include "supervisor/fd_passing.hpp"
#include "supervisor/privilege_drop.hpp"
#include "supervisor/init_steps.hpp"
#include "supervisor/invocation_wire.hpp"
#include "supervisor/setup_step.hpp"

namespace corral::supervisor {
// The helpers are in init_steps (supervisor/init_steps.hpp): shared with
// the session's init (init_session.cpp), internal to the init.
namespace init_steps {


void send(int fd, const InitMessage& msg) noexcept {
    // One write of a struct < PIPE_BUF is atomic; retry only on EINTR.
    while (write(fd, &msg, sizeof msg) < 0 && errno == EINTR) {
    }
}

void report_failure(const InitContext& ctx, SetupStep step, int err, const char* detail,
                    std::uint32_t mount_op = 0, std::uint32_t mount_call = 0) noexcept {
    InitMessage msg{};
    msg.kind = InitMessageKind::setup_failed;
    msg.step = step;
    msg.err = err;
    msg.mount_op = mount_op;
    msg.mount_call = mount_call;
    std::strncpy(msg.detail, detail, sizeof msg.detail - 1);
    send(ctx.report_fd, msg);
}

[[noreturn]] void fail(const InitContext& ctx, SetupStep step, int err, const char* detail) noexcept {
    report_failure(ctx, step, err, detail);
    _exit(125);
}

// A mount plan's failed op: its index and call go with the report, so the
// supervisor names the mount (describe_failure).
[[noreturn]] void fail_mount(const InitContext& ctx, SetupStep step, const rootfs::MountFailure& f) noexcept {
    report_failure(ctx, step, f.err, rootfs::call_name(f.call), static_cast<std::uint32_t>(f.op_index),
                   static_cast<std::uint32_t>(f.call));
    _exit(125);
}

// rc is 0 or -errno.
void check_step(const InitContext& ctx, int rc, SetupStep step, const char* call) noexcept {
    if (rc < 0) fail(ctx, step, -rc, call);
}

// One byte from the supervisor; EOF means it died (possibly before our
// parent-death signal was armed), so there is nobody to build a sandbox for.
void wait_for_byte(const InitContext& ctx) noexcept {
    char byte = 0;
    for (;;) {
        ssize_t n = read(ctx.control_fd, &byte, 1);
        if (n == 1) return;
        if (n < 0 && errno == EINTR) continue;
        _exit(125);
    }
}

// /proc/1/cmdline is readable by everyone in the box: overwrite the
// supervisor's argv (host paths, --env values) in place with "corral-init".
// The last byte of the area is left non-NUL, which makes the kernel read the
// command line as a setproctitle(3) title, up to the first NUL.
// (PR_SET_MM_ARG_START would need CAP_SYS_RESOURCE, which not every root has.)
void hide_host_command_line(const InitContext& ctx) noexcept {
    static constexpr char kTitle[] = "corral-init";
    if (ctx.cmdline_start == nullptr || ctx.cmdline_len < sizeof kTitle + 1) return;
    std::memset(ctx.cmdline_start, ' ', ctx.cmdline_len);
    std::memcpy(ctx.cmdline_start, kTitle, sizeof kTitle);
}

// Closes every fd except `keep` (sorted ascending, no duplicates).
int close_all_except(const int* keep, int count) noexcept {
    unsigned next = 0;
    for (int i = 0; i < count; ++i) {
        unsigned k = static_cast<unsigned>(keep[i]);
        if (k > next && syscall(SYS_close_range, next, k - 1, 0) != 0) return -errno;
        next = k + 1;
    }
    return syscall(SYS_close_range, next, ~0U, 0) == 0 ? 0 : -errno;
}

// Moves `fd` to `target` (dup3 clears CLOEXEC unless asked): the source was
// first copied above every target, so no dup2 clobbers a later source.
int high_copy(int fd) noexcept { return fcntl(fd, F_DUPFD_CLOEXEC, 10); }

// ---- graceful stops: the supervisor's SIGTERM (through the init's pidfd)
// goes on, init -> invocation -> the command's process group. A PID 1 gets
// only the signals it has a handler for, so both the init and the invocation
// (which inherits this handler) forward with this one. The box cannot send it:
// both run as root, the box's processes as the agent.
volatile sig_atomic_t g_forward_stop_to = 0;     // pid, or -pgid, to pass SIGTERM on to; 0 = not yet known
volatile sig_atomic_t g_stop_pending = 0;        // came before the child existed

void forward_stop_signal(int) noexcept {
    const int saved = errno;
    if (g_forward_stop_to != 0) kill(g_forward_stop_to, SIGTERM);
    else g_stop_pending = 1;
    errno = saved;
}

void install_stop_forwarding() noexcept {
    struct sigaction sa {};
    sa.sa_handler = forward_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, nullptr);
    // The supervisor blocks its stop signals (it reads them from a signalfd);
    // the init inherited that mask.
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_UNBLOCK, &term, nullptr);
}

// From now on a stop goes to `target` (a pid, or -pgid); one that came
// before is passed on now.
void forward_stops_to(pid_t target) noexcept {
    g_forward_stop_to = target;  // one store of a sig_atomic_t: the handler sees 0 or target
    if (g_stop_pending) {
        g_stop_pending = 0;
        kill(target, SIGTERM);
    }
}

void reset_stop_forwarding() noexcept {
    g_forward_stop_to = 0;
    g_stop_pending = 0;
}

// ---- the command: PID 2 of the nested PID namespace; becomes CMD via execve.
[[noreturn]] void run_command(const InitContext& ctx) noexcept {
    // Ignored signals and the signal mask survive execve: the command starts
    // with default dispositions (the supervisor ignores SIGPIPE, for one).
    for (int sig = 1; sig < _NSIG; ++sig) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (setsid() < 0) fail(ctx, SetupStep::start_new_session, errno, "setsid");
    // --tty: the new session's controlling terminal is the box's pty, so the
    // command (a shell) has job control and the pty's line discipline turns
    // Ctrl-C and Ctrl-Z into signals for its foreground process group.
    const bool tty = ctx.tty_slave_fd >= 0;
    if (tty && ioctl(ctx.tty_slave_fd, TIOCSCTTY, 0) != 0)
        fail(ctx, SetupStep::set_controlling_terminal, errno, "ioctl(TIOCSCTTY)");

    const bool pass_stdin = ctx.stdin_fd >= 0;
    int in = tty ? high_copy(ctx.tty_slave_fd)
                 : pass_stdin ? high_copy(ctx.stdin_fd) : open("/dev/null", O_RDONLY | O_CLOEXEC);
    int out = high_copy(tty ? ctx.tty_slave_fd : ctx.stdout_fd);
    int err = high_copy(tty ? ctx.tty_slave_fd : ctx.stderr_fd);
    int rep = high_copy(ctx.report_fd);
    if (in < 0 || out < 0 || err < 0 || rep < 0)
        fail(ctx, SetupStep::redirect_stdio, errno, pass_stdin || tty ? "fcntl(F_DUPFD)" : "open(/dev/null)");
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 || dup3(rep, 3, O_CLOEXEC) < 0)
        fail(ctx, SetupStep::redirect_stdio, errno, "dup2");
    InitContext local = ctx;   // from here on the report pipe is fd 3
    local.report_fd = 3;
    // Nothing the supervisor had open (lock files, log files, pipes) reaches the command.
    if (syscall(SYS_close_range, 4U, ~0U, 0) != 0) fail(local, SetupStep::close_inherited_fds, errno, "close_range");

    check_step(local, disable_core_dumps(), SetupStep::disable_core_dumps, "setrlimit(RLIMIT_CORE)");
    check_step(local, cap_task_count(local.task_limit), SetupStep::cap_task_count, "setrlimit(RLIMIT_NPROC)");
    check_step(local, cap_open_files(local.open_file_limit), SetupStep::cap_open_files, "setrlimit(RLIMIT_NOFILE)");
    // The command inherited the reaper's score (-1000), which would make the
    // box's processes the OOM killer's last choice and corral's the first.
    // Raised here, before execve and before the command can fork (the box
    // cannot lower it again): the kernel applies it to the reaper too (they
    // share memory until execve), which the reaper undoes once the command
    // has its own image.
    check_step(local, set_oom_score_adj(local.command_oom_score_adj), SetupStep::make_oom_killable,
               "write(/proc/self/oom_score_adj)");
    check_step(local, drop_bounding_set(), SetupStep::drop_bounding_set, "prctl(PR_CAPBSET_DROP)");
    check_step(local, clear_groups(), SetupStep::clear_groups, "setgroups(0)");
    check_step(local, set_agent_gid(local.gid), SetupStep::set_gid, "setresgid");
    check_step(local, set_agent_uid(local.uid), SetupStep::set_uid, "setresuid");
    check_step(local, clear_capabilities(), SetupStep::clear_capabilities, "cap_set_proc");
    // As the agent: a workspace the agent cannot enter fails here, loudly.
    if (chdir(local.cwd) != 0) fail(local, SetupStep::enter_workspace, errno, local.cwd);
    check_step(local, set_no_new_privs(), SetupStep::set_no_new_privs, "prctl(PR_SET_NO_NEW_PRIVS)");
    check_step(local, install_seccomp_program(*local.seccomp), SetupStep::install_seccomp,
               "seccomp(SECCOMP_SET_MODE_FILTER)");
    // A stacked filter after corral's: both run on every call, the stricter
    // verdict wins (SandboxSpec::stacked_seccomp).
    if (local.stacked_seccomp != nullptr)
        check_step(local, install_seccomp_program(*local.stacked_seccomp), SetupStep::install_seccomp,
                   "seccomp(SECCOMP_SET_MODE_FILTER) of the stacked profile");

    // execvp semantics without consulting our own environment: try each
    // candidate; remember a more telling error than ENOENT (EACCES, ENOEXEC).
    int worst = ENOENT;
    const char* worst_path = local.exec_candidates[0] ? local.exec_candidates[0] : "";
    for (char* const* c = local.exec_candidates; *c != nullptr; ++c) {
        execve(*c, local.argv, local.envp);
        if (errno != ENOENT && errno != ENOTDIR && worst == ENOENT) {
            worst = errno;
            worst_path = *c;
        }
    }
    // execve says EACCES for a directory: name what it really is.
    struct stat st {};
    if (worst == EACCES && stat(worst_path, &st) == 0 && S_ISDIR(st.st_mode)) worst = EISDIR;
    report_failure(local, SetupStep::exec_command, worst, worst_path);
    _exit(127);
}

void send_exit_status(const InitContext& ctx, int status) noexcept {
    InitMessage done{};
    done.kind = InitMessageKind::command_exited;
    done.wait_status = status;
    send(ctx.report_fd, done);
}

// Starts the command and reaps: when the command exits its status is
// reported; a run's reaper then exits at once (the kernel kills what the
// command left in the namespace), a session's invocation (`outlive_command`)
// stays the namespace's PID 1 while anything the command started still runs
// (background jobs live on between execs) and exits when nothing is left.
[[noreturn]] void start_command_and_reap(const InitContext& ctx, bool outlive_command) noexcept {
    // The command's raise of its OOM score applies to this reaper too (they
    // share memory until its execve): the reaper's own is put back after.
    const int reaper_oom_score_adj = oom_score_adj_of_self();
    // CLONE_VM | CLONE_VFORK, like posix_spawn: the command shares this
    // reaper's memory on a stack of its own until its execve (or _exit), and
    // the reaper waits until then. No page tables are copied and no page is
    // copied on write for a process that is about to replace its image. The
    // reaper is single-threaded and blocked meanwhile, so nothing the
    // command's last steps touch in the shared memory (libcap's one
    // allocation) can be in use by anyone else.
    static char command_stack[256 * 1024] __attribute__((aligned(16)));
    auto start_command_image = [](void* arg) -> int { run_command(*static_cast<const InitContext*>(arg)); };
    pid_t cmd = clone(start_command_image, command_stack + sizeof command_stack, CLONE_VM | CLONE_VFORK | SIGCHLD,
                      const_cast<InitContext*>(&ctx));
    if (cmd < 0) fail(ctx, SetupStep::spawn_invocation, errno, "clone(CLONE_VM|CLONE_VFORK)");
    // The command leads its own session and process group (setsid before
    // execve): the stop reaches it and whatever it runs in the foreground.
    forward_stops_to(-cmd);
    // The command has its own memory now; its oom_score_adj write before
    // execve also raised the reaper's (shared mm): back to what it was (never
    // below the reaper's minimum, which the init's -1000 set, so no privilege
    // is needed).
    if (int rc = set_oom_score_adj(reaper_oom_score_adj); rc < 0) {
        kill(cmd, SIGKILL);
        fail(ctx, SetupStep::exempt_from_oom_killer, -rc, "write(/proc/self/oom_score_adj) in the reaper");
    }
    close(ctx.stdout_fd);
    close(ctx.stderr_fd);
    if (ctx.control_fd >= 0) close(ctx.control_fd);
    if (ctx.stdin_fd >= 0 && ctx.stdin_fd != ctx.stdout_fd) close(ctx.stdin_fd);  // a stdio server's is its stdout
    if (ctx.tty_slave_fd >= 0) close(ctx.tty_slave_fd);  // the command's alone: its exit is the master's EOF
    // Keep nothing of the host's stdin (1 and 2 are already /dev/null).
    if (int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC); null_fd >= 0) {
        dup2(null_fd, 0);
        close(null_fd);
    }
    for (;;) {
        int status = 0;
        pid_t pid = waitpid(-1, &status, __WALL);
        if (pid < 0 && errno == EINTR) continue;
        if (pid < 0) _exit(outlive_command ? 0 : 125);  // ECHILD: a run's command is our child until reported
        if (pid == cmd) {
            send_exit_status(ctx, status);
            if (!outlive_command) _exit(0);
            // Nothing more to report: the supervisor's exec ends with the
            // status; background jobs keep this namespace alive.
            // (A later stop still goes to the command's process group: its
            // background jobs there get SIGTERM before the kill.)
            close(ctx.report_fd);
        }
    }
}

// ---- the invocation: PID 1 of the nested PID namespace. The command runs as
// its child so that the command has ordinary signal semantics (a PID 1 ignores
// signals it has no handler for, even SIGTERM sent to itself); this reaper
// adopts the command's orphans and, when the command exits, reports its status
// and exits, and the kernel then kills whatever the command left behind.
// It is spawned during setup, so that after "start" only the command's own
// fork and exec remain on the critical path.
[[noreturn]] void run_invocation(const InitContext& ctx) noexcept {
    // getpid() answers in this nested namespace; /proc must too, or every
    // tool reading /proc/<own pid> (ps, runtimes) reads another process. The
    // init never mounted a /proc: this one, of the nested PID namespace, with
    // the plan's masks re-rooted at "/", is the box's only /proc.
    prctl(PR_SET_NAME, "corral-init", 0, 0, 0);
    // The init's handler came with the clone; its target did not: a stop
    // before the command exists waits in g_stop_pending.
    g_forward_stop_to = 0;
    if (auto f = rootfs::apply_mount_plan(*ctx.proc_plan)) fail_mount(ctx, SetupStep::mount_invocation_proc, *f);
    InitMessage ready{};
    ready.kind = InitMessageKind::ready;
    send(ctx.report_fd, ready);
    wait_for_byte(ctx);  // "start": the supervisor's hook ran
    start_command_and_reap(ctx, false);
}

// Into the run's v1 cgroups before any other work (so all of it is
// accounted and limited there) and before the cgroup namespace is made. "0"
// to `tasks` moves the writing thread, the init's only one, so the whole
// process; the kernel then skips the threadgroup lock (and its RCU wait).
void join_v1_cgroups_self(const InitContext& ctx) noexcept {
    for (int i = 0; i < ctx.v1_tasks_count; ++i) {
        if (write(ctx.v1_tasks_fds[i], "0", 1) != 1)
            fail(ctx, SetupStep::join_run_cgroup, errno, "write(\"0\", the run's v1 cgroup's tasks file)");
        close(ctx.v1_tasks_fds[i]);
    }
}

// Our pipes, and the detached ID-mapped trees the mount plan attaches
// (rootfs/idmapped_tree.hpp): the only inherited fds the init keeps.
void keep_only_the_inits_fds(const InitContext& ctx) noexcept {
    constexpr int kMaxTrees = 8;
    int keep[10 + kMaxTrees] = {0, 1, 2, ctx.report_fd, ctx.control_fd, ctx.stdout_fd, ctx.stderr_fd};
    int count = 7;
    if (ctx.stdin_fd >= 0) keep[count++] = ctx.stdin_fd;
    if (ctx.tty_channel_fd >= 0) keep[count++] = ctx.tty_channel_fd;
    if (ctx.session_fd >= 0) keep[count++] = ctx.session_fd;
    for (const auto& op : ctx.plan->ops) {
        if (op.kind != rootfs::MountKind::AttachTree || op.tree_fd < 0) continue;
        if (count == 10 + kMaxTrees) fail(ctx, SetupStep::wait_for_supervisor, EMFILE, "more ID-mapped binds than the init keeps");
        keep[count++] = op.tree_fd;
    }
    // Insertion sort + dedupe (close_all_except wants ascending, distinct fds).
    int distinct = 0;
    for (int i = 0; i < count; ++i) {
        int v = keep[i], j = distinct;
        bool dup = false;
        for (int k = 0; k < distinct; ++k) dup = dup || keep[k] == v;
        if (dup) continue;
        while (j > 0 && keep[j - 1] > v) {
            keep[j] = keep[j - 1];
            --j;
        }
        keep[j] = v;
        ++distinct;
    }
    count = distinct;
    check_step(ctx, close_all_except(keep, count), SetupStep::wait_for_supervisor, "close_range");
}

}  // namespace init_steps


void run_sandbox_init(const InitContext& ctx) noexcept { init_steps::run_init(ctx); }

namespace init_steps {

// Steps 6 and 7 (with capture, the routes between them): lo up, the
// synthetic ranges routed to it, and then checked that lo is the box's one
// link and every route stays on it; any failure ends the setup.
void make_loopback_the_only_network(const InitContext& ctx) noexcept {
    check_step(ctx, bring_up_loopback(), SetupStep::bring_up_loopback, "RTM_NEWLINK(lo, IFF_UP)");
    if (ctx.capture_routes)
        check_step(ctx, add_capture_routes(true), SetupStep::add_capture_routes, "RTM_NEWROUTE(local, lo)");
    check_step(ctx, verify_only_loopback(ctx.capture_routes), SetupStep::verify_only_loopback,
               "RTM_GETLINK, RTM_GETROUTE");
}

// The init itself: the numbered setup sequence (docs/architecture.md).
[[noreturn]] void run_init(const InitContext& ctx) noexcept {
    install_stop_forwarding();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
        fail(ctx, SetupStep::set_parent_death_signal, errno, "prctl(PR_SET_PDEATHSIG)");
    join_v1_cgroups_self(ctx);
    // Memory that belongs to no process (tmpfs pages, kernel objects) can
    // leave the OOM killer only corral's processes to choose from: the init
    // and, by inheritance, the reaper are exempt where root may lower the
    // score (CAP_SYS_RESOURCE; a root without it keeps its score and the
    // box's +1000 still makes every box process go first). Through the
    // host's /proc, still mounted in this new mount namespace.
    if (int rc = set_oom_score_adj(-1000); rc < 0 && rc != -EACCES && rc != -EPERM)
        fail(ctx, SetupStep::exempt_from_oom_killer, -rc, "write(/proc/self/oom_score_adj)");
    prctl(PR_SET_NAME, "corral-init", 0, 0, 0);
    hide_host_command_line(ctx);
    keep_only_the_inits_fds(ctx);

    // The cgroup namespace is rooted where the process is when it is created:
    // created now, inside the run's cgroups (v2 from birth, v1 since
    // join_v1_cgroups_self), the box sees that cgroup as "/".
    if (unshare(CLONE_NEWCGROUP) != 0) fail(ctx, SetupStep::join_cgroup_namespace, errno, "unshare(CLONE_NEWCGROUP)");

    if (auto f = rootfs::apply_mount_plan(*ctx.plan)) fail_mount(ctx, SetupStep::apply_mount_plan, *f);
    if (auto f = rootfs::enter_rootfs(*ctx.plan)) fail_mount(ctx, SetupStep::enter_rootfs, *f);
    make_loopback_the_only_network(ctx);
    if (sethostname(ctx.hostname, std::strlen(ctx.hostname)) != 0)
        fail(ctx, SetupStep::set_hostname, errno, "sethostname");
    // What the invocation inherits: the context plus, with --tty, the pty's slave.
    InitContext inv_ctx = ctx;
    if (ctx.tty_channel_fd >= 0) inv_ctx.tty_slave_fd = open_box_pty(ctx);

    // The init's own stdout/stderr are the host's terminal: never used again.
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0 || dup2(null_fd, 1) < 0 || dup2(null_fd, 2) < 0)
        fail(ctx, SetupStep::redirect_stdio, errno, "open(/dev/null)");

    if (ctx.session_fd >= 0) {
        close(ctx.stdout_fd);  // a session's output is per exec: these pipes are unused
        close(ctx.stderr_fd);
        close(ctx.control_fd);
        if (dup2(null_fd, 0) < 0) close(0);
        close(null_fd);
        serve_session(ctx);
    }

    // The invocation gets its own PID namespace: when it exits, the kernel
    // kills everything it left behind (daemons, setsid'd grandchildren). It
    // mounts the box's /proc, reports "ready" and waits for "start" itself.
    clone_args args{};
    args.flags = CLONE_NEWPID;
    args.exit_signal = SIGCHLD;
    long inv = syscall(SYS_clone3, &args, sizeof args);
    if (inv < 0) fail(ctx, SetupStep::spawn_invocation, errno, "clone3(CLONE_NEWPID)");
    if (inv == 0) run_invocation(inv_ctx);
    forward_stops_to(static_cast<pid_t>(inv));
    if (inv_ctx.tty_slave_fd >= 0) close(inv_ctx.tty_slave_fd);  // the invocation has its own copy

    close(ctx.stdout_fd);  // EOF for the supervisor once the command's side closes
    close(ctx.stderr_fd);
    close(ctx.control_fd);
    if (ctx.stdin_fd >= 0) close(ctx.stdin_fd);  // the invocation has its own copy
    if (dup2(null_fd, 0) < 0) close(0);  // the command has its own copy of a passed stdin
    close(null_fd);

    // PID 1: reap every orphan; report the command's status as soon as it is known.
    for (;;) {
        int status = 0;
        pid_t pid = waitpid(-1, &status, __WALL);
        if (pid < 0) {
            if (errno == EINTR) continue;
            _exit(0);  // ECHILD: nothing left in the sandbox but us
        }
        // The reaper reports the command's status itself; if it was killed
        // first (e.g. by the OOM killer) its own death is the best we know.
        if (pid == inv && WIFSIGNALED(status)) send_exit_status(ctx, status);
    }
}

}  // namespace init_steps

}  // namespace corral::supervisor
