// supervisor/sandbox.hpp — one sandbox: build it, run one command in it,
// stream its output, tear it down and prove nothing survived.
//
// The lifecycle, for `corral run` and for the agent runner built on it:
//
//   Sandbox box = launch_sandbox(spec);   // lease UID, cgroup, clone3 → init:
//                                         // mounts, pivot_root, lo up, hostname
//   // ── HOOK POINT ── the sandbox exists and lo is up, the command has not
//   // started. The bridge creates its listening sockets in the sandbox's
//   // network namespace here: setns(box.pidfd(), CLONE_NEWNET) on a helper
//   // thread (threads are fine from now on: the clone is done).
//   start_command(box);                   // init spawns the invocation
//   SuperviseResult r = supervise(box, sinks);   // output + deadline
//   TeardownReport t = teardown(box);     // kill, reap, verify, remove
//
// launch_sandbox() must be called while the process is single-threaded (the
// child of a clone from a multi-threaded process can inherit a lock held by
// another thread); it checks this and refuses otherwise.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/fd.hpp"
#include "rootfs/mount_plan.hpp"
#include "supervisor/cgroup.hpp"
#include "supervisor/run_record.hpp"
#include "supervisor/seccomp_policy.hpp"
#include "supervisor/setup_step.hpp"
#include "supervisor/stdin_handover.hpp"
#include "supervisor/terminal.hpp"
#include "supervisor/uid_lease.hpp"

