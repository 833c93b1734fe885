// approval/attested.hpp — a run's attested outcome (issue 30 item 6,
// docs/approvals.md "The attested outcome"): what the host saw decides, and
// what the agent reported (report_outcome) is kept beside it and can only
// make the verdict worse, never better. Pure.
//
//   failed        the command did not end well: a non-zero exit, a signal,
//                 the deadline, a stop, a setup or teardown failure; or the
//                 agent itself reported `failed`
//   needs_review  the command exited 0, but the host saw something a person
//                 should look at (refused egress or tool calls, an approval
//                 that timed out, was denied or cancelled, a budget
//                 exhausted), or the agent reported `needs_review`
//   completed     the command exited 0 and nothing of the above
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace corral::approval {

// What the host knows of a run once it ended.
struct HostEvidence {
    std::string outcome;             // run.json's outcome: exited, killed, deadline, stopped, ...
    std::optional<int> exit_code;    // the command's, when it exited
    bool teardown_failed = false;
    std::uint64_t egress_refusals = 0;
    std::uint64_t tool_refusals = 0;
    std::uint64_t approvals_timed_out = 0, approvals_denied = 0, approvals_cancelled = 0;
    bool budget_exhausted = false;
};

// What the agent said through the report_outcome tool, if it did.
struct AgentReport {
    enum class Status { completed, failed, needs_review };
    Status status = Status::completed;
    std::string summary;
};

// "completed" | "failed" | "needs_review" for a status, nullopt for any other text.
std::optional<AgentReport::Status> parse_report_status(const std::string& text);
const char* report_status_name(AgentReport::Status s);

struct Attested {
    std::string outcome;               // completed | failed | needs_review
    std::vector<std::string> reasons;  // each piece of evidence behind it, in words
};

Attested attest(const HostEvidence& host, const std::optional<AgentReport>& agent);

// run.json's and the terminal record's "attested":
// {"outcome":..,"reasons":[..],"agent_report":{"status":..,"summary":..}|null}.
nlohmann::json attested_json(const Attested& a, const std::optional<AgentReport>& agent);

}  // namespace corral::approval
