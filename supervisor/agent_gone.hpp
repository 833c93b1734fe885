// supervisor/agent_gone.hpp — what "the agent is gone" means before a
// session's verifier starts: its invocations killed and seen gone, no
// process of its UID anywhere on the host, no socket of its UID in the
// session's network namespace (docs/sessions.md, "Before a verifier starts").
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "base/fd.hpp"

namespace corral::supervisor {

class Sandbox;

// Kills every agent invocation in `invocations` (pidfds of their reapers:
// SIGKILL kills each one's whole PID namespace) and waits up to 10 s for
// each; then a pass over /proc confirms that no process of the agent's UID
// is left on the host (it can have processes nowhere else: no other role
// runs as its UID); then leave_no_socket_of_uid in the box's network
// namespace. Returns exec.json's `agent_stopped` (`invocations_killed`,
// `uid`, `uid_sweep`, `sockets_destroyed`). Throws std::runtime_error naming
// what is left: an invocation alive after 10 s, the PIDs of surviving
// processes, or ("the agent is not gone: ...") each socket of its UID.
nlohmann::json leave_nothing_of_the_agent(const Sandbox& box, std::vector<Fd> invocations);

}  // namespace corral::supervisor
