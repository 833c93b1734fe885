// run/outcome.hpp — what a supervised command's end means: corral's exit
// status and the record's "outcome", one rule for `corral run` and for each
// `corral exec` of a session (docs/architecture.md "Exit status").
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "approval/attested.hpp"
#include "supervisor/outcome.hpp"
#include "supervisor/run_record.hpp"
#include "supervisor/sandbox.hpp"

namespace corral::run {

inline constexpr int kExitUsage = 2;
inline constexpr int kExitDeadline = 124;
inline constexpr int kExitSetup = 125;
inline constexpr int kExitTeardown = 126;
inline constexpr int kExitNotFound = 127;

struct CommandOutcome {
    int status = kExitSetup;
    supervisor::Outcome outcome = supervisor::Outcome::setup_failed;  // exited, killed, deadline, stopped, interrupted, not_found, setup_failed
    std::optional<std::string> message;   // what to tell the operator ("command not found in sandbox: ...")
};

// In this order: a stop by signal (128+N; `corral stop`: "stopped"), the
// deadline (124), a command not found (127), a step before execve (125), the
// command's exit code, its signal (128+N), an OOM kill the cgroup counted
// (137), else 125 "without reporting the command's status".
CommandOutcome command_outcome(const supervisor::SuperviseResult& result, bool oom_killed);

// How a stop went, in the operator's words, for `what` ("sandbox", "CMD")
// that SIGKILL ends: "CMD got SIGTERM and ended within the 10s grace",
// "... was still running after the 10s grace; sandbox killed", or, when a
// second signal cut the grace short, "CMD got SIGTERM; a second SIGINT killed
// the sandbox at once (it did not wait out the 10m grace)".
std::string stop_how(std::chrono::milliseconds grace, bool killed, std::optional<int> second_signal,
                     std::string_view what);

// What the host saw of an ended run, read from its record (docs/approvals.md
// "The attested outcome"): the outcome and exit code, the teardown's
// verdict, the gateway's egress refusals (a daemon's count has the MCP
// endpoint's in it too: the record cannot tell them apart, so it errs
// toward review), the tool calls refused, the approvals that ended without
// one, and any budget exhausted (model or tool calls).
approval::HostEvidence host_evidence(const supervisor::RunRecord& record);

// run.json's and the terminal record's "attested" for an ended run, with
// what its agent reported through report_outcome, if it did.
nlohmann::json attested_record(const supervisor::RunRecord& record,
                               const std::optional<approval::AgentReport>& agent = std::nullopt);

}  // namespace corral::run
