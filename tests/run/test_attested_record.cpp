// run/outcome's attested record: what the host saw, read from the run's
// record (exit, teardown, the gateway's egress refusals and approvals, tool
// refusals, budgets), gives the attested outcome of docs/approvals.md.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "run/outcome.hpp"

using namespace corral;
using nlohmann::json;

namespace {

supervisor::RunRecord exited(int code) {
    supervisor::RunRecord r;
    r.outcome = supervisor::Outcome::exited;
    r.exit_code = code;
    r.extra["gateway"] = {{"refusals", 1}, {"egress_refusals", 0},
                          {"approvals", {{"requested", 0}, {"approved", 0}, {"denied", 0}, {"timed_out", 0}, {"cancelled", 0}}},
                          {"model", nullptr}};
    r.extra["tools"] = nullptr;
    return r;
}

std::string outcome_of(const supervisor::RunRecord& r) { return run::attested_record(r)["outcome"]; }

}  // namespace

TEST_CASE("attested record: exit 0 with nothing refused is completed; the MCP endpoint's own refusals do not count") {
    auto r = exited(0);
    CHECK(outcome_of(r) == "completed");
    CHECK(run::attested_record(r)["agent_report"].is_null());
}

TEST_CASE("attested record: a failed command, deadline or teardown is failed whatever else") {
    CHECK(outcome_of(exited(1)) == "failed");
    auto deadline = exited(0);
    deadline.outcome = supervisor::Outcome::deadline;
    deadline.exit_code.reset();
    CHECK(outcome_of(deadline) == "failed");
    auto teardown = exited(0);
    teardown.teardown.problems.push_back("a process survived");
    CHECK(outcome_of(teardown) == "failed");
}

TEST_CASE("attested record: refused egress, refused tool calls, approvals without consent, budgets need review") {
    auto egress = exited(0);
    egress.extra["gateway"]["egress_refusals"] = 2;
    CHECK(outcome_of(egress) == "needs_review");
    auto daemon = exited(0);  // a daemon's count cannot tell the MCP endpoint's apart: it errs toward review
    daemon.extra["gateway"].erase("egress_refusals");
    CHECK(outcome_of(daemon) == "needs_review");
    auto tools = exited(0);
    tools.extra["tools"] = {{"calls", 2}, {"refused", {{"tool_denied", 1}}}};
    CHECK(outcome_of(tools) == "needs_review");
    auto timed_out = exited(0);
    timed_out.extra["gateway"]["approvals"]["timed_out"] = 1;
    auto a = run::attested_record(timed_out);
    CHECK(a["outcome"] == "needs_review");
    CHECK(a["reasons"][0] == "1 approval(s) timed out: no consent given");
    auto budget = exited(0);
    budget.extra["gateway"]["model"] = {{"budget_refusals", 1}};
    CHECK(outcome_of(budget) == "needs_review");
}

TEST_CASE("attested record: the agent's report is kept beside the host's evidence and never turns a failure into a "
          "success") {
    const approval::AgentReport completed{approval::AgentReport::Status::completed, "all done"};
    const approval::AgentReport review{approval::AgentReport::Status::needs_review, "a test is flaky"};
    // A failed command stays failed, whatever the agent says.
    auto failed = run::attested_record(exited(2), completed);
    CHECK(failed["outcome"] == "failed");
    CHECK(failed["agent_report"]["status"] == "completed");
    CHECK(failed["agent_report"]["summary"] == "all done");
    // A clean run the agent asks to have reviewed needs review.
    CHECK(run::attested_record(exited(0), review)["outcome"] == "needs_review");
    CHECK(run::attested_record(exited(0), completed)["outcome"] == "completed");
}
