// cli/workspace_args.hpp — the command lines of a reviewed workspace's
// commands: `corral diff`, `corral apply`, `corral discard` (docs/workspace.md).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/option_table.hpp"

namespace corral::cli {

struct WorkspaceArgs {
    std::string state_dir;             // --state-dir; default run::default_state_dir()
    std::string run;                   // RUN: a run id (or unique part) or a run dir
    std::vector<std::string> paths;    // diff: PATH...; apply: --only PATH (repeatable)
    bool json_out = false;             // diff --json
    bool stat = false;                 // diff --stat
    std::optional<std::string> expect; // apply --expect DIGEST
    bool while_running = false;        // apply --while-running: a session's live layer
    bool help = false;
};

// `cmd` is "diff", "apply" or "discard"; argv[0] is the subcommand. Throws
// UsageError naming the option or the missing RUN.
WorkspaceArgs parse_workspace_args(std::string_view cmd, int argc, char** argv);
std::span<const OptionSpec> workspace_option_specs(std::string_view cmd);
const std::string& workspace_help(std::string_view cmd);

}  // namespace corral::cli
