// oci/runtime/create.cpp — create's two processes: the command, which
// waits until the box is ready, and the supervisor it forks.
#include "oci/runtime/create.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/atomic_file.hpp"
#include "base/fd.hpp"
#include "base/parse.hpp"
#include "base/sys_error.hpp"
#include "oci/bundle_config.hpp"
#include "oci/runtime/bundle_request.hpp"
#include "oci/runtime/container_body.hpp"
#include "oci/runtime/container_dir.hpp"
#include "oci/runtime/runtime_log.hpp"
#include "run/outcome.hpp"
#include "supervisor/host_budget.hpp"
#include "supervisor/hostname.hpp"
#include "supervisor/run_record.hpp"
#include "supervisor/uid_lease.hpp"

namespace corral::oci {

namespace {

// The bundle's directory made absolute and normalised, and its config read
// and mapped; throws UsageError naming the bundle or the field.
BundleConfig read_bundle(const std::string& bundle_arg, std::string& bundle_dir) {
    std::error_code ec;
    std::filesystem::path p = std::filesystem::absolute(bundle_arg, ec);
    if (ec) throw UsageError("--bundle " + bundle_arg + ": " + ec.message());
    bundle_dir = p.lexically_normal().string();
    if (bundle_dir.size() > 1 && bundle_dir.back() == '/') bundle_dir.pop_back();
    auto text = read_whole_file({bundle_dir + "/config.json", kMaxConfigBytes});
    if (!text) throw UsageError("--bundle " + bundle_dir + ": no config.json");
    return read_bundle_config(bundle_dir, *text);
}

// The supervisor's fds: 0 /dev/null; the engine's stdout and stderr kept
// (as 3 and 4: the container's output goes there); 1 and 2 to create's
// error pipe until the box is ready; the ready pipe; nothing else of the
// caller's (an engine waiting for EOF on a pipe of its own would hang).
struct SupervisorFds {
    int out = 3, err = 4, ready = 5;
};
bool arrange_supervisor_fds(int ready_write, int err_write) {
    // Above every fd we move, then down into place.
    int hi_out = fcntl(1, F_DUPFD_CLOEXEC, 10), hi_err = fcntl(2, F_DUPFD_CLOEXEC, 10);
    int hi_ready = fcntl(ready_write, F_DUPFD_CLOEXEC, 10), hi_errp = fcntl(err_write, F_DUPFD_CLOEXEC, 10);
    if (hi_out < 0 || hi_err < 0 || hi_ready < 0 || hi_errp < 0) return false;
    int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(hi_errp, 1) < 0 || dup2(hi_errp, 2) < 0) return false;
    const SupervisorFds f;
    if (dup3(hi_out, f.out, O_CLOEXEC) < 0 || dup3(hi_err, f.err, O_CLOEXEC) < 0 ||
        dup3(hi_ready, f.ready, O_CLOEXEC) < 0)
        return false;
    return close_range(6, ~0U, 0) == 0;
}

[[noreturn]] void become_supervisor(BundleRequest& br, ContainerLaunch& launch, int ready_write,
                                    int err_write) {
    setsid();
    if (chdir("/") != 0 || !arrange_supervisor_fds(ready_write, err_write)) _exit(run::kExitSetup);
    const SupervisorFds f;
    launch.out_fd = f.out;
    launch.err_fd = f.err;
    launch.ready = Fd(f.ready);
    launch.record.supervisor = getpid();
    launch.record.state.pid = getpid();
    launch.record.supervisor_start = process_start_time(getpid());
    int status = run::run_as_supervisor(br.request, container_body(launch));
    // Stopped, with the teardown's verdict: delete reads it.
    launch.record.state.status = ContainerStatus::stopped;
    launch.record.exit_status = status;
    if (status == run::kExitTeardown)
        launch.record.teardown_problem =
            "the box's teardown could not be verified (run " + launch.record.run_id + ": " + launch.record.run_dir + "/run.json)";
    try {
        launch.dir.write(launch.record);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "corral-oci: the stopped record: %s\n", e.what());
    }
    std::fflush(nullptr);
    _exit(status);
}

// create's side: the supervisor's lines before the box is ready go to our
// stderr; then "ok" on the ready pipe, or its exit status when it ended.
int wait_until_created(pid_t child, Fd ready, Fd errs, std::string& said) {
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(errs.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        said.append(buf, static_cast<std::size_t>(n));
    }
    std::string ok = read_to_end(ready.get(), "the supervisor's ready pipe", 16);
    if (ok == "ok\n") return 0;
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status) == 0 ? run::kExitSetup : WEXITSTATUS(status);
    return run::kExitSetup;
}

