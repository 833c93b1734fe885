// cli/mcp_args.hpp — the command lines of `corral mcp ls` and `corral mcp
// trust`: a worker's MCP servers and the tool pins its runs keep
// (run/mcp_pin_store.hpp), and the operator's acceptance of a quarantined
// tool's new digest. docs/tools.md "Pinning".
#pragma once

#include <optional>
#include <span>
#include <string>

#include "base/option_table.hpp"

namespace corral::cli {

struct McpArgs {
    std::string config_dir;                // --config DIR (required)
    std::optional<std::string> worker;     // --worker NAME
    std::optional<std::string> state_dir;  // --state-dir DIR: default the config's [gateway] state_dir
    bool as_json = false;                  // ls --json
    bool force = false;                    // trust --force
    bool all_quarantined = false;          // trust --all-quarantined: no SERVER/TOOL DIGEST
    std::string key;                       // trust: SERVER/TOOL
    std::string digest;                    // trust: sha256:<64 hex>
    bool help = false;
};
// argv[0] is the action ("ls" or "trust"). Throws UsageError naming the problem.
McpArgs parse_mcp_args(int argc, char** argv);
std::span<const OptionSpec> mcp_ls_option_specs();
std::span<const OptionSpec> mcp_trust_option_specs();
const std::string& mcp_help();

}  // namespace corral::cli
