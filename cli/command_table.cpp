// cli/command_table.cpp — the list of every subcommand's option table, and
// the help text built from one.
#include "cli/command_table.hpp"

#include "cli/action_front.hpp"
#include "cli/admin_args.hpp"
#include "cli/approvals_args.hpp"
#include "cli/image_args.hpp"
#include "cli/mcp_args.hpp"
#include "cli/runs_args.hpp"
#include "cli/session_args.hpp"
#include "cli/workspace_args.hpp"
#include "run/request.hpp"

namespace corral::cli {

namespace {

const CommandTable kTables[] = {
    {"run", "", run::run_option_specs},
    {"ps", "", [] { return runs_option_specs("ps"); }},
    {"logs", "", [] { return runs_option_specs("logs"); }},
    {"stop", "", [] { return runs_option_specs("stop"); }},
    {"inspect", "", [] { return runs_option_specs("inspect"); }},
    {"doctor", "", doctor_option_specs},
    {"gateway", "", gateway_option_specs},
    {"ca", "init", ca_option_specs},
    {"validate", "", validate_option_specs},
    {"budget", "show", budget_option_specs},
    {"budget", "reset", budget_option_specs},
    {"image", "import", image_option_specs},
    {"image", "ls", image_option_specs},
    {"image", "inspect", image_option_specs},
    {"image", "rm", image_option_specs},
    {"session", "start", session_start_option_specs},
    {"session", "stop", [] { return runs_option_specs("session stop"); }},
    {"session", "ls", [] { return runs_option_specs("session ls"); }},
    {"exec", "", exec_option_specs},
    {"key", "init", key_option_specs},
    {"key", "show", key_option_specs},
    {"journal", "verify", journal_option_specs},
    {"prune", "", prune_option_specs},
    {"mcp", "ls", mcp_ls_option_specs},
    {"mcp", "trust", mcp_trust_option_specs},
    {"approvals", "", approvals_option_specs},
    {"approve", "", approve_option_specs},
    {"deny", "", deny_option_specs},
    {"diff", "", [] { return workspace_option_specs("diff"); }},
    {"apply", "", [] { return workspace_option_specs("apply"); }},
    {"discard", "", [] { return workspace_option_specs("discard"); }},
};

}  // namespace

std::span<const CommandTable> command_tables() { return kTables; }

std::string help_with_options(std::string_view head, std::span<const OptionSpec> options, std::size_t column) {
    return std::string(head) + options_help(options, column);
}

}  // namespace corral::cli
