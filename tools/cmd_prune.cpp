// tools/cmd_prune.cpp — `corral prune`: remove ended runs past their retention
// (run/run_prune.hpp chooses them), saying what went and how much it freed.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/parse.hpp"
#include "base/terminal_text.hpp"
#include "base/sys_error.hpp"
#include "run/outcome.hpp"
#include "run/request.hpp"
#include "run/run_prune.hpp"
#include "run/state_dir.hpp"
#include "supervisor/outcome.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

namespace {

constexpr const char* kPruneHelp =
    "usage: corral prune [--older-than D] [--outcome O[,O...]] [--dry-run] [--json] [--state-dir DIR]\n"
    "\n"
    "Removes the finished runs of the state dir that ended more than D ago (default 14d),\n"
    "oldest first, with their run dirs (record, logs, journal, the agent's home). A run\n"
    "refused before its sandbox existed goes once it is an hour old, whatever D. Never a\n"
    "run that is running, starting or lost (the next `corral run` ends a lost run's\n"
    "journal first). A run given --run-dir elsewhere loses only its entry: that\n"
    "directory is yours and stays.\n"
    "  --older-than D   how long ago a run must have ended: 90m, 36h, 7d (default 14d)\n"
    "  --outcome O,...  only runs that ended so (exited, killed, deadline, stopped,\n"
    "                   interrupted, not_found, setup_failed, usage_error, teardown_failed)\n"
    "  --dry-run        say what would be removed, remove nothing\n"
    "  --json           one JSON object: {removed|would_remove: [{id, outcome, ended_at, bytes}], bytes}\n";

struct PruneArgs {
    run::PruneRules rules;
    bool dry_run = false, json_out = false, help = false;
    std::string state_dir = run::default_state_dir();
};

std::set<std::string> parse_outcomes(const std::string& list) {
    std::set<std::string> out;
    std::size_t at = 0;
    while (at <= list.size()) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        const std::string name = list.substr(at, comma - at);
        if (!supervisor::parse_outcome(name))
            throw UsageError("--outcome: unknown outcome \"" + name +
                             "\"; expected a comma-separated list of exited, killed, deadline, stopped, "
                             "interrupted, not_found, setup_failed, usage_error, teardown_failed");
        out.insert(name);
        at = comma + 1;
    }
    return out;
}

PruneArgs parse_prune_args(int argc, char** argv) {
    PruneArgs a;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw UsageError(std::string(arg) + " needs a value");
            return argv[++i];
        };
        if (arg == "--help" || arg == "-h") a.help = true;
        else if (arg == "--state-dir") a.state_dir = value();
        else if (arg == "--dry-run" || arg == "-n") a.dry_run = true;
        else if (arg == "--json") a.json_out = true;
        else if (arg == "--outcome") a.rules.outcomes = parse_outcomes(value());
        else if (arg == "--older-than") {
            const std::string v = value();
            try {
                a.rules.older_than = parse_duration(v);
            } catch (const UsageError& e) {
                throw UsageError(std::string("--older-than: ") + e.what());
            }
        } else {
            throw UsageError("unknown argument \"" + std::string(arg) +
                             "\"; expected --older-than, --outcome, --dry-run, --json, --state-dir");
        }
    }
    return a;
}

std::string ended_ago(std::chrono::system_clock::time_point ended, std::chrono::system_clock::time_point now) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - ended);
    const auto h = std::chrono::duration_cast<std::chrono::hours>(ms).count();
    if (h >= 48) return std::to_string(h / 24) + "d ago";
    if (h >= 1) return std::to_string(h) + "h ago";
    return std::to_string(std::chrono::duration_cast<std::chrono::minutes>(ms).count()) + "m ago";
}

}  // namespace

int cmd_prune(int argc, char** argv) {
    PruneArgs a;
    try {
        a = parse_prune_args(argc, argv);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "corral prune: %s\n", terminal_text(e.what()).c_str());
        return run::kExitUsage;
    }
    if (a.help) return std::fputs(kPruneHelp, stdout), 0;
    a.state_dir = run::require_private_state_dir("--state-dir", a.state_dir);
    const auto now = std::chrono::system_clock::now();
    const auto chosen = run::choose_runs_to_prune(run::list_runs(a.state_dir), a.rules, now);
    nlohmann::json listed = nlohmann::json::array();
    std::uint64_t total = 0;
    for (const auto& c : chosen) {
        const std::uint64_t bytes = run::run_dir_bytes(c.entry);
        if (!a.dry_run) run::remove_run(a.state_dir, c.entry);
        total += bytes;
        listed.push_back({{"id", c.entry.id}, {"outcome", c.outcome}, {"ended_at", supervisor::format_rfc3339_ms(c.ended_at)},
                          {"bytes", bytes}});
        if (!a.json_out)
            std::printf("%s %s (%s, ended %s, %s)\n", a.dry_run ? "would remove" : "removed", c.entry.id.c_str(),
                        terminal_text(c.outcome).c_str(), ended_ago(c.ended_at, now).c_str(), format_size(bytes).c_str());
    }
    if (a.json_out) {
        std::printf("%s\n", nlohmann::json{{a.dry_run ? "would_remove" : "removed", listed}, {"bytes", total}}.dump(2).c_str());
        return 0;
    }
    std::printf("%s %zu run%s, %s\n", a.dry_run ? "would remove" : "removed", chosen.size(), chosen.size() == 1 ? "" : "s",
                format_size(total).c_str());
    return 0;
}

}  // namespace corral::cli
