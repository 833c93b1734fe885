#include "supervisor/sandbox.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <cstdlib>
#include <exception>
#include <functional>
#include <set>
#include <system_error>
#include <thread>
#include <tuple>

#include "base/log.hpp"
#include "base/sys_error.hpp"
#include "rootfs/idmapped_tree.hpp"
#include "supervisor/host_budget.hpp"
#include "supervisor/log_cap.hpp"
#include "supervisor/hostname.hpp"
#include "supervisor/sandbox_init.hpp"
#include "supervisor/stale_cleanup.hpp"
#include "supervisor/sweep.hpp"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace corral::supervisor {

namespace {

using namespace std::chrono_literals;

int pidfd_send_signal(int pidfd, int sig) {
    return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

// Pipe whose both ends are CLOEXEC; the child dup2s what it hands on.
std::pair<Fd, Fd> make_pipe() {
    int fds[2];
    check_sys(pipe2(fds, O_CLOEXEC), "pipe2");
    return {Fd(fds[0]), Fd(fds[1])};
}

void write_all(int fd, const char* data, std::size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;  // a closed terminal must not stop the log or the run
        data += n;
        len -= static_cast<std::size_t>(n);
    }
}

void write_all_checked(int fd, const char* data, std::size_t len, const std::string& what) {
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw SysError("write", what, errno);
        data += n;
        len -= static_cast<std::size_t>(n);
    }
}

// Runs `work` on a new thread beside the caller's; if no thread can be
// started (the host's or corral's cgroup is at its pids limit), runs it
// right here instead: slower, never skipped. Join the result if joinable().
std::thread start_beside(const std::function<void()>& work) {
    try {
        return std::thread(work);
    } catch (const std::system_error&) {
        work();
        return std::thread();
    }
}

std::size_t count_threads() {
    std::size_t n = 0;
    if (DIR* d = opendir("/proc/self/task")) {
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.') ++n;
        closedir(d);
    }
    return n;
}

std::vector<std::string> path_entries(const std::string& path) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
        std::size_t colon = path.find(':', start);
        std::string dir = path.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
        out.push_back(dir.empty() ? "." : dir);
        if (colon == std::string::npos) return out;
        start = colon + 1;
    }
}

std::string env_value(const std::vector<std::string>& env, const std::string& key) {
    std::string prefix = key + "=";
    std::string value;
    for (const auto& kv : env)
        if (kv.starts_with(prefix)) value = kv.substr(prefix.size());
    return value;
}

