// tools/cmd_prune.cpp — `corral prune`: remove ended runs past their retention
// (run/run_prune.hpp chooses them), saying what went and how much it freed.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/parse.hpp"
#include "cli/runs_args.hpp"
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
    if (a.help) return std::fputs(prune_help().c_str(), stdout), 0;
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
