#include "run/outcome.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <cstring>

#include "base/parse.hpp"

namespace corral::run {

using supervisor::Outcome;

std::string stop_how(std::chrono::milliseconds grace, bool killed, std::optional<int> second_signal,
                     std::string_view what) {
    const std::string dies(what), period = format_duration(grace);
    if (grace.count() == 0) return dies + " killed";
    if (killed && second_signal)
        return "CMD got SIGTERM; a second SIG" + std::string(sigabbrev_np(*second_signal)) + " killed the " + dies +
               " at once, before its " + period + " grace ran out";
    if (killed) return "CMD got SIGTERM and was still running after the " + period + " grace; " + dies + " killed";
    return "CMD got SIGTERM and ended within the " + period + " grace";
}

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

namespace {

std::uint64_t count_at(const nlohmann::json& object, const char* key) {
    if (!object.is_object()) return 0;
    auto it = object.find(key);
    return it != object.end() && it->is_number_integer() && it->get<std::int64_t>() > 0 ? it->get<std::uint64_t>() : 0;
}

}  // namespace

approval::HostEvidence host_evidence(const supervisor::RunRecord& record) {
    approval::HostEvidence h;
    h.outcome = record.outcome ? std::string(supervisor::outcome_name(*record.outcome)) : std::string();
    h.exit_code = record.exit_code;
    h.teardown_failed = !record.teardown.clean();
    const nlohmann::json& gateway = record.extra.value("gateway", nlohmann::json::object());
    h.egress_refusals = gateway.contains("egress_refusals") ? count_at(gateway, "egress_refusals") : count_at(gateway, "refusals");
    const nlohmann::json approvals = gateway.value("approvals", nlohmann::json::object());
    h.approvals_timed_out = count_at(approvals, "timed_out");
    h.approvals_denied = count_at(approvals, "denied");
    h.approvals_cancelled = count_at(approvals, "cancelled");
    const nlohmann::json model = gateway.value("model", nlohmann::json::object());
    const nlohmann::json tools = record.extra.value("tools", nlohmann::json::object());
    const nlohmann::json refused = tools.is_object() ? tools.value("refused", nlohmann::json::object()) : nlohmann::json::object();
    if (refused.is_object())
        for (const auto& [reason, n] : refused.items()) {
            if (n.is_number_integer() && n.get<std::int64_t>() > 0) h.tool_refusals += n.get<std::uint64_t>();
            if (reason == "budget_exhausted") h.budget_exhausted = true;
        }
    if (count_at(model, "budget_refusals") > 0) h.budget_exhausted = true;
    return h;
}

nlohmann::json attested_record(const supervisor::RunRecord& record, const std::optional<approval::AgentReport>& agent) {
    return approval::attested_json(approval::attest(host_evidence(record), agent), agent);
}

}  // namespace corral::run
