// supervisor/sandbox_teardown.cpp — teardown: kill, reap, verify, remove,
// each step recorded in order (docs/architecture.md, "Teardown sequence").
// Nothing here stops at a failed step: every step runs, and a failure is the
// step's verdict in the report.
#include "supervisor/sandbox.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <exception>
#include <thread>
#include <utility>

#include "base/log.hpp"
#include "base/sys_error.hpp"
#include "supervisor/init_channel.hpp"
#include "supervisor/sweep.hpp"
#include "supervisor/threads.hpp"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace corral::supervisor {

namespace {

using namespace std::chrono_literals;

std::string pid_list(const std::vector<pid_t>& pids) {
    std::string s;
    for (pid_t p : pids) s += (s.empty() ? "" : " ") + std::to_string(p);
    return s;
}

std::string message_of(const std::exception_ptr& error) {
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "unknown error";
    }
}

// The report, with each step's time at debug level (CORRAL_LOG=debug).
class StepLog {
public:
    void record(std::string name, bool ok, std::string detail) {
        if (log::level() <= log::Level::debug) {
            auto now = std::chrono::steady_clock::now();
            log::debug("timing: teardown " + name + " " +
                       std::to_string(std::chrono::duration<double, std::milli>(now - last_).count()) + "ms");
            last_ = now;
        }
        if (!ok) report_.problems.push_back(name + ": " + detail);
        report_.steps.push_back({std::move(name), ok, std::move(detail)});
    }
    TeardownReport take() { return std::move(report_); }

private:
    TeardownReport report_;
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// The run's cgroups: were they empty once the PID namespace died, and are they gone.
struct CgroupOutcome {
    bool empty = false;
    std::string left;                          // after kill_all: "now empty" or "STILL NOT EMPTY"
    std::optional<std::string> check_error;
    std::optional<std::string> remove_error;
    std::string paths;                         // removed
};

}  // namespace

// The steps that reach into the Sandbox being torn down.
struct SandboxTeardown {
    // 1. kill_init and 2. reap_init, through the pidfd (cannot hit a recycled
    // pid); the PID namespace dies with its init.
    static void kill_and_reap_init(Sandbox& box, StepLog& log);
    // Nothing of the box is left to change the caller's terminal again.
    static void restore_callers_terminal(Sandbox& box);
    // 3.'s /proc pass (and 6.'s answer), polled until the PID namespace is
    // empty, up to 0.5 s; run beside steps 4, 5 and 7.
    static HostScan scan_until_pid_namespace_empty(const Sandbox& box);
    // The cgroup's peak figures, read before its removal.
    static void read_usage(Sandbox& box, CgroupUsage* usage_out);
    // 4. cgroup_empty (SIGKILL to what is left) and 5. cgroup_removed.
    static CgroupOutcome empty_and_remove_cgroups(Sandbox& box);
    // 7. remove_scratch: its mounts lived in the dead mount namespace.
    static std::optional<std::string> remove_scratch(const Sandbox& box);
    // 6. uid_sweep: any process with the run's UID, anywhere on the host, escaped.
    static void sweep_uid(Sandbox& box, StepLog& log, HostScan& scan, bool rescan);
    // 8. release_uid_lease, last: the UID is not reused while anything of it may remain.
    static void release_uid_lease(Sandbox& box, StepLog& log);

    static TeardownReport run(Sandbox& box, CgroupUsage* usage_out);
};

void SandboxTeardown::kill_and_reap_init(Sandbox& box, StepLog& log) {
    if (box.reaped_) return;
    if (signal_through_pidfd(box.pidfd_.get(), SIGKILL) == 0)
        log.record("kill_init", true, "SIGKILL sent to init (pid " + std::to_string(box.init_pid_) + ")");
    else if (errno == ESRCH)
        log.record("kill_init", true, "init had already exited");
    else
        log.record("kill_init", false, "pidfd_send_signal: " + errno_text(errno));

    siginfo_t info{};
    if (waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(box.pidfd_.get()), &info, WEXITED) == 0) {
        box.reaped_ = true;
        std::string how = info.si_code == CLD_EXITED ? "exited " + std::to_string(info.si_status)
                                                     : "killed by signal " + std::to_string(info.si_status);
        log.record("reap_init", true, "init " + how);
    } else {
        log.record("reap_init", false, "waitid(P_PIDFD): " + errno_text(errno));
    }
}

