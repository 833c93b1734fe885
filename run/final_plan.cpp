// run/final_plan.cpp — see final_plan.hpp.
#include "run/final_plan.hpp"

namespace corral::run {

RunPlan finish_plan(RunPlan plan, const LateFacts& facts) {
    auto& spec = plan.spec;
    if (!facts.session_agent_missing.empty()) {
        plan.no_session_agent = facts.session_agent_missing;
        plan.agent.reset();
        spec.rootfs.home_dir.reset();
    }
    if (facts.agent != nullptr) {
        const agents::AgentProfile& p = facts.agent->profile;
        if (facts.agent->argv) spec.argv = *facts.agent->argv;
        if (p.stdin_null) spec.pass_stdin = false;
        plan.agent_env = p.env;
    }
    spec.rootfs.extra_files.insert(spec.rootfs.extra_files.end(), facts.trust.files.begin(), facts.trust.files.end());
    // corral's variables first so a worker's env cannot silently override
    // them (config refuses reserved names; --env still wins on purpose).
    spec.env = compose_environment(plan, facts.trust.proxy_env);
    return plan;
}

}  // namespace corral::run
