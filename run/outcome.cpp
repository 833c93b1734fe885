#include "run/outcome.hpp"

#include <signal.h>
#include <sys/wait.h>

namespace corral::run {

using supervisor::Outcome;

CommandOutcome command_outcome(const supervisor::SuperviseResult& result, bool oom_killed) {
    CommandOutcome o;
    std::optional<int> exit_code, signal;
    if (result.wait_status) {
        const int ws = *result.wait_status;
        if (WIFEXITED(ws)) exit_code = WEXITSTATUS(ws);
        if (WIFSIGNALED(ws)) signal = WTERMSIG(ws);
    }
    if (result.interrupted_by) {
        o.status = 128 + *result.interrupted_by;
        o.outcome = result.stopped_by_request ? Outcome::stopped : Outcome::interrupted;
    } else if (result.deadline_hit) {
        o.status = kExitDeadline;
        o.outcome = Outcome::deadline;
    } else if (result.not_found) {
        o.status = kExitNotFound;
        o.outcome = Outcome::not_found;
        o.message = "command not found in sandbox: " + *result.not_found;
    } else if (result.setup_failure) {
        o.status = kExitSetup;
        o.outcome = Outcome::setup_failed;
        o.message = result.setup_failure->what();
    } else if (exit_code) {
        o.status = *exit_code;
        o.outcome = Outcome::exited;
    } else if (signal) {
        o.status = 128 + *signal;
        o.outcome = Outcome::killed;
    } else if (oom_killed) {
        // The kernel's OOM kill took the report with it: the cgroup counted it.
        o.status = 128 + SIGKILL;
        o.outcome = Outcome::killed;
    } else {
        o.status = kExitSetup;
        o.outcome = Outcome::setup_failed;
        o.message = "the sandbox's init exited without reporting the command's status";
    }
    return o;
}

}  // namespace corral::run