void SandboxTeardown::restore_callers_terminal(Sandbox& box) {
    if (box.tty_) {
        std::string problem = box.tty_->restore_caller();
        if (!problem.empty()) box.notes_.push_back("warning: restoring the terminal's settings after the run: " + problem);
        box.tty_.reset();
    }
    if (!box.terminal_) return;
    std::string problem = restore_terminal(*box.terminal_);
    if (!problem.empty()) box.notes_.push_back("warning: restoring the terminal's settings after the run: " + problem);
    box.terminal_.reset();
}

HostScan SandboxTeardown::scan_until_pid_namespace_empty(const Sandbox& box) {
    HostScan scan;
    for (int i = 0; i < 50; ++i) {
        scan = scan_host(box.pid_ns_inode_, box.lease_.uid(), box.lease_.gid());
        if (scan.in_pid_namespace.empty()) break;
        std::this_thread::sleep_for(10ms);
    }
    return scan;
}

void SandboxTeardown::read_usage(Sandbox& box, CgroupUsage* usage_out) {
    try {
        CgroupUsage usage = box.cgroup_.usage();
        if (usage_out != nullptr) *usage_out = usage;
    } catch (const std::exception& e) {
        box.notes_.push_back(std::string("warning: reading the run's cgroup usage: ") + e.what());
    }
}

CgroupOutcome SandboxTeardown::empty_and_remove_cgroups(Sandbox& box) {
    // Nothing here may throw past the scanner thread: a failure becomes the step's verdict.
    CgroupOutcome out;
    try {
        for (int i = 0; i < 20 && !(out.empty = box.cgroup_.empty()); ++i) std::this_thread::sleep_for(10ms);
        if (!out.empty) {
            box.cgroup_.kill_all();
            out.left = box.cgroup_.empty() ? "now empty" : "STILL NOT EMPTY";
        }
    } catch (const std::exception& e) {
        out.empty = false;
        out.check_error = e.what();
    }
    try {
        box.cgroup_.remove();
        for (const auto& p : box.cgroup_.paths()) out.paths += (out.paths.empty() ? "" : " ") + p;
    } catch (const std::exception& e) {
        out.remove_error = e.what();
    }
    return out;
}

std::optional<std::string> SandboxTeardown::remove_scratch(const Sandbox& box) {
    try {
        rootfs::remove_scratch(box.spec_.rootfs.scratch_dir);
    } catch (const std::exception& e) {
        return e.what();
    }
    return std::nullopt;
}

void SandboxTeardown::sweep_uid(Sandbox& box, StepLog& log, HostScan& scan, bool rescan) {
    const uid_t uid = box.lease_.uid();
    std::vector<pid_t> escaped = rescan ? processes_owned_by(uid, box.lease_.gid()) : std::move(scan.owned_by);
    if (!box.started_) {
        // The command never started: nothing of this run ever had the UID
        // (the init and the invocation stay root until the command's identity
        // drop), so a process that has it is not ours to kill.
        log.record("uid_sweep", true,
                   "the command never started" +
                       (escaped.empty() ? std::string()
                                        : "; " + std::to_string(escaped.size()) + " processes of uid " +
                                              std::to_string(uid) + " outside this run left alone: " + pid_list(escaped)));
        return;
    }
    // A session's roles each have a UID of their own: each is swept the
    // same way (the pass above saw only the agent's).
    std::string survivors;
    std::string uids = std::to_string(uid);
    auto sweep = [&](uid_t u, gid_t g, std::vector<pid_t> found) {
        if (found.empty()) return;
        for (pid_t p : found) kill_if_owned_by(p, u, g);
        survivors += (survivors.empty() ? "" : "; ") + std::to_string(found.size()) + " processes of uid " +
                     std::to_string(u) + " survived teardown (SIGKILLed now): " + pid_list(found);
    };
    sweep(uid, box.lease_.gid(), std::move(escaped));
    for (const auto& role : box.role_leases_) {
        uids += ", " + std::to_string(role.uid());
        sweep(role.uid(), role.gid(), processes_owned_by(role.uid(), role.gid()));
    }
    if (survivors.empty())
        log.record("uid_sweep", true,
                   "no process of uid " + uids + " on the host");
    else
        log.record("uid_sweep", false, survivors);
}