// argv[0] as execvp would resolve it, but against the sandbox's PATH.
std::vector<std::string> exec_candidates(const std::string& cmd, const std::vector<std::string>& env) {
    if (cmd.find('/') != std::string::npos) return {cmd};
    std::vector<std::string> out;
    for (const auto& dir : path_entries(env_value(env, "PATH"))) out.push_back(dir + "/" + cmd);
    return out;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

std::string message_detail(const InitMessage& msg) {
    return std::string(msg.detail, strnlen(msg.detail, sizeof msg.detail));
}

// Reads one whole InitMessage; false on EOF.
bool read_message(int fd, InitMessage& msg) {
    std::size_t got = 0;
    auto* p = reinterpret_cast<char*>(&msg);
    while (got < sizeof msg) {
        ssize_t n = read(fd, p + got, sizeof msg - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw SysError("read", "init report pipe", errno);
        if (n == 0) {
            if (got == 0) return false;
            throw SysError("read", "init report pipe: truncated message", EPROTO);
        }
        got += static_cast<std::size_t>(n);
    }
    return true;
}

SandboxSetupError setup_error(const InitMessage& msg, const rootfs::MountPlan& plan,
                              const rootfs::MountPlan& proc_plan) {
    if (msg.step == SetupStep::exec_command)  // the command itself, not corral's setup
        return SandboxSetupError(msg.step, msg.err,
                                 "cannot execute " + message_detail(msg) + " in the sandbox: " + errno_text(msg.err));
    std::string text = "setup step " + std::string(step_name(msg.step)) + " failed: ";
    if ((msg.step == SetupStep::mount_invocation_proc && msg.mount_op < proc_plan.ops.size()) ) {
        rootfs::MountFailure f;
        f.op_index = msg.mount_op;
        f.err = msg.err;
        f.call = static_cast<rootfs::FailedCall>(msg.mount_call);
        text += rootfs::describe_failure(proc_plan, f);
    } else if (msg.step == SetupStep::apply_mount_plan || msg.step == SetupStep::enter_rootfs) {
        rootfs::MountFailure f;
        f.op_index = msg.mount_op;
        f.err = msg.err;
        f.call = static_cast<rootfs::FailedCall>(msg.mount_call);
        text += rootfs::describe_failure(plan, f);
    } else {
        text += message_detail(msg) + ": " + errno_text(msg.err);
    }
    return SandboxSetupError(msg.step, msg.err, text);
}

void send_byte(const Fd& fd, const char* what) {
    char byte = 1;
    for (;;) {
        ssize_t n = write(fd.get(), &byte, 1);
        if (n == 1) return;
        if (n < 0 && errno == EINTR) continue;
        throw SysError("write", what, errno);
    }
}

// The address range of this process's argv strings (fields 48 and 49 of
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
// threadgroup lock for writing, which waits for an RCU grace period (~10 ms
// here, the largest single cost of a run). clone3(CLONE_INTO_CGROUP) starts the
// init directly in the run's v2 cgroup instead; only v1 hierarchies (hybrid
// hosts, limits on v1 controllers) still need the write.
struct CgroupPlacement {
    Fd v2_dir;                             // for clone_args.cgroup
    std::vector<std::string> v1_dirs;      // written after the clone
    bool v1_limits_setup = false;          // the init must be in them before its setup
};

CgroupPlacement placement_of(const RunCgroup& cgroup) {
    CgroupPlacement p;
    for (const auto& dir : cgroup.paths()) {
        if (!p.v2_dir.valid() && is_cgroup2(dir)) {
            p.v2_dir.reset(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
            if (!p.v2_dir.valid()) throw SysError("open", dir, errno);
        } else {
            p.v1_dirs.push_back(dir);
        }
    }
    p.v1_limits_setup = cgroup.v1_limits_setup();
    return p;
}

void join_v1_cgroups(const std::vector<std::string>& dirs, pid_t pid) {
    std::string text = std::to_string(pid);
    for (const auto& dir : dirs) {
        std::string path = dir + "/cgroup.procs";
        Fd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
        if (!fd.valid()) throw SysError("open", path, errno);
        write_all_checked(fd.get(), text.data(), text.size(), path);
    }
}

}  // namespace

std::string_view step_name(SetupStep step) {
    switch (step) {
        case SetupStep::set_parent_death_signal: return "set_parent_death_signal";
        case SetupStep::exempt_from_oom_killer: return "exempt_from_oom_killer";
        case SetupStep::wait_for_supervisor: return "wait_for_supervisor";
        case SetupStep::join_run_cgroup: return "join_run_cgroup";
        case SetupStep::verify_uid_unused: return "verify_uid_unused";
        case SetupStep::join_cgroup_namespace: return "join_cgroup_namespace";
        case SetupStep::apply_mount_plan: return "apply_mount_plan";
        case SetupStep::enter_rootfs: return "enter_rootfs";
        case SetupStep::bring_up_loopback: return "bring_up_loopback";
        case SetupStep::verify_only_loopback: return "verify_only_loopback";
        case SetupStep::set_hostname: return "set_hostname";
        case SetupStep::spawn_invocation: return "spawn_invocation";
        case SetupStep::mount_invocation_proc: return "mount_invocation_proc";
        case SetupStep::start_new_session: return "start_new_session";
        case SetupStep::redirect_stdio: return "redirect_stdio";
        case SetupStep::close_inherited_fds: return "close_inherited_fds";
        case SetupStep::disable_core_dumps: return "disable_core_dumps";
        case SetupStep::cap_task_count: return "cap_task_count";
        case SetupStep::cap_open_files: return "cap_open_files";
        case SetupStep::make_oom_killable: return "make_oom_killable";
        case SetupStep::drop_bounding_set: return "drop_bounding_set";
        case SetupStep::clear_groups: return "clear_groups";
        case SetupStep::set_gid: return "set_gid";
        case SetupStep::set_uid: return "set_uid";
        case SetupStep::clear_capabilities: return "clear_capabilities";
        case SetupStep::enter_workspace: return "enter_workspace";
        case SetupStep::set_no_new_privs: return "set_no_new_privs";
        case SetupStep::install_seccomp: return "install_seccomp";
        case SetupStep::exec_command: return "exec_command";
    }
    return "unknown_step";
}

std::vector<std::string> command_environment(const SandboxSpec& spec) {
    const std::string& agent = spec.rootfs.agent_name;
    std::vector<std::pair<std::string, std::string>> env = {
        {"PATH", kSandboxPath}, {"HOME", "/home/" + agent}, {"USER", agent},
        {"LOGNAME", agent},     {"LANG", "C.UTF-8"},        {"TERM", "dumb"},
    };
    for (const auto& [k, v] : spec.env) {
        bool replaced = false;
        for (auto& e : env)
            if (e.first == k) {
                e.second = v;
                replaced = true;
            }
        if (!replaced) env.emplace_back(k, v);
    }
    std::vector<std::string> out;
    for (const auto& [k, v] : env) out.push_back(k + "=" + v);
    return out;
}

std::string make_run_id() {
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    unsigned char rnd[3];
    if (getrandom(rnd, sizeof rnd, 0) != static_cast<ssize_t>(sizeof rnd)) throw SysError("getrandom", errno);
    char id[48];
    std::snprintf(id, sizeof id, "%s-%02x%02x%02x", stamp, rnd[0], rnd[1], rnd[2]);
    return id;
}

Fd Sandbox::open_network_namespace() const {
    std::string path = "/proc/" + std::to_string(init_pid_) + "/ns/net";
    Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) throw SysError("open", path, errno);
    // The pid could have been reused between the init's death and the open:
    // the pidfd still being alive proves the number still names our init.
    if (pidfd_send_signal(pidfd_.get(), 0) != 0) throw SysError("pidfd_send_signal", "sandbox init (0)", errno);
    return fd;
}

Sandbox::~Sandbox() {
    if (torn_down_ || !pidfd_.valid()) return;
    pidfd_send_signal(pidfd_.get(), SIGKILL);
    if (!reaped_) {
        siginfo_t info{};
        waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd_.get()), &info, WEXITED);
    }
    try {
        rootfs::remove_scratch(spec_.rootfs.scratch_dir);
    } catch (const std::exception& e) {
        log::warn(std::string("removing scratch after a failed launch: ") + e.what());
    }
}

