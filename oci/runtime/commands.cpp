// oci/runtime/commands.cpp — each corral-oci command, and the error line
// every one of them ends with when it fails.
#include "oci/runtime/commands.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "base/fd.hpp"
#include "base/parse.hpp"
#include "base/sys_error.hpp"
#include "base/terminal_text.hpp"
#include "oci/cli_args.hpp"
#include "oci/features.hpp"
#include "oci/runtime/container_dir.hpp"
#include "oci/runtime/control.hpp"
#include "oci/runtime/create.hpp"
#include "oci/runtime/exec.hpp"
#include "oci/runtime/list.hpp"
#include "oci/runtime/ps.hpp"
#include "oci/runtime/runtime_log.hpp"
#include "run/run_journal.hpp"
#include "supervisor/stale_cleanup.hpp"

#ifndef CORRAL_VERSION
#define CORRAL_VERSION "unknown"
#endif

namespace corral::oci {

namespace {

int cmd_state(const OciArgs& a) {
    ContainerDir dir = ContainerDir::open(a.global.root, a.id);
    ContainerRecord r = dir.read();
    r.state.status = effective_status(r);
    std::fputs(state_json(r.state).c_str(), stdout);
    return 0;
}

int cmd_start(const OciArgs& a) {
    ContainerDir dir = ContainerDir::open(a.global.root, a.id);
    ContainerRecord r = dir.read();
    const ContainerStatus s = effective_status(r);
    if (s != ContainerStatus::created)
        throw UsageError("container " + a.id + " is " + std::string(to_string(s)) + ": only a created one starts");
    ask_supervisor(dir, ControlRequest{ControlRequest::Kind::start, 0, false});
    return 0;
}

int cmd_kill(const OciArgs& a) {
    const ContainerDir dir = open_live_container(a.global.root, a.id);
    ask_supervisor(dir, ControlRequest{ControlRequest::Kind::kill, a.signal, a.all});
    return 0;
}

// Until the supervisor has exited (its teardown done and recorded), bounded:
// a box's grace and teardown take seconds, not minutes.
bool wait_for_supervisor_exit(const ContainerRecord& r, std::chrono::seconds bound) {
    Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, r.supervisor, 0)));
    if (!pidfd.valid() || process_start_time(r.supervisor) != r.supervisor_start) return true;
    pollfd p{pidfd.get(), POLLIN, 0};
    const auto until = std::chrono::steady_clock::now() + bound;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        int rc = poll(&p, 1, static_cast<int>(left.count()));
        if (rc > 0) return true;
        if (rc < 0 && errno != EINTR) return false;
    }
}

// As runc's: `delete --force` of a container that does not exist succeeds
// (containerd's shim deletes once more when it cleans up).
bool container_missing(const OciArgs& a) {
    try {
        (void)ContainerDir::open(a.global.root, a.id);
        return false;
    } catch (const UsageError&) {
        return check_container_id(a.id) == std::nullopt;
    }
}

// A supervisor killed (SIGKILL, a reboot) before it recorded the teardown:
// the box died with it (its init's parent-death signal), and what it left
// on the host (cgroup, scratch, the UID's lock) is removed here as every
// corral start removes a dead run's (supervisor/stale_cleanup.hpp); its
// journal gets the signed "supervisor lost" record (recover_lost_runs).
// Throws, keeping the record, when something could not be removed.
void recover_lost_container(const OciArgs& a, const ContainerRecord& r) {
    std::vector<std::string> lines = supervisor::remove_stale_runs();
    const std::filesystem::path runs = std::filesystem::path(r.run_dir).parent_path();
    if (runs.filename() == "runs")
        for (auto& line : run::recover_lost_runs(runs.parent_path().string())) lines.push_back(std::move(line));
    std::string failed;
    for (const auto& line : lines) {
        log_warning(a.global, "delete " + a.id + ": lost run " + r.run_id + ": " + line);
        if (line.rfind("failed", 0) == 0) failed += (failed.empty() ? "" : "; ") + line;
    }
    if (!failed.empty())
        throw UsageError("container " + a.id + ": its supervisor was lost and its leftovers could not all be "
                         "removed (" + failed + "); the record is kept");
}

int cmd_delete(const OciArgs& a) {
    if (a.force && container_missing(a)) return 0;
    ContainerDir dir = ContainerDir::open(a.global.root, a.id);
    ContainerRecord r;
    try {
        r = dir.read();
    } catch (const UsageError&) {
        // A create that died before its record: nothing of a box to tear down.
        dir.remove();
        return 0;
    }
    if (effective_status(r) != ContainerStatus::stopped) {
        if (!a.force)
            throw UsageError("container " + a.id + " is " + std::string(to_string(effective_status(r))) +
                             ": stop it first (kill), or delete --force");
        try {
            ask_supervisor(dir, ControlRequest{ControlRequest::Kind::kill, SIGKILL, true});
        } catch (const UsageError&) {
            // The process ended between the read and the ask: the
            // supervisor is tearing the box down, and is waited for below.
        }
    }
    if (!wait_for_supervisor_exit(r, std::chrono::seconds(60)))
        throw UsageError("container " + a.id + ": its supervisor (pid " + std::to_string(r.supervisor) +
                         ") did not end within 60 s of SIGKILL; the record is kept");
    r = dir.read();
    if (!r.exit_status) recover_lost_container(a, r);
    if (!r.teardown_problem.empty())
        throw UsageError("container " + a.id + ": " + r.teardown_problem + "; the record is kept");
    dir.remove();
    return 0;
}

int dispatch(const OciArgs& a) {
    switch (a.command) {
        case OciCommand::help: return std::fputs(oci_help_text().c_str(), stdout), 0;
        case OciCommand::version:
            std::printf("corral-oci version %s\nspec: %s\n", CORRAL_VERSION, std::string(kOciVersion).c_str());
            return 0;
        case OciCommand::features: return std::fputs(features_json(CORRAL_VERSION).c_str(), stdout), 0;
        case OciCommand::create: return cmd_create(a);
        case OciCommand::start: return cmd_start(a);
        case OciCommand::state: return cmd_state(a);
        case OciCommand::kill: return cmd_kill(a);
        case OciCommand::delete_: return cmd_delete(a);
        case OciCommand::pause:
        case OciCommand::resume: throw UsageError(std::string(unsupported_command_reason(a.command)));
        case OciCommand::exec: return cmd_exec(a);
        case OciCommand::ps: return cmd_ps(a);
        case OciCommand::list: return cmd_list(a);
    }
    return 1;
}

}  // namespace

int run_oci_command(int argc, char** argv) {
    OciArgs a;
    try {
        a = parse_oci_args(argc, argv);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "corral-oci: %s\n", terminal_text(e.what()).c_str());
        return 2;
    }
    if (a.help) return std::fputs(oci_command_help(a.command).c_str(), stdout), 0;
    try {
        if (geteuid() != 0 && a.command != OciCommand::help && a.command != OciCommand::version &&
            a.command != OciCommand::features)
            throw UsageError("must run as root (it builds namespaces and cgroups)");
        return dispatch(a);
    } catch (const std::exception& e) {
        log_error(a.global, std::string(to_string(a.command)) + ": " + e.what());
        return 1;
    }
}

}  // namespace corral::oci
