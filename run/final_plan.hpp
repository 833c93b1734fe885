// run/final_plan.hpp — the plan a run's box is built from, made once: the
// resolved plan (run/resolve.hpp) with what the host read after the run's
// egress existed (the trust files, the prepared agent). Nothing writes into
// it afterwards; launch_sandbox gets its spec as it is.
#pragma once

#include <string>

#include "run/agent_run.hpp"
#include "run/resolve.hpp"

namespace corral::run {

// What the resolve phase read from the host once the resolved plan existed.
struct LateFacts {
    const AgentRun* agent = nullptr;  // the prepared agent (prepare_agent_run); null: none
    // A session whose agent's CLI is not in the rootfs: why `corral exec
    // --prompt` is refused in it (the session still runs commands).
    std::string session_agent_missing;
    TrustFiles trust;  // find_trust_files
};

// Pure. The agent's argv, stdin and environment layer, the trust files, and
// the box's environment composed once (compose_environment: the proxy's
// variables, then the worker's, the agent's, --env).
RunPlan finish_plan(RunPlan resolved, const LateFacts& facts);

}  // namespace corral::run