namespace {

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

}  // namespace

namespace {
// Why NSS (files, systemd, LDAP, ...) says the UID is taken, "" if it is free.
// A lookup that fails (an unreachable directory server, a broken entry)
// counts as "in use": the UID is skipped rather than assumed free.
std::string user_database_claim(uid_t uid) {
    struct passwd pw {};
    struct passwd* result = nullptr;
    std::vector<char> buf(4096);
    int rc;
    while ((rc = ::getpwuid_r(uid, &pw, buf.data(), buf.size(), &result)) == ERANGE && buf.size() < (1u << 20))
        buf.resize(buf.size() * 2);
    if (rc != 0) return std::string("could not be checked in the user database: ") + std::strerror(rc);
    if (result != nullptr)
        return std::string("exists in the user database as ") +
               (pw.pw_name != nullptr && pw.pw_name[0] != '\0' ? pw.pw_name : "(unnamed)");
    // The run's GID has the UID's number: a group of that number (sudo,
    // kmem, staff in a range set too low) would give the box its rights.
    struct group gr {};
    struct group* gresult = nullptr;
    while ((rc = ::getgrgid_r(static_cast<gid_t>(uid), &gr, buf.data(), buf.size(), &gresult)) == ERANGE &&
           buf.size() < (1u << 20))
        buf.resize(buf.size() * 2);
    if (rc != 0) return std::string("could not be checked in the group database: ") + std::strerror(rc);
    if (gresult != nullptr)
        return std::string("exists in the group database (as the run's GID) as ") +
               (gr.gr_name != nullptr && gr.gr_name[0] != '\0' ? gr.gr_name : "(unnamed)");
    return {};
}
}  // namespace

struct SandboxLauncher {
    static Sandbox launch_once(SandboxSpec spec, const std::set<uid_t>& skip_uids,
                               const WhileInitBuilds& while_init_builds, UidLease* previous_attempt);
};

