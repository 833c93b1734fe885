// supervisor/sandbox.cpp — what a sandbox is, apart from its phases: the
// names of its setup steps, the command's environment, the run id, the
// Sandbox object and the "start" byte. The phases each have their file:
// sandbox_launch.cpp (launch_sandbox), sandbox_supervise.cpp (supervise),
// sandbox_teardown.cpp (teardown).
#include "supervisor/sandbox.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>

#include "base/log.hpp"
#include "base/sys_error.hpp"
#include "supervisor/init_channel.hpp"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace corral::supervisor {

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
        case SetupStep::add_capture_routes: return "add_capture_routes";
        case SetupStep::verify_only_loopback: return "verify_only_loopback";
        case SetupStep::set_hostname: return "set_hostname";
        case SetupStep::open_box_pty: return "open_box_pty";
        case SetupStep::spawn_invocation: return "spawn_invocation";
        case SetupStep::mount_invocation_proc: return "mount_invocation_proc";
        case SetupStep::make_role_homes: return "make_role_homes";
        case SetupStep::start_new_session: return "start_new_session";
        case SetupStep::set_controlling_terminal: return "set_controlling_terminal";
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
        {"LOGNAME", agent},     {"LANG", "C.UTF-8"},        {"TERM", spec.tty ? spec.terminal_type : "dumb"},
    };
    auto set = [&env](const std::string& k, const std::string& v) {
        bool replaced = false;
        for (auto& e : env)
            if (e.first == k) {
                e.second = v;
                replaced = true;
            }
        if (!replaced) env.emplace_back(k, v);
    };
    // The agent's identity is corral's, whatever the image was built for.
    for (const auto& kv : spec.image_env)
        if (kv.first != "HOME" && kv.first != "USER" && kv.first != "LOGNAME") set(kv.first, kv.second);
    for (const auto& kv : spec.env) set(kv.first, kv.second);
    std::vector<std::string> out;
    for (const auto& [k, v] : env) out.push_back(k + "=" + v);
    return out;
}

std::string make_run_id() {
    using namespace std::chrono;
    const auto now = system_clock::now();
    const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
    std::time_t secs = system_clock::to_time_t(now);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
    unsigned char rnd[3];
    if (getrandom(rnd, sizeof rnd, 0) != static_cast<ssize_t>(sizeof rnd)) throw SysError("getrandom", errno);
    char id[48];
    std::snprintf(id, sizeof id, "%s%03dZ-%02x%02x%02x", stamp, static_cast<int>(ms), rnd[0], rnd[1], rnd[2]);
    return id;
}

Fd Sandbox::open_network_namespace() const {
    std::string path = "/proc/" + std::to_string(init_pid_) + "/ns/net";
    Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) throw SysError("open", path, errno);
    // The pid could have been reused between the init's death and the open:
    // the pidfd still being alive proves the number still names our init.
    if (signal_through_pidfd(pidfd_.get(), 0) != 0) throw SysError("pidfd_send_signal", "sandbox init (0)", errno);
    return fd;
}

Sandbox::~Sandbox() {
    if (torn_down_ || !pidfd_.valid()) return;
    signal_through_pidfd(pidfd_.get(), SIGKILL);
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

void start_command(Sandbox& box) {
    // Raw mode from here on: the command's first keystroke is its own.
    if (box.tty_) box.tty_->start();
    send_byte(box.control_, "sandbox control pipe (start)");
    box.control_.reset();
    box.started_ = true;
}

}  // namespace corral::supervisor
