// cli/approvals_args.hpp — the command lines of `corral approvals`, `corral
// approve` and `corral deny`: the requests waiting for a person's approval,
// and the decisions (docs/approvals.md).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "base/option_table.hpp"

namespace corral::cli {

struct ApprovalsArgs {
    std::string state_dir;   // --state-dir DIR (default: a run's default state dir)
    bool as_json = false;    // approvals --json
    bool follow = false;     // approvals -f / --follow
    std::string id;          // approve, deny: ID
    bool always = false;     // approve --always
    std::string reason;      // deny --reason TEXT
    bool help = false;
};
// `command` is "approvals", "approve" or "deny"; argv[0] is the command.
// Throws UsageError naming the problem.
ApprovalsArgs parse_approvals_args(std::string_view command, int argc, char** argv);
std::span<const OptionSpec> approvals_option_specs();
std::span<const OptionSpec> approve_option_specs();
std::span<const OptionSpec> deny_option_specs();
const std::string& approvals_help(std::string_view command);

}  // namespace corral::cli