Sandbox SandboxLauncher::launch_once(SandboxSpec spec, const std::set<uid_t>& skip_uids,
                                     const WhileInitBuilds& while_init_builds, UidLease* previous_attempt) {

    // Phase timings at debug level (CORRAL_LOG=debug): startup cost is a feature.
    auto t = std::chrono::steady_clock::now();
    auto lap = [&t](const char* what) {
        if (log::level() > log::Level::debug) return;
        auto now = std::chrono::steady_clock::now();
        log::debug(std::string("timing: ") + what + " " +
                   std::to_string(std::chrono::duration<double, std::milli>(now - t).count()) + "ms");
        t = now;
    };
    // What the box may get as stdin and the host-derived limits: checked
    // before anything is built, so a refusal leaves nothing to undo.
    StdinHandover stdin_handover;
    if (spec.pass_stdin) stdin_handover = hand_over_stdin(0);
    // The box holds a terminal of the host: no TIOCSCTTY on it.
    if (stdin_handover.terminal)
        for (auto& rule : inherited_terminal_rules()) spec.seccomp_rules.push_back(std::move(rule));
    const HostBudget budget = read_host_budget();
    const std::uint64_t task_limit = spec.limits.pids.value_or(default_task_limit(budget));
    const std::uint64_t open_files = spec.open_files.value_or(default_open_files(budget, task_limit));
    check_open_file_budget(budget, task_limit, open_files);
    if (!spec.limits.memory_bytes) spec.limits.socket_memory_bytes = default_socket_memory(budget);
    lap("hand_over_stdin, read_host_budget");

    UidLease lease = acquire_uid(spec.uid_range, spec.lock_dir, skip_uids);
    lease.record_run_id(spec.run_id);
    if (previous_attempt != nullptr) previous_attempt->release();  // the id is held by this lease now
    lap("acquire_uid");
    RunCgroup cgroup = RunCgroup::create(spec.run_id, spec.limits);
    lap("RunCgroup::create");

    spec.rootfs.scratch_dir = spec.scratch_root + "/" + spec.run_id;
    spec.rootfs.agent_uid = lease.uid();
    spec.rootfs.agent_gid = lease.gid();
    spec.rootfs.hostname = spec.hostname;
    rootfs::MountPlan plan = rootfs::plan_rootfs(spec.rootfs);
    rootfs::MountPlan proc_plan = rootfs::take_proc_mounts(plan);
    lap("plan_rootfs");
    // The workspace's ID-mapped bind, made here where a refusal can still be
    // reported plainly; the init only attaches it. Kept open until "ready".
    rootfs::PreparedTrees trees = rootfs::prepare_idmapped_trees(plan);
    for (const auto& f : trees.fallbacks) log::warn(f);
    lap("prepare_idmapped_trees");
    // Not on a helper thread: starting the process's first thread cost more
    // (~0.45 ms measured) than the compile itself (~0.2 ms).
    SeccompProgram seccomp = compile_seccomp(spec.seccomp_rules);
    lap("compile_seccomp");

    std::vector<std::string> argv_s = spec.argv;
    std::vector<std::string> env_s = command_environment(spec);
    std::vector<std::string> cand_s = exec_candidates(spec.argv.front(), env_s);
    std::vector<char*> argv = c_strings(argv_s);
    std::vector<char*> envp = c_strings(env_s);
    std::vector<char*> cands = c_strings(cand_s);

    auto [report_r, report_w] = make_pipe();
    auto [control_r, control_w] = make_pipe();
    auto [out_r, out_w] = make_pipe();
    auto [err_r, err_w] = make_pipe();

    InitContext ctx{};
    ctx.plan = &plan;
    ctx.proc_plan = &proc_plan;
    ctx.hostname = spec.hostname.c_str();
    ctx.uid = lease.uid();
    ctx.gid = lease.gid();
    ctx.cwd = spec.cwd.c_str();
    ctx.argv = argv.data();
    ctx.envp = envp.data();
    ctx.exec_candidates = cands.data();
    ctx.seccomp = &seccomp;
    ctx.report_fd = report_w.get();
    ctx.control_fd = control_r.get();
    ctx.stdout_fd = out_w.get();
    ctx.stderr_fd = err_w.get();
    ctx.stdin_fd = stdin_handover.fd.valid() ? stdin_handover.fd.get() : -1;
    // The UID is this run's alone, so its task count is the run's: a bound
    // even without --pids (whose cgroup limit also covers the init and reaper).
    ctx.task_limit = task_limit;
    ctx.open_file_limit = open_files;
    ctx.command_oom_score_adj = kCommandOomScoreAdj;
    std::tie(ctx.cmdline_start, ctx.cmdline_len) = own_command_line_area();

    // A clone of a multi-threaded process may inherit a lock (malloc, stdio)
    // held by a thread that does not exist in the child.
    if (std::size_t threads = count_threads(); threads != 1)
        throw SysError("launch_sandbox", "called with " + std::to_string(threads) + " threads; must be single-threaded",
                       EDEADLK);

    CgroupPlacement placement = placement_of(cgroup);
    // Without v1 cgroups to join the init needs no "go" and starts its setup
    // at once, in parallel with the supervisor (one pipe round trip less).
    ctx.wait_for_go = placement.v1_dirs.empty() ? InitContext::Go::none
                      : placement.v1_limits_setup ? InitContext::Go::before_setup
                                                  : InitContext::Go::before_invocation;
    int pidfd = -1;
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
    lap("clone3");

    Sandbox box(std::move(spec), std::move(lease), std::move(cgroup));
    box.plan_ = std::move(plan);
    box.idmapped_binds_ = std::move(trees.idmapped);
    box.unmapped_binds_ = std::move(trees.fallbacks);
    box.proc_plan_ = std::move(proc_plan);
    box.init_pid_ = static_cast<pid_t>(pid);
    box.pidfd_.reset(pidfd);
    box.terminal_ = stdin_handover.saved;
    stdin_handover.fd.reset();  // the init has its copy
    report_w.reset();
    control_r.reset();
    out_w.reset();
    err_w.reset();
    box.report_ = std::move(report_r);
    box.control_ = std::move(control_w);
    box.stdout_ = std::move(out_r);
    box.stderr_ = std::move(err_r);

    try {
        // Pin the PID namespace's identity now: teardown checks it is empty.
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
        auto join_and_go = [&box, &placement] {
            try {
                join_v1_cgroups(placement.v1_dirs, box.init_pid_);  // v2: already there (CLONE_INTO_CGROUP)
            } catch (const std::exception& e) {
                throw SandboxSetupError(SetupStep::join_run_cgroup, EIO,
                                        std::string("setup step join_run_cgroup failed: ") + e.what());
            }
            send_byte(box.control_, "sandbox control pipe (go)");
        };
        if (ctx.wait_for_go == InitContext::Go::before_setup) {
            join_and_go();
            lap("join_run_cgroup");
        }
        // Only socket buffers (or tracking) on v1: the init builds the rootfs
        // meanwhile and waits before it spawns the invocation, so the join's
        // RCU grace period (~10-20 ms here) runs beside the rest of the setup.
        std::exception_ptr join_error;
        std::thread late_join;
        if (ctx.wait_for_go == InitContext::Go::before_invocation)
            late_join = start_beside([&] {
                try {
                    join_and_go();
                } catch (...) {
                    join_error = std::current_exception();
                }
            });
        struct JoinOnExit {
            std::thread& t;
            ~JoinOnExit() {
                if (t.joinable()) t.join();
            }
        } join_on_exit{late_join};

        // While the init builds the rootfs (on the other CPU), the
        // supervisor's own setup work, off the critical path. The UID's /proc
        // pass runs on a helper thread beside the other two.
        const uid_t uid = box.lease_.uid();
        const gid_t gid = box.lease_.gid();
        std::vector<pid_t> owners;
        std::exception_ptr scan_error;
        std::thread owner_scan = start_beside([&] {
            try {
                owners = processes_of_identity(uid, gid, KernelThreads::skip);
            } catch (...) {
                scan_error = std::current_exception();
            }
        });
        // remove_stale_runs: what killed supervisors left. Only with the
        // host-wide lock dir: with a private one every other run would look
        // stale (stale_cleanup.hpp).
        bool removed_stale = false;
        try {
            if (box.spec_.lock_dir == kDefaultUidLockDir && box.spec_.scratch_root == kDefaultScratchRoot) {
                for (const auto& line : remove_stale_runs(box.spec_.lock_dir, box.spec_.scratch_root)) {
                    log::info("stale cleanup: " + line);
                    removed_stale = true;
                }
                lap("remove_stale_runs");
            }
        } catch (...) {
            if (owner_scan.joinable()) owner_scan.join();
            throw;
        }
        // verify_uid_unused: the UID must be this run's alone. Nothing of the
        // box has run as it yet (the init and the invocation are root until
        // the command's identity drop, after "start").
        std::string user = user_database_claim(uid);
        if (owner_scan.joinable()) owner_scan.join();
        if (scan_error) std::rethrow_exception(scan_error);
        // Survivors of a dead run that had this UID were just killed by the
        // stale cleanup, possibly after the pass saw them: look again.
        if (!owners.empty() && removed_stale) owners = processes_of_identity(uid, gid);
        if (!user.empty())
            throw UidInUse(uid, std::make_shared<UidLease>(std::move(box.lease_)),
                           "setup step verify_uid_unused failed: uid " + std::to_string(uid) +
                               " " + user);
        if (!owners.empty()) {
            std::string pids;
            for (pid_t p : owners) pids += (pids.empty() ? "" : " ") + std::to_string(p);
            throw UidInUse(uid, std::make_shared<UidLease>(std::move(box.lease_)),
                           "setup step verify_uid_unused failed: uid " + std::to_string(uid) +
                               " is used by processes outside corral (pids " + pids + ")");
        }
        lap("verify_uid_unused");
        if (while_init_builds) {
            while_init_builds(box);
            lap("while_init_builds");
        }

        if (ctx.wait_for_go == InitContext::Go::before_invocation) {
            if (late_join.joinable()) late_join.join();
            if (join_error) std::rethrow_exception(join_error);
            lap("join_run_cgroup (beside the init's setup)");
        }

        InitMessage msg{};
        if (!read_message(box.report_.get(), msg))
            throw SandboxSetupError(SetupStep::wait_for_supervisor, EPIPE,
                                    "setup step wait_for_supervisor failed: the sandbox init exited without a report");
        if (msg.kind == InitMessageKind::setup_failed) throw setup_error(msg, box.plan_, box.proc_plan_);
        if (msg.kind != InitMessageKind::ready)
            throw SandboxSetupError(SetupStep::wait_for_supervisor, EPROTO,
                                    "setup step wait_for_supervisor failed: unexpected message from the sandbox init");
        lap("init ready (mounts, pivot_root, lo, hostname)");
        // The init has attached the ID-mapped trees; their fds close with
        // `trees` when this returns: no stale numbers stay in the plan.
        for (auto& op : box.plan_.ops) op.tree_fd = -1;
    } catch (SandboxSetupError& e) {
        e.attach_teardown(teardown(box));
        throw;
    } catch (const std::exception& e) {
        SandboxSetupError wrapped(SetupStep::wait_for_supervisor, EIO, std::string("setting up the sandbox: ") + e.what());
        wrapped.attach_teardown(teardown(box));
        throw wrapped;
    }
    return box;
}