void SandboxTeardown::release_uid_lease(Sandbox& box, StepLog& log) {
    if (box.lease_.held()) {
        std::string lock = box.lease_.lock_path();
        box.lease_.release();
        for (auto& role : box.role_leases_)
            if (role.held()) {
                lock += " " + role.lock_path();
                role.release();
            }
        log.record("release_uid_lease", true, "released " + lock);
    } else {
        log.record("release_uid_lease", true,
                   "the lease went to the next attempt (released once it has recorded the run id)");
    }
}

TeardownReport SandboxTeardown::run(Sandbox& box, CgroupUsage* usage_out) {
    StepLog log;
    kill_and_reap_init(box, log);
    restore_callers_terminal(box);

    // Steps 3-7 are recorded in the documented order, but the host-wide /proc
    // pass (3 and 6) runs on a helper thread while this one checks and removes
    // the cgroups (4, 5) and the scratch directory (7): they do not depend on
    // each other, and the pass is the longest of them.
    HostScan scan;
    std::exception_ptr scan_error;
    std::thread scanner = start_beside([&] {
        try {
            scan = scan_until_pid_namespace_empty(box);
        } catch (...) {
            scan_error = std::current_exception();
        }
    });
    // None of these throws (a joinable std::thread destroyed by an exception
    // terminates the process).
    read_usage(box, usage_out);
    const CgroupOutcome cgroups = empty_and_remove_cgroups(box);
    const std::optional<std::string> scratch_error = remove_scratch(box);
    if (scanner.joinable()) scanner.join();

    // 3. pid_namespace_gone: no process on the host is still in it.
    const std::vector<pid_t>& left = scan.in_pid_namespace;
    if (scan_error)
        log.record("pid_namespace_gone", false, "scanning /proc failed: " + message_of(scan_error));
    else if (left.empty())
        log.record("pid_namespace_gone", true, "no process left in pid namespace " + std::to_string(box.pid_ns_inode_));
    else
        log.record("pid_namespace_gone", false,
                   std::to_string(left.size()) + " processes still in the sandbox's PID namespace: " + pid_list(left));
    if (cgroups.empty)
        log.record("cgroup_empty", true, "no process in the run's cgroups");
    else if (cgroups.check_error)
        log.record("cgroup_empty", false, "the run's cgroups could not be checked: " + *cgroups.check_error);
    else
        log.record("cgroup_empty", false,
                   "processes were left in the run's cgroup after the PID namespace died; killed: " + cgroups.left);
    if (cgroups.remove_error)
        log.record("cgroup_removed", false, *cgroups.remove_error);
    else
        log.record("cgroup_removed", true, "removed " + cgroups.paths);
    // Step 3's pass answers step 6 when it saw the PID namespace empty and the
    // cgroups were empty: then no process of the run was left to create another.
    sweep_uid(box, log, scan, scan_error || !left.empty() || !cgroups.empty);
    if (scratch_error)
        log.record("remove_scratch", false, *scratch_error);
    else
        log.record("remove_scratch", true, "removed " + box.spec_.rootfs.scratch_dir);
    release_uid_lease(box, log);
    box.torn_down_ = true;
    TeardownReport report = log.take();
    report.notes = std::exchange(box.notes_, {});
    return report;
}

TeardownReport teardown(Sandbox& box, CgroupUsage* usage_out) { return SandboxTeardown::run(box, usage_out); }

}  // namespace corral::supervisor
