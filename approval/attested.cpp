// approval/attested.cpp — see attested.hpp.
#include "approval/attested.hpp"

namespace corral::approval {

std::optional<AgentReport::Status> parse_report_status(const std::string& text) {
    if (text == "completed") return AgentReport::Status::completed;
    if (text == "failed") return AgentReport::Status::failed;
    if (text == "needs_review") return AgentReport::Status::needs_review;
    return std::nullopt;
}

const char* report_status_name(AgentReport::Status s) {
    switch (s) {
        case AgentReport::Status::completed: return "completed";
        case AgentReport::Status::failed: return "failed";
        case AgentReport::Status::needs_review: return "needs_review";
    }
    return "completed";
}

Attested attest(const HostEvidence& host, const std::optional<AgentReport>& agent) {
    Attested a;
    std::vector<std::string> failed, review;
    if (host.teardown_failed) failed.push_back("the sandbox's teardown failed");
    if (host.outcome != "exited") failed.push_back("the command ended " + (host.outcome.empty() ? "unknown" : host.outcome));
    else if (host.exit_code.value_or(-1) != 0)
        failed.push_back("the command exited " + (host.exit_code ? std::to_string(*host.exit_code) : "without a status"));
    auto count = [&review](std::uint64_t n, const std::string& what) {
        if (n > 0) review.push_back(std::to_string(n) + " " + what);
    };
    count(host.egress_refusals, "egress request(s) refused");
    count(host.tool_refusals, "tool call(s) refused");
    count(host.approvals_timed_out, "approval(s) timed out: no consent given");
    count(host.approvals_denied, "approval(s) denied");
    count(host.approvals_cancelled, "approval(s) cancelled");
    if (host.budget_exhausted) review.push_back("a budget was exhausted");
    if (agent && agent->status == AgentReport::Status::failed) failed.push_back("the agent reported failed");
    if (agent && agent->status == AgentReport::Status::needs_review) review.push_back("the agent asked for review");
    if (!failed.empty()) {
        a.outcome = "failed";
        a.reasons = failed;
        a.reasons.insert(a.reasons.end(), review.begin(), review.end());
    } else if (!review.empty()) {
        a.outcome = "needs_review";
        a.reasons = review;
    } else {
        a.outcome = "completed";
        a.reasons.push_back(agent ? "the command exited 0 and the agent reported completed"
                                  : "the command exited 0; the agent reported nothing");
    }
    return a;
}

nlohmann::json attested_json(const Attested& a, const std::optional<AgentReport>& agent) {
    nlohmann::json report = nullptr;
    if (agent) report = {{"status", report_status_name(agent->status)}, {"summary", agent->summary}};
    return {{"outcome", a.outcome}, {"reasons", a.reasons}, {"agent_report", report}};
}

}  // namespace corral::approval