Sandbox launch_sandbox(SandboxSpec spec, const WhileInitBuilds& while_init_builds) {
    if (spec.argv.empty()) throw UsageError("missing command");
    check_hostname(spec.hostname);
    // A UID owned by a foreign process is skipped (as a leased one is), with
    // a warning: an operator should take it out of the range.
    std::set<uid_t> skip;
    std::shared_ptr<UidLease> previous;  // released by the next attempt, or here on the way out
    for (;;) {
        try {
            return SandboxLauncher::launch_once(spec, skip, while_init_builds, previous.get());
        } catch (const UidInUse& e) {
            if (!e.teardown() || !e.teardown()->clean()) throw;
            log::warn(std::string(e.what()) + "; skipping it (take it out of --uid-range)");
            skip.insert(e.uid());
            previous = e.lease();
            // The teardown's /proc scanner thread was joined, but the kernel
            // lists an exited thread in /proc/self/task for a moment longer;
            // the next clone3 requires a single thread.
            for (int i = 0; i < 1000 && count_threads() != 1; ++i) std::this_thread::sleep_for(100us);
        }
    }
}

void start_command(Sandbox& box) {
    send_byte(box.control_, "sandbox control pipe (start)");
    box.control_.reset();
    box.started_ = true;
}

SuperviseResult supervise(Sandbox& box, const OutputSinks& sinks) {
    SuperviseResult result;
    const SandboxSpec& spec = box.spec_;
    auto open_log = [&](const char* name) {
        std::string path = spec.run_dir + "/" + name;
        Fd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
        if (!fd.valid()) throw SysError("open", path, errno);
        return fd;
    };
    if (spec.stdout_log_name.empty() || spec.stdout_log_name.find('/') != std::string::npos ||
        spec.stdout_log_name == "stderr.log" || spec.stdout_log_name == "run.json")
        throw UsageError("stdout log name \"" + spec.stdout_log_name + "\": expected a plain file name in the run dir");
    Fd out_log = open_log(spec.stdout_log_name.c_str());
    Fd err_log = open_log("stderr.log");

    using clock = std::chrono::steady_clock;
    std::optional<clock::time_point> deadline;
    if (spec.timeout) deadline = clock::now() + *spec.timeout;
    std::optional<clock::time_point> drain_until;   // set once the init has exited
    bool init_exited = false;

    LogCap out_cap{spec.log_limit_bytes};
    LogCap err_cap{spec.log_limit_bytes};
    char buf[65536];
    while (box.stdout_.valid() || box.stderr_.valid() || box.report_.valid() || !init_exited) {
        pollfd pfds[5];
        int n = 0;
        int idx_out = -1, idx_err = -1, idx_rep = -1, idx_pid = -1, idx_sig = -1;
        if (sinks.interrupt_fd >= 0 && !result.interrupted_by && !init_exited) {
            idx_sig = n;
            pfds[n++] = {sinks.interrupt_fd, POLLIN, 0};
        }
        if (box.stdout_.valid()) { idx_out = n; pfds[n++] = {box.stdout_.get(), POLLIN, 0}; }
        if (box.stderr_.valid()) { idx_err = n; pfds[n++] = {box.stderr_.get(), POLLIN, 0}; }
        if (box.report_.valid()) { idx_rep = n; pfds[n++] = {box.report_.get(), POLLIN, 0}; }
        if (!init_exited) { idx_pid = n; pfds[n++] = {box.pidfd_.get(), POLLIN, 0}; }

        int timeout_ms = -1;
        auto now = clock::now();
        if (deadline && !result.deadline_hit) {
            if (now >= *deadline) {
                // The deadline covers the whole sandbox: kill its init, the kernel
                // kills every process in the PID namespace with it.
                pidfd_send_signal(box.pidfd_.get(), SIGKILL);
                result.deadline_hit = true;
                continue;
            }
            timeout_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(*deadline - now).count());
        }
        if (drain_until) {
            if (now >= *drain_until) break;  // something holds a pipe open after the init died (D state)
            int left = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(*drain_until - now).count());
            timeout_ms = timeout_ms < 0 ? left : std::min(timeout_ms, left);
        }
        int rc = poll(pfds, static_cast<nfds_t>(n), timeout_ms);
        if (rc < 0) {
            if (errno == EINTR) continue;
            throw SysError("poll", "sandbox output", errno);
        }
        // The log keeps the first spec.log_limit_bytes; the sink gets everything.
        auto pump = [&](int idx, Fd& pipe, int sink, const Fd& log, LogCap& cap, const char* name) {
            if (idx < 0 || (pfds[idx].revents & (POLLIN | POLLHUP | POLLERR)) == 0) return;
            ssize_t got = read(pipe.get(), buf, sizeof buf);
            if (got < 0 && errno == EINTR) return;
            if (got <= 0) {
                pipe.reset();
                return;
            }
            const std::size_t keep = cap.admit(static_cast<std::size_t>(got));
            if (keep > 0) write_all_checked(log.get(), buf, keep, spec.run_dir + "/" + name);
            if (cap.cut_now)
                log::warn(std::string(name) + " reached --log-limit (" + std::to_string(spec.log_limit_bytes) +
                          " bytes); the rest of the command's output is not logged, only streamed");
            if (sink >= 0) write_all(sink, buf, static_cast<std::size_t>(got));
        };
        pump(idx_out, box.stdout_, sinks.stdout_fd, out_log, out_cap, spec.stdout_log_name.c_str());
        pump(idx_err, box.stderr_, sinks.stderr_fd, err_log, err_cap, "stderr.log");
        if (idx_rep >= 0 && (pfds[idx_rep].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
            InitMessage msg{};
            if (!read_message(box.report_.get(), msg)) {
                box.report_.reset();
            } else if (msg.kind == InitMessageKind::command_exited) {
                if (!result.wait_status) result.wait_status = msg.wait_status;  // the reaper's report comes first
            } else if (msg.kind == InitMessageKind::setup_failed) {
                if (msg.step == SetupStep::exec_command && msg.err == ENOENT) {
                    std::string tried = box.spec_.argv.front();
                    if (tried.find('/') == std::string::npos) {
                        std::vector<std::string> env = command_environment(box.spec_);
                        tried += " (searched PATH=" + env_value(env, "PATH") + ")";
                    }
                    result.not_found = tried;
                } else {
                    result.setup_failure = setup_error(msg, box.plan_, box.proc_plan_);
                }
            }
        }
        if (idx_sig >= 0 && (pfds[idx_sig].revents & POLLIN) != 0) {
            signalfd_siginfo si{};
            if (read(sinks.interrupt_fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
                pidfd_send_signal(box.pidfd_.get(), SIGKILL);
                result.interrupted_by = static_cast<int>(si.ssi_signo);
            }
        }
        if (idx_pid >= 0 && (pfds[idx_pid].revents & POLLIN) != 0) {
            init_exited = true;
            drain_until = clock::now() + 2s;
        }
    }
    result.stdout_bytes = out_cap.produced;
    result.stdout_logged = out_cap.logged;
    result.stderr_bytes = err_cap.produced;
    result.stderr_logged = err_cap.logged;
    return result;
}