// The engines ask for RLIMIT_NOFILE 1048576 by default, which with the
// box's task limit could fill the host's file table (corral refuses that
// for `corral run --nofile`): such a limit is reduced to corral's default,
// with a note, instead of refusing every container an engine starts.
void fit_open_files(BundleRequest& br) {
    run::RunRequest& r = br.request;
    if (!r.open_files) return;
    const supervisor::HostBudget host = supervisor::read_host_budget();
    const std::uint64_t tasks = r.pids.value_or(supervisor::default_task_limit(host));
    try {
        supervisor::check_open_file_budget(host, tasks, *r.open_files);
    } catch (const UsageError&) {
        const std::uint64_t fitted = supervisor::default_open_files(host, tasks);
        br.notes.push_back({NoteKind::reduced, "process.rlimits",
                            "RLIMIT_NOFILE " + std::to_string(*r.open_files) + " with " + std::to_string(tasks) +
                                " tasks could fill the host's file table: " + std::to_string(fitted)});
        r.open_files = fitted;
    }
}

// A pod spec is not the node operator's: its annotations may choose only an
// organisation directory the node allows (--allow-config), compared after
// normalisation so that "/etc/corral/../x" is not "/etc/corral".
void refuse_unlisted_config(const BundleConfig& config, const std::vector<std::string>& allowed) {
    if (!config.config_dir) return;
    const std::string asked = std::filesystem::path(*config.config_dir).lexically_normal().string();
    for (const auto& dir : allowed)
        if (std::filesystem::path(dir).lexically_normal().string() == asked) return;
    throw UsageError("config.json: annotations." + std::string(kConfigAnnotation) + ": " + asked +
                     " is not allowed on this node (the runtime's --allow-config DIR lists the directories a "
                     "container may choose)");
}

// --default-config and --default-worker: the organisation directory of a
// container whose annotations chose none, and its worker when they chose
// none either. The default worker belongs to the default directory only: a
// container that chose another directory keeps its own choice (or none).
void apply_node_defaults(BundleConfig& config, const GlobalArgs& g) {
    if (g.default_worker && !g.default_config)
        throw UsageError("--default-worker " + *g.default_worker + ": needs --default-config DIR (its organisation directory)");
    if (!g.default_config) return;
    const bool chose_config = config.config_dir.has_value();
    if (!chose_config) config.config_dir = g.default_config;
    if (!config.worker && !chose_config && g.default_worker) config.worker = g.default_worker;
}

}  // namespace

int cmd_create(const OciArgs& a) {
    std::string bundle_dir;
    BundleConfig config = read_bundle(a.bundle, bundle_dir);
    // As runc: a terminal's master needs somewhere to go, and a console
    // socket without a terminal would wait for nothing.
    if (config.process.terminal && !a.console_socket)
        throw UsageError("config.json: process.terminal is true: give --console-socket SOCKET (the engine's "
                         "socket the pty's master is sent to)");
    if (!config.process.terminal && a.console_socket)
        throw UsageError("--console-socket: config.json's process.terminal is false: there is no console to send");
    if (!config.hostname.empty()) supervisor::check_hostname(config.hostname);
    refuse_unlisted_config(config, a.global.allowed_configs);
    apply_node_defaults(config, a.global);
    BundleRequest br = bundle_request(config, a.global.state_dir.value_or(""));
    if (a.global.uid_range) br.request.uid_range = supervisor::parse_uid_range(*a.global.uid_range);
    if (a.global.gateway_socket) br.request.gateway = a.global.gateway_socket;
    fit_open_files(br);
    br.request.oci_container = a.id;
    ContainerLaunch launch{ContainerDir::claim(a.global.root, a.id), {}, Fd(), -1, -1, br.notes,
                           a.console_socket ? std::filesystem::absolute(*a.console_socket).string() : "",
                           br.console_rows, br.console_cols};
    launch.record.state.id = a.id;
    launch.record.state.bundle = bundle_dir;
    launch.record.state.annotations = config.annotations;
    launch.record.created = supervisor::format_rfc3339_ms(std::chrono::system_clock::now());
    int ready_pipe[2], err_pipe[2];
    if (pipe2(ready_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) throw SysError("pipe2", "create", errno);
    std::fflush(nullptr);
    pid_t child = fork();
    if (child < 0) throw SysError("fork", "the container's supervisor", errno);
    if (child == 0) {
        close(ready_pipe[0]);
        close(err_pipe[0]);
        become_supervisor(br, launch, ready_pipe[1], err_pipe[1]);
    }
    close(ready_pipe[1]);
    close(err_pipe[1]);
    std::string said;
    int status = wait_until_created(child, Fd(ready_pipe[0]), Fd(err_pipe[0]), said);
    if (status != 0) {
        launch.dir.remove();
        while (!said.empty() && said.back() == '\n') said.pop_back();
        throw UsageError("the box was not built (corral's status " + std::to_string(status) + ")" +
                         (said.empty() ? std::string() : ": " + said));
    }
    // What the supervisor said on the way (a bind not ID-mapped, stale boxes
    // cleaned up): warnings, in --log (runtime_log.hpp).
    while (!said.empty() && said.back() == '\n') said.pop_back();
    if (!said.empty()) log_warning(a.global, said);
    if (a.pid_file) write_pid_file(*a.pid_file, child);
    return 0;
}

}  // namespace corral::oci
