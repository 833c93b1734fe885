// tests/approval/test_attested.cpp — the attested outcome's table: each
// combination of host evidence and agent report, and the rule that the
// agent's report never turns a failed run into a success.
#include <doctest/doctest.h>

#include "approval/attested.hpp"

using namespace corral::approval;

namespace {

HostEvidence exited(int code) {
    HostEvidence h;
    h.outcome = "exited";
    h.exit_code = code;
    return h;
}

AgentReport report(AgentReport::Status s) { return AgentReport{s, "summary"}; }

}  // namespace

TEST_CASE("attested outcome: host evidence first, the agent's report can only make it worse") {
    using S = AgentReport::Status;
    struct Row {
        HostEvidence host;
        std::optional<AgentReport> agent;
        const char* outcome;
    };
    HostEvidence refused = exited(0);
    refused.egress_refusals = 2;
    HostEvidence timed_out = exited(0);
    timed_out.approvals_timed_out = 1;
    HostEvidence budget = exited(0);
    budget.budget_exhausted = true;
    HostEvidence deadline;
    deadline.outcome = "deadline";
    HostEvidence teardown = exited(0);
    teardown.teardown_failed = true;
    const Row rows[] = {
        {exited(0), std::nullopt, "completed"},
        {exited(0), report(S::completed), "completed"},
        {exited(0), report(S::needs_review), "needs_review"},
        {exited(0), report(S::failed), "failed"},
        {exited(3), std::nullopt, "failed"},
        {exited(3), report(S::completed), "failed"},      // never rescued by the agent
        {deadline, report(S::completed), "failed"},
        {teardown, report(S::completed), "failed"},
        {refused, report(S::completed), "needs_review"},
        {timed_out, std::nullopt, "needs_review"},
        {budget, report(S::completed), "needs_review"},
        {refused, report(S::failed), "failed"},
    };
    for (const auto& row : rows) {
        Attested a = attest(row.host, row.agent);
        INFO(row.host.outcome, " exit ", row.host.exit_code.value_or(-1), " agent ",
             row.agent ? report_status_name(row.agent->status) : "none");
        CHECK(a.outcome == row.outcome);
        CHECK_FALSE(a.reasons.empty());
    }
}

TEST_CASE("attested outcome: the reasons name the evidence, and the JSON keeps the agent's report beside it") {
    HostEvidence h = exited(0);
    h.tool_refusals = 1;
    h.approvals_timed_out = 2;
    const AgentReport agent{AgentReport::Status::completed, "opened PR 12"};
    Attested a = attest(h, agent);
    CHECK(a.outcome == "needs_review");
    CHECK(a.reasons == std::vector<std::string>{"1 tool call(s) refused", "2 approval(s) timed out: no consent given"});
    auto j = attested_json(a, agent);
    CHECK(j["outcome"] == "needs_review");
    CHECK(j["agent_report"]["status"] == "completed");
    CHECK(j["agent_report"]["summary"] == "opened PR 12");
    CHECK(attested_json(attest(exited(0), std::nullopt), std::nullopt)["agent_report"].is_null());
    CHECK(parse_report_status("needs_review") == AgentReport::Status::needs_review);
    CHECK_FALSE(parse_report_status("done"));
}