TeardownReport teardown(Sandbox& box, CgroupUsage* usage_out) {
    TeardownReport report;
    auto t = std::chrono::steady_clock::now();
    auto step = [&](std::string name, bool ok, std::string detail) {
        if (log::level() <= log::Level::debug) {
            auto now = std::chrono::steady_clock::now();
            log::debug("timing: teardown " + name + " " +
                       std::to_string(std::chrono::duration<double, std::milli>(now - t).count()) + "ms");
            t = now;
        }
        if (!ok) report.problems.push_back(name + ": " + detail);
        report.steps.push_back({std::move(name), ok, std::move(detail)});
    };

    // 1. kill_init: SIGKILL through the pidfd (cannot hit a recycled pid).
    if (!box.reaped_) {
        if (pidfd_send_signal(box.pidfd_.get(), SIGKILL) == 0)
            step("kill_init", true, "SIGKILL sent to init (pid " + std::to_string(box.init_pid_) + ")");
        else if (errno == ESRCH)
            step("kill_init", true, "init had already exited");
        else
            step("kill_init", false, "pidfd_send_signal: " + errno_text(errno));

        // 2. reap_init: through the pidfd; the PID namespace dies with its init.
        siginfo_t info{};
        if (waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(box.pidfd_.get()), &info, WEXITED) == 0) {
            box.reaped_ = true;
            std::string how = info.si_code == CLD_EXITED ? "exited " + std::to_string(info.si_status)
                                                         : "killed by signal " + std::to_string(info.si_status);
            step("reap_init", true, "init " + how);
        } else {
            step("reap_init", false, "waitid(P_PIDFD): " + errno_text(errno));
        }
    }
    // Nothing of the box is left to change the caller's terminal again.
    if (box.terminal_) {
        std::string problem = restore_terminal(*box.terminal_);
        if (!problem.empty()) log::warn("restoring the terminal's settings after the run: " + problem);
        box.terminal_.reset();
    }

    // Steps 3-7 are recorded in the documented order, but the host-wide /proc
    // pass (3 and 6) runs on a helper thread while this one checks and removes
    // the cgroups (4, 5) and the scratch directory (7): they do not depend on
    // each other, and the pass is the longest of them.
    // 3. pid_namespace_gone: no process on the host is still in it. The same
    // /proc pass also collects the processes of the run's UID/GID for step 6.
    HostScan scan;
    std::exception_ptr scan_error;
    std::thread scanner = start_beside([&] {
        try {
            for (int i = 0; i < 50; ++i) {
                scan = scan_host(box.pid_ns_inode_, box.lease_.uid(), box.lease_.gid());
                if (scan.in_pid_namespace.empty()) break;
                std::this_thread::sleep_for(10ms);
            }
        } catch (...) {
            scan_error = std::current_exception();
        }
    });

    // 4. cgroup_empty, 5. cgroup_removed (results recorded after step 3's).
    try {
        CgroupUsage usage = box.cgroup_.usage();
        if (usage_out != nullptr) *usage_out = usage;
    } catch (const std::exception& e) {
        log::warn(std::string("reading the run's cgroup usage: ") + e.what());
    }
    // Nothing here may throw past the scanner thread (a joinable std::thread
    // destroyed by an exception terminates the process): a failure becomes
    // the step's verdict.
    bool empty = false;
    std::string cgroup_left;
    std::optional<std::string> cgroup_check_error;
    try {
        for (int i = 0; i < 20 && !(empty = box.cgroup_.empty()); ++i) std::this_thread::sleep_for(10ms);
        if (!empty) {
            box.cgroup_.kill_all();
            cgroup_left = box.cgroup_.empty() ? "now empty" : "STILL NOT EMPTY";
        }
    } catch (const std::exception& e) {
        empty = false;
        cgroup_check_error = e.what();
    }
    std::optional<std::string> cgroup_remove_error;
    std::string cgroup_paths;
    try {
        box.cgroup_.remove();
        for (const auto& p : box.cgroup_.paths()) cgroup_paths += (cgroup_paths.empty() ? "" : " ") + p;
    } catch (const std::exception& e) {
        cgroup_remove_error = e.what();
    }
    // 7. remove_scratch (its mounts lived in the dead mount namespace).
    std::optional<std::string> scratch_error;
    try {
        rootfs::remove_scratch(box.spec_.rootfs.scratch_dir);
    } catch (const std::exception& e) {
        scratch_error = e.what();
    }
    if (scanner.joinable()) scanner.join();

    const std::vector<pid_t>& left = scan.in_pid_namespace;
    auto pid_list = [](const std::vector<pid_t>& pids) {
        std::string s;
        for (pid_t p : pids) s += (s.empty() ? "" : " ") + std::to_string(p);
        return s;
    };
    if (scan_error) {
        std::string what = "scanning /proc failed";
        try {
            std::rethrow_exception(scan_error);
        } catch (const std::exception& e) {
            what += std::string(": ") + e.what();
        }
        step("pid_namespace_gone", false, what);
    } else if (left.empty()) {
        step("pid_namespace_gone", true, "no process left in pid namespace " + std::to_string(box.pid_ns_inode_));
    } else {
        step("pid_namespace_gone", false,
             std::to_string(left.size()) + " processes still in the sandbox's PID namespace: " + pid_list(left));
    }
    if (empty)
        step("cgroup_empty", true, "no process in the run's cgroups");
    else if (cgroup_check_error)
        step("cgroup_empty", false, "the run's cgroups could not be checked: " + *cgroup_check_error);
    else
        step("cgroup_empty", false,
             "processes were left in the run's cgroup after the PID namespace died; killed: " + cgroup_left);
    if (cgroup_remove_error)
        step("cgroup_removed", false, *cgroup_remove_error);
    else
        step("cgroup_removed", true, "removed " + cgroup_paths);

    // 6. uid_sweep: the run's UID is exclusive to it, so any process with it,
    // anywhere on the host, escaped. Taken from the step-3 pass when that pass
    // saw the PID namespace empty and the cgroups were empty: then no process
    // of the run was left to create another.
    bool rescan_identity = scan_error || !left.empty() || !empty;
    std::vector<pid_t> escaped = rescan_identity ? processes_of_identity(box.lease_.uid(), box.lease_.gid())
                                                 : std::move(scan.of_identity);
    if (!box.started_) {
        // The command never started: nothing of this run ever had the UID
        // (the init and the invocation stay root until the command's identity
        // drop), so a process that has it is not ours to kill.
        step("uid_sweep", true,
             "the command never started" +
                 (escaped.empty() ? std::string()
                                  : "; " + std::to_string(escaped.size()) + " processes of uid " +
                                        std::to_string(box.lease_.uid()) + " outside this run left alone: " +
                                        pid_list(escaped)));
    } else if (escaped.empty()) {
        step("uid_sweep", true, "no process of uid " + std::to_string(box.lease_.uid()) + " on the host");
    } else {
        for (pid_t p : escaped) kill_if_identity(p, box.lease_.uid(), box.lease_.gid());
        step("uid_sweep", false,
             std::to_string(escaped.size()) + " processes of uid " + std::to_string(box.lease_.uid()) +
                 " survived teardown (SIGKILLed now): " + pid_list(escaped));
    }

    if (scratch_error)
        step("remove_scratch", false, *scratch_error);
    else
        step("remove_scratch", true, "removed " + box.spec_.rootfs.scratch_dir);

    // 8. release_uid_lease: last, so the UID is not reused while anything of it may remain.
    if (box.lease_.held()) {
        std::string lock = box.lease_.lock_path();
        box.lease_.release();
        step("release_uid_lease", true, "released " + lock);
    } else {
        step("release_uid_lease", true, "the lease went to the next attempt (released once it has recorded the run id)");
    }
    box.torn_down_ = true;
    return report;
}

}  // namespace corral::supervisor
