// run/session_server.hpp — a session's supervisor at its hook point: the
// root-only socket `corral exec` connects to, one thread per exec, the roles'
// rules (the agent's processes gone, verified, before a verifier starts), each
// exec's record, and the session's stop.
//
// The socket is RUN_DIR/session.sock: the run dir is root's alone (0700), and
// every peer is checked again with SO_PEERCRED (uid 0 only). docs/sessions.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "journal/shared_journal.hpp"
#include "run/refusal_report.hpp"
#include "supervisor/sandbox.hpp"

namespace corral::run {

struct SessionServerOptions {
    std::string run_dir;
    std::chrono::milliseconds grace{std::chrono::seconds(10)};   // the session's stop, and an exec's default
    std::uint64_t log_limit_bytes = UINT64_MAX;                   // per exec log
    std::optional<std::chrono::milliseconds> timeout;             // the session's life
    std::function<void()> on_ready;                               // the socket listens: tell whoever waits
    // `corral exec --prompt`: the session's agent CLI's command line for a
    // prompt (throws PromptError); empty when the session has no agent, and
    // then `no_agent` says why a prompt is refused.
    std::function<std::vector<std::string>(const std::string& prompt)> prompt_argv;
    std::string no_agent;
    // The session's journal (run/run_journal.hpp): each exec gets an "exec"
    // record before its command starts and an "exec_end" record when it
    // ends (docs/journal.md). An exec whose record cannot be written does
    // not start. Null: no records (tests of the server alone).
    journal::SharedJournal* journal = nullptr;
    // The gateway's refusals as they happen: each non-tty exec's caller is
    // told those of its role while it runs, on its stderr (as `corral run`
    // tells its own). Null: none told.
    RefusalListeners* refusals = nullptr;
    // A reviewed workspace: records an apply made while the session runs
    // (`corral apply --while-running`, the workspace_applied request) in
    // review.json and the journal; "" or why it could not. Null: the
    // session has no reviewed workspace.
    std::function<std::string(const nlohmann::json& applied)> workspace_applied;
};

// RUN_DIR/session.sock.
std::string session_socket_path(const std::string& run_dir);

// Serves execs until a stop: a signal on `interrupt_fd` (`corral session stop`
// or `corral stop`, a SIGTERM queued with the grace in ms; SIGINT, SIGTERM,
// SIGHUP), the session's timeout, or the init's death. Then every live
// invocation gets SIGTERM, the grace runs, and the init is killed (its
// namespace with it) before the exec threads are joined. The result says why
// the session ended in the fields a run's does (interrupted_by, deadline_hit,
// stop_grace, stop_killed).
supervisor::SuperviseResult serve_session(supervisor::Sandbox& box, int interrupt_fd, const SessionServerOptions& options);

}  // namespace corral::run
