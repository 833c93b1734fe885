// supervisor/outcome.hpp — how a run or an exec ended, as one type.
//
// run.json's "outcome", an exec's answer, the journal's terminal record and
// `corral runs` all spell it from the one table below, and the record's
// "status_from" (who chose corral's exit status) is a column of it, so a new
// way to end is added in one row (docs/run-record.md "outcome").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace corral::supervisor {

enum class Outcome : std::uint8_t {
    exited,           // the command exited; corral's status is its exit code
    killed,           // the command died of a signal (an OOM kill included)
    deadline,         // --timeout reached (124)
    stopped,          // `corral stop` (128+N)
    interrupted,      // a signal to corral itself (128+N)
    not_found,        // the command is not in the box (127)
    setup_failed,     // a step before execve failed (125)
    usage_error,      // refused before the box was built (2)
    teardown_failed,  // the box could not be proven gone (126)
    refused,          // an exec the session refused
    caller_gone,      // an exec whose caller went away
};

struct OutcomeRow {
    Outcome outcome;
    std::string_view name;   // the spelling in run.json, exec answers and the journal
    bool status_is_commands; // "status_from": the command's own status, else corral's
};

inline constexpr std::array<OutcomeRow, 11> kOutcomeTable{{
    {Outcome::exited, "exited", true},
    {Outcome::killed, "killed", true},
    {Outcome::deadline, "deadline", false},
    {Outcome::stopped, "stopped", false},
    {Outcome::interrupted, "interrupted", false},
    {Outcome::not_found, "not_found", false},
    {Outcome::setup_failed, "setup_failed", false},
    {Outcome::usage_error, "usage_error", false},
    {Outcome::teardown_failed, "teardown_failed", false},
    {Outcome::refused, "refused", false},
    {Outcome::caller_gone, "caller_gone", false},
}};

constexpr const OutcomeRow& outcome_row(Outcome o) {
    for (const auto& row : kOutcomeTable)
        if (row.outcome == o) return row;
    return kOutcomeTable[static_cast<std::size_t>(Outcome::setup_failed)];  // unreachable: every value has a row
}

constexpr std::string_view outcome_name(Outcome o) { return outcome_row(o).name; }

// The outcome a spelling names, or nullopt for one the table does not hold
// (a record written by a newer corral, a hand-edited file).
constexpr std::optional<Outcome> parse_outcome(std::string_view name) {
    for (const auto& row : kOutcomeTable)
        if (row.name == name) return row.outcome;
    return std::nullopt;
}

}  // namespace corral::supervisor
