// supervisor/sandbox_launch.cpp — launch_sandbox: from a spec to a sandbox
// whose init reported "ready" (the hook point). The steps, in order, are
// docs/architecture.md's "In the supervisor" 5.1-5.12; each function below is
// one of them, named for what it guarantees.
#include "supervisor/sandbox.hpp"
#include "supervisor/uid_claims.hpp"

#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <linux/sched.h>
#include <poll.h>
#include <sys/socket.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <set>
#include <thread>
#include <tuple>

#include "base/log.hpp"
#include "base/sys_error.hpp"
#include "rootfs/idmapped_tree.hpp"
#include "supervisor/command_path.hpp"
#include "supervisor/host_budget.hpp"
#include "supervisor/hostname.hpp"
#include "supervisor/init_channel.hpp"
#include "supervisor/sandbox_init.hpp"
#include "supervisor/seccomp_cache.hpp"
#include "supervisor/invocation_wire.hpp"
#include "supervisor/stale_cleanup.hpp"
#include "supervisor/sweep.hpp"
#include "supervisor/threads.hpp"

namespace corral::supervisor {

namespace {

// Phase timings at debug level (CORRAL_LOG=debug): startup cost is a feature.
class PhaseTimer {
public:
    void lap(const char* what) {
        if (log::level() > log::Level::debug) return;
        auto now = std::chrono::steady_clock::now();
        log::debug(std::string("timing: ") + what + " " +
                   std::to_string(std::chrono::duration<double, std::milli>(now - last_).count()) + "ms");
        last_ = now;
    }

private:
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// What the box may get as stdin and the limits the host's pools allow.
struct HostInputs {
    StdinHandover stdin_handover;
    Fd window_signals;   // --tty: SIGWINCH, blocked while single-threaded (terminal.hpp)
    std::uint64_t task_limit = 0;
    std::uint64_t open_files = 0;
};

// Checked before anything is built, so a refusal leaves nothing to undo
// (step 5.1). Adds the terminal's seccomp rules and the default socket budget
// to `spec`.
HostInputs take_stdin_and_host_limits(SandboxSpec& spec) {
    HostInputs in;
    if (spec.tty && spec.pass_stdin)
        throw UsageError("--tty and --stdin: --tty already makes the terminal CMD's stdin; give one of them");
    if (spec.tty) {
        require_caller_terminal();
        in.window_signals = watch_window_size_changes();
    }
    if (spec.pass_stdin) in.stdin_handover = hand_over_stdin(0);
    // The box holds a terminal of the host: no TIOCSCTTY on it.
    if (in.stdin_handover.terminal)
        for (auto& rule : inherited_terminal_rules()) spec.seccomp_rules.push_back(std::move(rule));
    const HostBudget budget = read_host_budget();
    in.task_limit = spec.limits.pids.value_or(default_task_limit(budget));
    in.open_files = spec.open_files.value_or(default_open_files(budget, in.task_limit));
    check_open_file_budget(budget, in.task_limit, in.open_files);
    if (!spec.limits.memory_bytes) spec.limits.socket_memory_bytes = default_socket_memory(budget);
    return in;
}

// The run's own UID, its lock naming the run id (step 5.2). A previous
// attempt's lease is released only now that this one holds the id.
UidLease lease_uid_for_run(const SandboxSpec& spec, const std::set<uid_t>& skip_uids, UidLease* previous_attempt) {
    UidLease lease = acquire_uid(spec.uid_range, spec.lock_dir, skip_uids);
    lease.record_run_id(spec.run_id);
    if (previous_attempt != nullptr) previous_attempt->release();
    return lease;
}

struct PlannedRootfs {
    rootfs::MountPlan plan;
    rootfs::MountPlan proc_plan;    // the invocation's /proc, taken out of `plan`
    rootfs::PreparedTrees trees;    // the workspace's detached trees, open until "ready"
};

// The mount plan for the leased identity, and the workspace's ID-mapped bind
// made here, where a refusal can still be reported plainly (step 5.4).
PlannedRootfs plan_rootfs_for_lease(SandboxSpec& spec, const UidLease& lease, PhaseTimer& timer) {
    spec.rootfs.scratch_dir = spec.scratch_root + "/" + spec.run_id;
    spec.rootfs.agent_uid = lease.uid();
    spec.rootfs.agent_gid = lease.gid();
    spec.rootfs.hostname = spec.hostname;
    PlannedRootfs out;
    out.plan = rootfs::plan_rootfs(spec.rootfs);
    out.proc_plan = rootfs::take_proc_mounts(out.plan);
    timer.lap("plan_rootfs");
    out.trees = rootfs::prepare_idmapped_trees(out.plan);
    timer.lap("prepare_idmapped_trees");
    return out;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

// The command's argv, environment and execve candidates as the init reads
// them (step 5.6): NULL-terminated arrays into strings this object owns. Not
// movable, so the pointers stay valid until the clone has copied them.
class CommandImage {
public:
    explicit CommandImage(const SandboxSpec& spec)
        : argv_s_(spec.argv), env_s_(command_environment(spec)), cand_s_(exec_candidates(spec.argv.front(), env_s_)),
          argv_(c_strings(argv_s_)), envp_(c_strings(env_s_)), cands_(c_strings(cand_s_)) {}
    CommandImage(const CommandImage&) = delete;
    CommandImage& operator=(const CommandImage&) = delete;

    char* const* argv() const { return argv_.data(); }
    char* const* envp() const { return envp_.data(); }
    char* const* candidates() const { return cands_.data(); }

private:
    std::vector<std::string> argv_s_, env_s_, cand_s_;
    std::vector<char*> argv_, envp_, cands_;
};

// Step 5.7: report (init → supervisor), control ("go", "start"), stdout,
// stderr; every end CLOEXEC. The child's ends are closed once it has them.
struct InitPipes {
    std::pair<Fd, Fd> report = make_pipe();
    std::pair<Fd, Fd> control = make_pipe();
    std::pair<Fd, Fd> out = make_pipe();
    std::pair<Fd, Fd> err = make_pipe();
    std::pair<Fd, Fd> tty;   // --tty: the pty master's way out (first: the supervisor's end)
    std::pair<Fd, Fd> session;   // a session: exec requests (first: the supervisor's end)
    InitPipes(bool with_tty, bool with_session) {
        if (with_tty) tty = make_fd_channel();
        if (with_session) {
            session = make_fd_channel();
            // One request is one datagram, up to kMaxExecRequestBytes: the
            // default send buffer (~208 KiB) would refuse a large one.
            const int bytes = static_cast<int>(kMaxExecRequestBytes + 64 * 1024);
            if (setsockopt(session.first.get(), SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0)
                setsockopt(session.first.get(), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
        }
    }
};

// Own address range of this process's argv strings (fields 48 and 49 of
// /proc/self/stat), so the init can overwrite its copy; {nullptr, 0} if unknown.
std::pair<char*, std::size_t> own_command_line_area() {
    Fd fd(open("/proc/self/stat", O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return {nullptr, 0};
    char buf[2048];
    ssize_t n = read(fd.get(), buf, sizeof buf - 1);
    if (n <= 0) return {nullptr, 0};
    buf[n] = '\0';
    const char* p = std::strrchr(buf, ')');  // comm may contain spaces and parens
    if (p == nullptr) return {nullptr, 0};
    ++p;
    unsigned long long start = 0, end = 0;
    for (int field = 3; field <= 49 && *p != '\0'; ++field) {
        while (*p == ' ') ++p;
        char* next = nullptr;
        unsigned long long v = std::strtoull(p, &next, 10);
        if (field == 48) start = v;
        if (field == 49) end = v;
        p = next != p ? next : p + std::strcspn(p, " ");
    }
    if (start == 0 || end <= start) return {nullptr, 0};
    return {reinterpret_cast<char*>(static_cast<std::uintptr_t>(start)), static_cast<std::size_t>(end - start)};
}

bool is_cgroup2(const std::string& dir) {
    struct statfs fs{};
    return statfs(dir.c_str(), &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

// Joining a cgroup by writing cgroup.procs takes the kernel's cgroup
// threadgroup lock for writing, which waits for an RCU grace period (7-15 ms
// here, once the largest single cost of a run). clone3(CLONE_INTO_CGROUP)
// starts the init directly in the run's v2 cgroup; into v1 hierarchies
// (hybrid hosts) the init moves itself through the `tasks` files opened
// here (join_v1_cgroups_self, sandbox_init.cpp), which needs no such lock.
struct CgroupPlacement {
    Fd v2_dir;                             // for clone_args.cgroup
    std::vector<Fd> v1_tasks;              // each v1 dir's `tasks`, written by the init
};

// The run's cgroups as the box sees them (rootfs::CgroupView): a pure v2
// host's one directory at /sys/fs/cgroup; else each v1 hierarchy under its
// mount's name and v2 as "unified", the layout of the host (and of systemd's
// hybrid mode), where node's libuv, the JVM and Go look.
std::vector<rootfs::CgroupView> box_cgroup_views(const RunCgroup& cgroup) {
    std::vector<rootfs::CgroupView> views;
    for (const auto& dir : cgroup.paths()) {
        // <mount>/corral/<run-id>: the hierarchy's name is the mount's last component.
        const std::string mount = dir.substr(0, dir.rfind("/corral/"));
        views.push_back({dir, is_cgroup2(dir) ? "unified" : mount.substr(mount.rfind('/') + 1)});
    }
    if (views.size() == 1 && views.front().box_dir == "unified") views.front().box_dir.clear();
    return views;
}

CgroupPlacement placement_of(const RunCgroup& cgroup) {
    CgroupPlacement p;
    for (const auto& dir : cgroup.paths()) {
        if (!p.v2_dir.valid() && is_cgroup2(dir)) {
            p.v2_dir.reset(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
            if (!p.v2_dir.valid()) throw SysError("open", dir, errno);
        } else {
            const std::string tasks = dir + "/tasks";
            Fd fd(open(tasks.c_str(), O_WRONLY | O_CLOEXEC));
            if (!fd.valid()) throw SysError("open", tasks, errno);
            p.v1_tasks.push_back(std::move(fd));
        }
    }
    if (p.v1_tasks.size() > static_cast<std::size_t>(InitContext::kMaxV1Cgroups))
        throw SysError("launch_sandbox", std::to_string(p.v1_tasks.size()) + " v1 cgroup hierarchies; the init joins at most " +
                                             std::to_string(InitContext::kMaxV1Cgroups), E2BIG);
    return p;
}

// Everything the init reads, prepared now: after the clone it only makes
// system calls on this memory (sandbox_init.hpp).
InitContext init_context(const SandboxSpec& spec, const UidLease& lease, const PlannedRootfs& rootfs,
                         const CommandImage& command, const SeccompProgram& seccomp, const InitPipes& pipes,
                         const HostInputs& host, const CgroupPlacement& placement) {
    InitContext ctx{};
    ctx.plan = &rootfs.plan;
    ctx.proc_plan = &rootfs.proc_plan;
    ctx.hostname = spec.hostname.c_str();
    ctx.capture_routes = spec.capture;
    ctx.uid = lease.uid();
    ctx.gid = lease.gid();
    ctx.cwd = spec.cwd.c_str();
    ctx.argv = command.argv();
    ctx.envp = command.envp();
    ctx.exec_candidates = command.candidates();
    ctx.seccomp = &seccomp;
    ctx.stacked_seccomp = nullptr;
    ctx.report_fd = pipes.report.second.get();
    ctx.control_fd = pipes.control.first.get();
    ctx.stdout_fd = pipes.out.second.get();
    ctx.stderr_fd = pipes.err.second.get();
    ctx.stdin_fd = host.stdin_handover.fd.valid() ? host.stdin_handover.fd.get() : -1;
    ctx.tty_channel_fd = pipes.tty.second.valid() ? pipes.tty.second.get() : -1;
    ctx.tty_slave_fd = -1;
    ctx.session_fd = pipes.session.second.valid() ? pipes.session.second.get() : -1;
    ctx.role_uids[0] = ctx.role_uids[1] = 0;
    // The UID is this run's alone, so its task count is the run's: a bound
    // even without --pids (whose cgroup limit also covers the init and reaper).
    ctx.task_limit = host.task_limit;
    ctx.open_file_limit = host.open_files;
    ctx.command_oom_score_adj = kCommandOomScoreAdj;
    std::tie(ctx.cmdline_start, ctx.cmdline_len) = own_command_line_area();
    ctx.v1_tasks_count = 0;
    for (const auto& fd : placement.v1_tasks) ctx.v1_tasks_fds[ctx.v1_tasks_count++] = fd.get();
    return ctx;
}

// A clone of a multi-threaded process may inherit a lock (malloc, stdio)
// held by a thread that does not exist in the child (step 5.7).
void require_single_thread() {
    if (std::size_t threads = count_threads_after_joins(); threads != 1)
        throw SysError("launch_sandbox", "called with " + std::to_string(threads) + " threads; must be single-threaded",
                       EDEADLK);
}

// Step 5.8: the init, in its new namespaces (and, on v2, already in the
// run's cgroup). The child runs run_sandbox_init and never returns here.
// Returns the init's PID; `pidfd` receives its pidfd.
pid_t clone_init(const InitContext& ctx, const CgroupPlacement& placement, int& pidfd) {
    clone_args args{};
    // CLONE_NEWCGROUP is deliberately absent: the init creates its cgroup
    // namespace after joining the run's cgroup (see sandbox_init.cpp).
    args.flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_PIDFD;
    args.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
    args.exit_signal = SIGCHLD;
    if (placement.v2_dir.valid()) {
        args.flags |= CLONE_INTO_CGROUP;
        args.cgroup = static_cast<std::uint64_t>(placement.v2_dir.get());
    }
    long pid = syscall(SYS_clone3, &args, sizeof args);
    if (pid < 0)
        throw SysError("clone3", std::string("CLONE_NEWPID|NEWNS|NEWNET|NEWIPC|NEWUTS|PIDFD") +
                                     (placement.v2_dir.valid() ? "|INTO_CGROUP" : ""), errno);
    if (pid == 0) run_sandbox_init(ctx);
    return static_cast<pid_t>(pid);
}

// The leased UID turned out to own processes that are not this run's: the
// sandbox was torn down (its command never ran) and another UID is tried.
// The lease comes along, still held: its lock names this run id until the
// next attempt has recorded the same id in its own lease, so a concurrent
// stale cleanup never sees the run's id unheld in between (it would remove
// the next attempt's cgroup and scratch, which carry the same id).
class UidInUse : public SandboxSetupError {
public:
    UidInUse(uid_t uid, std::shared_ptr<UidLease> lease, const std::string& message)
        : SandboxSetupError(SetupStep::verify_uid_unused, EBUSY, message), uid_(uid), lease_(std::move(lease)) {}
    uid_t uid() const { return uid_; }
    const std::shared_ptr<UidLease>& lease() const { return lease_; }

private:
    uid_t uid_;
    std::shared_ptr<UidLease> lease_;
};

// A std::thread that is joined whichever way the scope is left (a joinable
// std::thread destroyed by an exception would terminate the process).
struct JoinOnExit {
    std::thread& t;
    ~JoinOnExit() {
        if (t.joinable()) t.join();
    }
};

}  // namespace

// The steps that reach into the Sandbox under construction.
struct SandboxLauncher {
    static Sandbox launch_once(SandboxSpec spec, const std::set<uid_t>& skip_uids, const Tell& tell,
                               const WhileInitBuilds& while_init_builds, UidLease* previous_attempt);

    // The Sandbox owns the init from here on: its pidfd, its pipes' supervisor
    // ends (the child's ends closed), the plan and the terminal to restore.
    static Sandbox adopt_init(SandboxSpec spec, UidLease lease, RunCgroup cgroup, PlannedRootfs& rootfs,
                              HostInputs& host, InitPipes& pipes, pid_t pid, int pidfd);
    // Step 5.9: the PID namespace's identity, for teardown's check that it is
    // empty. An init that already died says why in its report.
    static void pin_pid_namespace(Sandbox& box);
    // An init that has already exited after a failed setup step: that step's
    // report. Nothing while it lives (never blocks on a live init).
    static std::optional<SandboxSetupError> exited_init_failure(Sandbox& box);
    // Step 5.11: the init into the run's v1 cgroups, then "go".
    // Step 5.10's remove_stale_runs: only with the host-wide lock dir (with a
    // private one every other run would look stale, stale_cleanup.hpp).
    // True if something was removed.
    static bool remove_stale_runs_if_host_wide(const Sandbox& box, PhaseTimer& timer, const Tell& tell);
    // Step 5.10's verify_uid_unused: no user, group or process has the
    // leased UID; else UidInUse carries the lease to the next attempt.
    static void verify_uid_unused(Sandbox& box, PhaseTimer& timer, const Tell& tell);
    // Step 5.12: the reaper's "ready", or the failed step it reports.
    static void wait_for_ready(Sandbox& box);
    // Step 5.13 (--tty): the master of the box's pty, sent by the init before
    // "ready", joined to the caller's terminal (not raw yet).
    static void take_pty_master(Sandbox& box, InitPipes& pipes, HostInputs& host);
};

Sandbox SandboxLauncher::adopt_init(SandboxSpec spec, UidLease lease, RunCgroup cgroup, PlannedRootfs& rootfs,
                                    HostInputs& host, InitPipes& pipes, pid_t pid, int pidfd) {
    Sandbox box(std::move(spec), std::move(lease), std::move(cgroup));
    box.plan_ = std::move(rootfs.plan);
    box.idmapped_binds_ = std::move(rootfs.trees.idmapped);
    box.unmapped_binds_ = std::move(rootfs.trees.fallbacks);
    box.review_upper_ = std::move(rootfs.trees.review_upper);  // made anew by each launch attempt
    box.proc_plan_ = std::move(rootfs.proc_plan);
    box.init_pid_ = pid;
    box.pidfd_.reset(pidfd);
    box.terminal_ = host.stdin_handover.saved;
    host.stdin_handover.fd.reset();  // the init has its copy
    pipes.report.second.reset();
    pipes.control.first.reset();
    pipes.out.second.reset();
    pipes.err.second.reset();
    pipes.tty.second.reset();
    pipes.session.second.reset();
    box.report_ = std::move(pipes.report.first);
    if (pipes.session.first.valid()) {
        box.session_ = std::move(pipes.session.first);
        box.session_lock_ = std::make_unique<std::mutex>();
    }
    box.task_limit_ = host.task_limit;
    box.open_file_limit_ = host.open_files;
    box.control_ = std::move(pipes.control.second);
    box.stdout_ = std::move(pipes.out.first);
    box.stderr_ = std::move(pipes.err.first);
    return box;
}

void SandboxLauncher::pin_pid_namespace(Sandbox& box) {
    auto ns = pid_namespace_inode(box.init_pid_);
    if (!ns) {
        // Not waiting for "go", a failed setup step can end the init this
        // early: its report says which step.
        InitMessage early{};
        if (read_message(box.report_.get(), early) && early.kind == InitMessageKind::setup_failed)
            throw setup_error(early, box.plan_, box.proc_plan_);
        throw SandboxSetupError(SetupStep::wait_for_supervisor, ESRCH,
                                "setup step wait_for_supervisor failed: the sandbox init died at birth");
    }
    box.pid_ns_inode_ = *ns;
}

std::optional<SandboxSetupError> SandboxLauncher::exited_init_failure(Sandbox& box) {
    struct pollfd p {box.pidfd_.get(), POLLIN, 0};
    if (poll(&p, 1, 0) != 1 || !(p.revents & POLLIN)) return std::nullopt;
    InitMessage m{};
    if (read_message(box.report_.get(), m) && m.kind == InitMessageKind::setup_failed)
        return setup_error(m, box.plan_, box.proc_plan_);
    return std::nullopt;
}

bool SandboxLauncher::remove_stale_runs_if_host_wide(const Sandbox& box, PhaseTimer& timer, const Tell& tell) {
    if (box.spec_.lock_dir != kDefaultUidLockDir || box.spec_.scratch_root != kDefaultScratchRoot) return false;
    bool removed = false;
    for (const auto& line : remove_stale_runs(box.spec_.lock_dir, box.spec_.scratch_root)) {
        if (tell) tell("stale cleanup: " + line);
        removed = true;
    }
    timer.lap("remove_stale_runs");
    return removed;
}

void SandboxLauncher::verify_uid_unused(Sandbox& box, PhaseTimer& timer, const Tell& tell) {
    // Nothing of the box has run as the UID yet (the init and the invocation
    // are root until the command's identity drop, after "start"). The /proc
    // pass runs on a helper thread beside the stale cleanup and the lookup.
    const uid_t uid = box.lease_.uid();
    const gid_t gid = box.lease_.gid();
    std::vector<pid_t> owners;
    std::exception_ptr scan_error;
    std::thread owner_scan = start_beside([&] {
        try {
            owners = processes_owned_by(uid, gid, KernelThreads::skip);
        } catch (...) {
            scan_error = std::current_exception();
        }
    });
    bool removed_stale = false;
    std::string user;
    {
        JoinOnExit join_scan{owner_scan};
        removed_stale = remove_stale_runs_if_host_wide(box, timer, tell);
        user = user_database_claim(uid);
    }
    if (scan_error) std::rethrow_exception(scan_error);
    // Survivors of a dead run that had this UID were just killed by the
    // stale cleanup, possibly after the pass saw them: look again.
    if (!owners.empty() && removed_stale) owners = processes_owned_by(uid, gid);
    if (!user.empty())
        throw UidInUse(uid, std::make_shared<UidLease>(std::move(box.lease_)),
                       "setup step verify_uid_unused failed: uid " + std::to_string(uid) + " " + user);
    if (!owners.empty()) {
        std::string pids;
        for (pid_t p : owners) pids += (pids.empty() ? "" : " ") + std::to_string(p);
        throw UidInUse(uid, std::make_shared<UidLease>(std::move(box.lease_)),
                       "setup step verify_uid_unused failed: uid " + std::to_string(uid) +
                           " is used by processes outside corral (pids " + pids + ")");
    }
    timer.lap("verify_uid_unused");
}

void SandboxLauncher::wait_for_ready(Sandbox& box) {
    InitMessage msg{};
    if (!read_message(box.report_.get(), msg))
        throw SandboxSetupError(SetupStep::wait_for_supervisor, EPIPE,
                                "setup step wait_for_supervisor failed: the sandbox init exited without a report");
    if (msg.kind == InitMessageKind::setup_failed) throw setup_error(msg, box.plan_, box.proc_plan_);
    if (msg.kind != InitMessageKind::ready)
        throw SandboxSetupError(SetupStep::wait_for_supervisor, EPROTO,
                                "setup step wait_for_supervisor failed: unexpected message from the sandbox init");
    // The init has attached the ID-mapped trees; their fds close with
    // launch_once's PlannedRootfs when it returns: no stale numbers stay in the plan.
    for (auto& op : box.plan_.ops) op.tree_fd = -1;
}

void SandboxLauncher::take_pty_master(Sandbox& box, InitPipes& pipes, HostInputs& host) {
    if (!pipes.tty.first.valid()) return;
    Fd master = receive_fd(pipes.tty.first, "the box's pty master");
    pipes.tty.first.reset();
    box.tty_ = std::make_unique<TerminalRelay>(std::move(master), std::move(host.window_signals));
}

Sandbox SandboxLauncher::launch_once(SandboxSpec spec, const std::set<uid_t>& skip_uids, const Tell& tell,
                                     const WhileInitBuilds& while_init_builds, UidLease* previous_attempt) {
    PhaseTimer timer;
    HostInputs host = take_stdin_and_host_limits(spec);
    timer.lap("hand_over_stdin, read_host_budget");
    UidLease lease = lease_uid_for_run(spec, skip_uids, previous_attempt);
    timer.lap("acquire_uid");
    std::vector<UidLease> role_leases;
    if (spec.session) role_leases = lease_role_uids(spec, lease.uid(), skip_uids, tell);
    RunCgroup cgroup = RunCgroup::create(spec.run_id, spec.limits);
    timer.lap("RunCgroup::create");
    spec.rootfs.cgroup_views = box_cgroup_views(cgroup);
    PlannedRootfs rootfs = plan_rootfs_for_lease(spec, lease, timer);
    // Not on a helper thread: starting the process's first thread cost more
    // (~0.45 ms measured) than the compile itself. Kept between runs by the
    // policy's digest (supervisor/seccomp_cache.hpp): read back in ~0.1 ms against ~0.55 compiled.
    SeccompProgram seccomp = cached_seccomp_program(spec.seccomp_rules);
    std::optional<SeccompProgram> stacked;
    if (spec.stacked_seccomp) stacked = compile_filter(*spec.stacked_seccomp);
    timer.lap("compile_seccomp");
    const CommandImage command(spec);
    InitPipes pipes(spec.tty, spec.session);

    require_single_thread();
    CgroupPlacement placement = placement_of(cgroup);
    InitContext ctx = init_context(spec, lease, rootfs, command, seccomp, pipes, host, placement);
    if (stacked) ctx.stacked_seccomp = &*stacked;
    for (std::size_t i = 0; i < role_leases.size() && i < 2; ++i) ctx.role_uids[i] = role_leases[i].uid();
    int pidfd = -1;
    pid_t pid = clone_init(ctx, placement, pidfd);
    placement.v1_tasks.clear();  // the init's copies are the ones it writes
    timer.lap("clone3");

    Sandbox box = adopt_init(std::move(spec), std::move(lease), std::move(cgroup), rootfs, host, pipes, pid, pidfd);
    box.role_leases_ = std::move(role_leases);
    if (tell)
        for (const auto& f : box.unmapped_binds_) tell("warning: " + f);
    try {
        pin_pid_namespace(box);

        // While the init builds the rootfs (on the other CPU), the
        // supervisor's own setup work, off the critical path.
        verify_uid_unused(box, timer, tell);
        if (while_init_builds) {
            while_init_builds(box);
            timer.lap("while_init_builds");
        }
        wait_for_ready(box);
        timer.lap("init ready (mounts, pivot_root, lo, hostname)");
        take_pty_master(box, pipes, host);
    } catch (SandboxSetupError& e) {
        e.attach_teardown(teardown(box));
        throw;
    } catch (const std::exception& e) {
        // A step of the supervisor's that needs the init (the egress opens its
        // network namespace) fails once the init has died of a setup step of
        // its own: that step is the cause to report, not the missing /proc entry.
        if (auto reported = exited_init_failure(box)) {
            reported->attach_teardown(teardown(box));
            throw *reported;
        }
        SandboxSetupError wrapped(SetupStep::wait_for_supervisor, EIO, std::string("setting up the sandbox: ") + e.what());
        wrapped.attach_teardown(teardown(box));
        throw wrapped;
    }
    return box;
}

Sandbox launch_sandbox(SandboxSpec spec, const WhileInitBuilds& while_init_builds, const Tell& tell) {
    // A session's init starts no command of its own; the image it is given
    // (never executed) only keeps the init's context whole.
    if (spec.session && spec.argv.empty()) spec.argv = {"/"};
    if (spec.argv.empty()) throw UsageError("missing command");
    if (spec.session && (spec.tty || spec.pass_stdin))
        throw UsageError("a session has no terminal or stdin of its own; give --tty or --stdin to an exec");
    check_hostname(spec.hostname);
    // A UID owned by a foreign process is skipped (as a leased one is), with
    // a warning: an operator should take it out of the range.
    std::set<uid_t> skip;
    std::shared_ptr<UidLease> previous;  // released by the next attempt, or here on the way out
    for (;;) {
        try {
            return SandboxLauncher::launch_once(spec, skip, tell, while_init_builds, previous.get());
        } catch (const UidInUse& e) {
            if (!e.teardown() || !e.teardown()->clean()) throw;
            if (tell) tell("warning: " + std::string(e.what()) + "; skipping it (take it out of --uid-range)");
            skip.insert(e.uid());
            previous = e.lease();
            // The teardown's /proc scanner thread was joined; the next
            // clone3's require_single_thread waits until its task is gone.
        }
    }
}

}  // namespace corral::supervisor
