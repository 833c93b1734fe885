// Unit tests (no root) of run/run_prune's choice: which ended runs `corral
// prune` removes, and in which order.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "run/run_prune.hpp"
#include "supervisor/run_record.hpp"

namespace {

using namespace corral;
using namespace std::chrono_literals;
using Clock = std::chrono::system_clock;

const Clock::time_point kNow = Clock::time_point(std::chrono::hours(24 * 20000));

run::RunEntry ended(std::string id, std::string state, std::chrono::hours ago, std::string outcome = "exited",
                    int uid = 1900000000) {
    nlohmann::json rec{{"state", state == "finished" ? "finished" : "running"},
                       {"ended_at", supervisor::format_rfc3339_ms(kNow - ago)},
                       {"outcome", outcome},
                       {"uid", uid}};
    return run::RunEntry{std::move(id), "/nowhere", rec, std::move(state)};
}

std::vector<std::string> ids(const std::vector<run::PruneChoice>& chosen) {
    std::vector<std::string> out;
    for (const auto& c : chosen) out.push_back(c.entry.id);
    return out;
}

}  // namespace

TEST_CASE("prune takes finished runs past the retention, oldest first; never running, starting, lost or unreadable ones") {
    std::vector<run::RunEntry> runs = {
        ended("new", "finished", 24h),      ended("old", "finished", 24h * 20), ended("older", "finished", 24h * 30),
        ended("running", "running", 24h * 40), ended("lost", "lost", 24h * 40),  ended("starting", "starting", 24h * 40),
    };
    runs.push_back(run::RunEntry{"no-record", "/nowhere", std::nullopt, "finished"});
    auto bad_time = ended("bad-time", "finished", 24h * 40);
    (*bad_time.record)["ended_at"] = "yesterday";
    runs.push_back(bad_time);
    CHECK(ids(run::choose_runs_to_prune(runs, run::PruneRules{}, kNow)) == std::vector<std::string>{"older", "old"});
    run::PruneRules all;
    all.older_than = 0ms;
    CHECK(ids(run::choose_runs_to_prune(runs, all, kNow)) == std::vector<std::string>{"older", "old", "new"});
}

TEST_CASE("a run refused before its box existed goes after an hour, first; --outcome narrows the choice") {
    std::vector<run::RunEntry> runs = {
        ended("ok", "finished", 24h * 20),
        ended("typo", "finished", 2h, "usage_error", 0),
        ended("fresh-typo", "finished", 0h, "usage_error", 0),
        ended("oom", "finished", 24h * 15, "killed"),
    };
    CHECK(ids(run::choose_runs_to_prune(runs, run::PruneRules{}, kNow)) == std::vector<std::string>{"typo", "ok", "oom"});
    run::PruneRules killed;
    killed.outcomes = {"killed"};
    CHECK(ids(run::choose_runs_to_prune(runs, killed, kNow)) == std::vector<std::string>{"oom"});
}