namespace corral::supervisor {

// The PATH the command gets unless --env PATH=... overrides it.
inline constexpr const char* kSandboxPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";

// The box's processes' oom_score_adj: the maximum. When memory runs out, on
// the host or in the run's cgroup, every process of the box is chosen before
// any other (corral's init and reaper: -1000 where root may lower it, else
// the score they inherited); the box cannot lower it (below the process's
// minimum, 0, that needs CAP_SYS_RESOURCE).
inline constexpr int kCommandOomScoreAdj = 1000;

struct SandboxSpec {
    std::string run_id;                        // make_run_id()
    std::string run_dir;                       // exists, 0700 root: stdout.log / stderr.log go here
    std::string scratch_root = "/run/corral/scratch";
    std::string lock_dir = kDefaultUidLockDir;
    // image, workspace, extra_files (e.g. the CA bundle), sizes. launch_sandbox
    // fills scratch_dir, agent_uid/gid and hostname.
    rootfs::RootfsSpec rootfs;
    std::vector<std::string> argv;             // the command; argv[0] is searched in PATH if it has no '/'
    std::vector<std::pair<std::string, std::string>> env;   // added to / overriding the defaults
    // The image's own Env (image:NAME): under the defaults' PATH, LANG and
    // TERM it wins, HOME, USER and LOGNAME stay corral's, and env wins over it.
    std::vector<std::pair<std::string, std::string>> image_env;
    std::string hostname;                      // checked with check_hostname()
    CgroupLimits limits;
    UidRange uid_range = default_uid_range();
    bool pass_stdin = false;                   // else /dev/null; checked by hand_over_stdin (stdin_handover.hpp)
    // --tty: the command's fds 0/1/2 and controlling terminal are a pty of
    // the box's devpts, relayed to the caller's terminal (terminal.hpp);
    // TERM is terminal_type then. Not with pass_stdin.
    bool tty = false;
    std::string terminal_type = "xterm-256color";
    // RLIMIT_NOFILE soft = hard (--nofile); unset: default_open_files()
    // (host_budget.hpp). Without limits.pids, RLIMIT_NPROC is default_task_limit().
    std::optional<std::uint64_t> open_files;
    std::optional<std::chrono::milliseconds> timeout;
    // A stop (the deadline, a signal to corral, `corral stop`) sends the
    // command SIGTERM and kills the box this long after; 0: SIGKILL at once.
    std::chrono::milliseconds stop_grace{std::chrono::seconds(10)};
    // The command's stdout log in run_dir: an agent run names it stdout.jsonl
    // (the CLI's JSON lines), so its output is kept once, not twice.
    std::string stdout_log_name = "stdout.log";
    // The stdout log and stderr.log each keep at most this many bytes (--log-limit).
    std::uint64_t log_limit_bytes = UINT64_MAX;
    std::string cwd = "/workspace";
    std::vector<SeccompRule> seccomp_rules = sandbox_seccomp_rules();
    // A second filter on every command of the box, after corral's (an OCI
    // bundle's linux.seccomp, oci/runtime/seccomp_profile.hpp): it can only
    // deny more. Compiled with corral's, before the clone.
    std::optional<SeccompFilter> stacked_seccomp;
    // A session (session.hpp): the init starts no command of its own (argv
    // may be empty) but one invocation per exec request, and the sandbox
    // leases two more UIDs, for the service and verifier roles.
    bool session = false;
    // Transparent capture (docs/capture.md): the init adds `local` routes on
    // lo for the synthetic ranges (add_capture_routes), which the root side's
    // DNS stub hands out and its captured listeners accept on.
    bool capture = false;
};

// The environment the command starts with: PATH, HOME=/home/<agent>,
// USER and LOGNAME=<agent>, LANG=C.UTF-8, TERM=dumb (with spec.tty:
// spec.terminal_type), then spec.image_env (except HOME, USER, LOGNAME), then
// spec.env (later wins).
std::vector<std::string> command_environment(const SandboxSpec& spec);

// A setup step failed (in the parent or reported by the child). what() is
// "setup step enter_rootfs failed: pivot_root: Invalid argument".
// When launch_sandbox() fails after the clone, it tears the half-built sandbox
// down (same verified sequence as teardown()) and attaches the report.
class SandboxSetupError : public std::runtime_error {
public:
    SandboxSetupError(SetupStep step, int err, const std::string& message)
        : std::runtime_error(message), step_(step), errno_(err) {}
    SetupStep step() const { return step_; }
    int error() const { return errno_; }
    const std::shared_ptr<const TeardownReport>& teardown() const { return teardown_; }
    void attach_teardown(TeardownReport report) { teardown_ = std::make_shared<const TeardownReport>(std::move(report)); }

private:
    SetupStep step_;
    int errno_;
    std::shared_ptr<const TeardownReport> teardown_;
};

// Where the command's output goes besides the run dir's logs.
struct OutputSinks {
    int stdout_fd = 1;   // -1: don't forward
    int stderr_fd = 2;
    // Optional signalfd (SIGINT/SIGTERM/SIGHUP blocked by the caller): a
    // signal to the supervisor stops the sandbox (SIGTERM to the command,
    // SIGKILL after the grace), so that it is still torn down and verified
    // instead of left to the parent-death signal. A second signal during the
    // grace kills at once. A signal queued with a value (`corral stop
    // --grace D`: sigqueue, SI_QUEUE) carries its own grace in milliseconds.
    int interrupt_fd = -1;
    // Optional: a connection whose hang-up (EOF) is a stop with the spec's
    // grace (`corral exec`'s caller went away), and on which a byte SIGINT,
    // SIGTERM or SIGHUP is that signal passed on by the caller: a stop as
    // interrupt_fd's (`corral exec`'s Ctrl-C; interrupted_by says which).
    int hangup_fd = -1;
    // Optional: a non-blocking sink that stays full is given up (as a reader
    // gone) once this is true: a session's stop never waits on a caller that
    // reads nothing.
    const std::atomic<bool>* abandon = nullptr;
    // Optional (--tty): questions for the operator asked at the caller's
    // terminal by the relay (terminal_prompt.hpp: a run's approvals).
    QuestionSource* questions = nullptr;
};

struct SuperviseResult {
    std::optional<int> wait_status;        // the invocation's, as reported by init
    bool deadline_hit = false;
    std::optional<int> interrupted_by;     // signal read from sinks.interrupt_fd
    bool stopped_by_request = false;       // that signal came from `corral stop` (queued with a grace)
    // A stop happened (deadline or signal): the grace it had, and whether the
    // box had to be killed (the command was still running when it ran out).
    std::optional<std::chrono::milliseconds> stop_grace;
    bool stop_killed = false;
    // The signal that cut the grace short (Ctrl-C twice: the second SIGINT
    // killed the box at once), when one did.
    std::optional<int> second_signal;
    std::optional<std::string> not_found;  // the command was not in the rootfs: the path(s) tried
    std::optional<SandboxSetupError> setup_failure;   // an invocation step failed before execve
    std::uint64_t stdout_bytes = 0;        // produced by the command
    std::uint64_t stderr_bytes = 0;
    std::uint64_t stdout_logged = 0;       // kept in the stdout log (at most spec.log_limit_bytes)
    std::uint64_t stderr_logged = 0;
    // The reader of that sink went away (EPIPE): the box's pipe was closed so
    // the command gets EPIPE/SIGPIPE on its next write.
    bool stdout_reader_gone = false;
    bool stderr_reader_gone = false;
    bool caller_gone = false;              // sinks.hangup_fd hung up: that was the stop
    // Lines for the user (the log limit reached, the terminal not restored),
    // printed once by the caller with its own prefix.
    std::vector<std::string> notes;
};

class Sandbox {
public:
    Sandbox(Sandbox&&) noexcept = default;
    Sandbox& operator=(Sandbox&&) noexcept = delete;
    Sandbox(const Sandbox&) = delete;
    Sandbox& operator=(const Sandbox&) = delete;
    // If teardown() was not called: SIGKILL the init and reap it (best effort).
    ~Sandbox();

