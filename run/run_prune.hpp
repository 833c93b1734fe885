// run/run_prune.hpp — which ended runs `corral prune` removes, and removing them.
//
// A run's directory keeps its record, logs, journal and the agent's home:
// what an operator reads after the fact. It is never needed by anything else
// (each run's journal is self-contained; the gateway daemon's journal lives in
// STATE_DIR/journal/gateway, not under runs/), so a run may go once it has
// ended and is old enough. Never a run that may still be running or about to
// write its record: only "finished" runs are removed; a "lost" run is left
// until the next `corral run` has ended its journal (run_journal.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "run/run_index.hpp"

namespace corral::run {

// How old a finished run must be, by default, for `corral prune` (docs/operations.md).
inline constexpr std::chrono::hours kDefaultRetention{14 * 24};
// A run refused before its box existed (a mistyped option, a missing
// credential) holds nothing but why: it goes once it is this old, whatever
// the retention.
inline constexpr std::chrono::hours kRefusedRetention{1};

struct PruneRules {
    std::chrono::milliseconds older_than = kDefaultRetention;
    std::set<std::string> outcomes;  // empty: any outcome
};

struct PruneChoice {
    RunEntry entry;
    std::string outcome;
    std::chrono::system_clock::time_point ended_at;
    bool refused_before_box = false;  // no UID was ever leased for it
};

// The finished runs of `runs` (list_runs) that `rules` select at `now`,
// refused-before-a-box runs first, then oldest first. Runs whose record has
// no readable end time are kept (never removed on a guess).
std::vector<PruneChoice> choose_runs_to_prune(const std::vector<RunEntry>& runs, const PruneRules& rules,
                                              std::chrono::system_clock::time_point now);

// Bytes the run's directory takes on disk (st_blocks, not following symlinks).
std::uint64_t run_dir_bytes(const RunEntry& entry);

// Removes the run: STATE_DIR/runs/ID and everything below it; for a run
// given --run-dir elsewhere only the entry (the symlink): that directory is
// the operator's. Then its live mark, if one is left. Throws SysError.
void remove_run(const std::string& state_dir, const RunEntry& entry);

}  // namespace corral::run
