// cli/runs_args.hpp — the command lines of the day-2 commands on the state
// dir's runs: `corral ps`, `logs`, `stop`, `inspect` and `prune`.
#pragma once

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/option_table.hpp"
#include "run/run_prune.hpp"

namespace corral::cli {

// ps, logs, stop and inspect: each reads the options its table has.
struct RunsArgs {
    std::string state_dir;  // --state-dir; default run::default_state_dir()
    std::vector<std::string> positional;
    bool json_out = false, all = false, follow = false;
    std::optional<std::chrono::milliseconds> grace;
    bool help = false;
};

// `cmd` is "ps", "logs", "stop" or "inspect"; argv[0] is the subcommand.
// Throws UsageError naming the option.
RunsArgs parse_runs_args(std::string_view cmd, int argc, char** argv);
std::span<const OptionSpec> runs_option_specs(std::string_view cmd);
// Each command's --help (its prose, then its table's rows).
const std::string& runs_help(std::string_view cmd);

struct PruneArgs {
    run::PruneRules rules;
    bool dry_run = false, json_out = false, help = false;
    std::string state_dir;  // default run::default_state_dir()
};

PruneArgs parse_prune_args(int argc, char** argv);
std::span<const OptionSpec> prune_option_specs();
const std::string& prune_help();

}  // namespace corral::cli
