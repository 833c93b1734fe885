// cli/action_front.hpp — the front of the `corral NOUN ACTION ...` commands
// (ca, key, budget): one way to ask for help, to be told an action is
// unknown, and to hear what is wrong with an argument; and the option tables
// of their actions (base/option_table.hpp).
#pragma once

#include <cstdio>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/option_table.hpp"

namespace corral::cli {

class ActionFront {
public:
    // `usage` is the command's help.
    ActionFront(std::string_view noun, std::string usage) : noun_(noun), usage_(std::move(usage)) {}

    // The ACTION in argv[1], one of `actions`. On the way: no argument prints
    // the usage on stderr (exit 2), --help/-h on stdout (exit 0), an unknown
    // action is refused naming the allowed ones (exit 2). The exit status, or
    // nullopt to go on with action().
    std::optional<int> take_action(int argc, char** argv, std::initializer_list<std::string_view> actions);
    const std::string& action() const { return action_; }

    static bool is_help(std::string_view a) { return a == "--help" || a == "-h"; }
    int help() const;  // the usage on stdout, exit 0
    // A malformed command line: one line naming the problem, exit 2 (as every
    // corral subcommand), not the 125 of a failed action.
    int bad_usage(const std::string& problem) const;

private:
    std::string noun_;
    std::string usage_;
    std::string action_;
};

// `corral ca init`, `corral key init|show`: --state-dir DIR only.
struct StateDirArgs {
    std::optional<std::string> state_dir;
    bool help = false;
};
// argv[0] is the action. Throws UsageError naming the option.
StateDirArgs parse_state_dir_args(std::string_view command, int argc, char** argv);
std::span<const OptionSpec> ca_option_specs();
std::span<const OptionSpec> key_option_specs();
const std::string& ca_help();
const std::string& key_help();

// `corral budget show|reset WORKER [--gateway unix:PATH]`.
struct BudgetArgs {
    std::string worker;
    std::string socket;  // the daemon's socket path
    bool help = false;
};
BudgetArgs parse_budget_args(int argc, char** argv);
std::span<const OptionSpec> budget_option_specs();
const std::string& budget_help();

}  // namespace corral::cli