    pid_t init_pid() const { return init_pid_; }
    // The pidfd of the sandbox's init (CLONE_PIDFD): signal it, wait on it, or
    // setns(pidfd, CLONE_NEWNET) into the sandbox's network namespace.
    int pidfd() const { return pidfd_.get(); }
    ino_t pid_namespace_inode() const { return pid_ns_inode_; }
    uid_t uid() const { return lease_.uid(); }
    gid_t gid() const { return lease_.gid(); }
    const std::string& run_id() const { return spec_.run_id; }
    const SandboxSpec& spec() const { return spec_; }
    const RunCgroup& cgroup() const { return cgroup_; }
    // Host directories shown with their owner mapped to the agent (the
    // workspace), and those bound as is because their file system cannot be
    // ID-mapped, with the reason (rootfs/idmapped_tree.hpp). For run.json.
    const std::vector<std::string>& idmapped_binds() const { return idmapped_binds_; }
    const std::vector<std::string>& unmapped_binds() const { return unmapped_binds_; }
    // --review: the workspace's upper layer (a detached tmpfs the init
    // attached), handed to the caller, who reads it once the box is gone.
    Fd take_review_upper() { return std::move(review_upper_); }
    // Opens the sandbox's network namespace (for setns from a helper thread).
    Fd open_network_namespace() const;
    // A session's other identities (session.hpp): the service role's and the
    // verifier's UID (GID of the same number); empty for a run.
    const std::vector<UidLease>& role_leases() const { return role_leases_; }

private:
    // The phases' steps, one file each (sandbox_launch.cpp,
    // sandbox_supervise.cpp, sandbox_teardown.cpp).
    friend struct SandboxLauncher;
    friend class Supervision;
    friend struct SandboxTeardown;
    friend void start_command(Sandbox& box);
    friend struct SessionChannel;
    Sandbox(SandboxSpec spec, UidLease lease, RunCgroup cgroup)
        : spec_(std::move(spec)), lease_(std::move(lease)), cgroup_(std::move(cgroup)) {}

    SandboxSpec spec_;
    UidLease lease_;
    RunCgroup cgroup_;
    rootfs::MountPlan plan_;
    rootfs::MountPlan proc_plan_;   // the invocation's /proc (see sandbox_init.cpp)
    std::vector<std::string> idmapped_binds_;
    std::vector<std::string> unmapped_binds_;
    Fd review_upper_;
    pid_t init_pid_ = -1;
    Fd pidfd_;
    ino_t pid_ns_inode_ = 0;
    Fd report_;     // InitMessages from init and the invocation
    Fd control_;    // one byte: "go" after the cgroup join, one byte: "start the command"
    Fd stdout_;     // read ends of the command's stdout/stderr
    Fd stderr_;
    bool started_ = false;
    bool reaped_ = false;
    bool torn_down_ = false;
    std::optional<int> init_exit_status_;
    std::optional<TerminalState> terminal_;   // the caller's terminal (--stdin on a tty), restored in teardown
    std::unique_ptr<TerminalRelay> tty_;      // --tty: the box's pty master and the caller's raw mode
    // A session: the channel the init takes exec requests on (one request
    // at a time: session_lock_), and the service and verifier leases.
    Fd session_;
    std::unique_ptr<std::mutex> session_lock_;
    std::vector<UidLease> role_leases_;
    std::vector<std::string> notes_;  // the teardown's, for TeardownReport::notes
    std::uint64_t task_limit_ = 0;        // RLIMIT_NPROC and RLIMIT_NOFILE the command got (each exec's too)
    std::uint64_t open_file_limit_ = 0;
};

// Work the caller gives the supervisor while the init builds the rootfs
// (after the clone, before "ready"): the box's namespaces exist, its `lo` may
// still be down, nothing of the box runs yet. It runs on the other CPU than
// the init's setup, so it costs the run's start nothing up to the init's time.
// Throwing tears the sandbox down (a SandboxSetupError carries the report).
using WhileInitBuilds = std::function<void(const Sandbox&)>;

// Where the launch tells the user what they should know as it happens (a
// UID skipped, stale runs cleaned up, a directory bound without ID mapping):
// one line each, which the caller prints with its own prefix ("corral run:",
// "corral session:"). Library code does not log (base/log.hpp). Empty: not told.
using Tell = std::function<void(const std::string&)>;

// Leases a UID (recording the run id), creates the run's cgroup, plans the
// rootfs, clones the init and, while the init builds the rootfs, removes stale
// runs, verifies that no process owns the UID and runs `while_init_builds`;
// then waits until the init reports "ready" (the hook point). Throws
// UsageError (bad input, exhausted UID range, missing controller), SysError (a
// host-side call) or SandboxSetupError (a step in the child). On failure
// everything already created is undone.
Sandbox launch_sandbox(SandboxSpec spec, const WhileInitBuilds& while_init_builds = {}, const Tell& tell = {});

// Lets the init start the command (in a nested PID namespace).
void start_command(Sandbox& box);

// Streams stdout/stderr live to `sinks` and to <run_dir>/stdout.log and
// stderr.log, enforces spec.timeout (SIGKILL to the init through the pidfd),
// and returns when the init has exited and both pipes reached EOF.
SuperviseResult supervise(Sandbox& box, const OutputSinks& sinks = {});

// Teardown in this order, each step recorded: kill_init, reap_init,
// pid_namespace_gone, cgroup_empty, cgroup_removed, uid_sweep, remove_scratch,
// release_uid_lease. usage_out receives the cgroup's peak figures (read before removal).
TeardownReport teardown(Sandbox& box, CgroupUsage* usage_out = nullptr);

// "YYYYmmddTHHMMSSZ-<6 hex>": sortable, unique.
std::string make_run_id();

}  // namespace corral::supervisor
