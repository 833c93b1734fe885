// tools/action_front.hpp — the front of the `corral NOUN ACTION ...` commands
// (ca, key, budget): one way to ask for help, to be told an action is
// unknown, and to hear what is wrong with an argument.
#pragma once

#include <cstdio>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace corral::cli {

class ActionFront {
public:
    // `usage` prints the command's help to the stream it is given.
    ActionFront(std::string_view noun, void (*usage)(std::FILE*)) : noun_(noun), usage_(usage) {}

    // The ACTION in argv[1], one of `actions`. On the way: no argument prints
    // the usage on stderr (exit 2), --help/-h on stdout (exit 0), an unknown
    // action is refused naming the allowed ones (exit 2). The exit status, or
    // nullopt to go on with action().
    std::optional<int> take_action(int argc, char** argv, std::initializer_list<std::string_view> actions);
    const std::string& action() const { return action_; }

    // After the action: nothing but --state-dir DIR (and --help). The exit
    // status, or nullopt with `dir` set when it was given.
    std::optional<int> take_state_dir_only(int argc, char** argv, std::optional<std::string>& dir) const;

    static bool is_help(std::string_view a) { return a == "--help" || a == "-h"; }
    int help() const;  // the usage on stdout, exit 0
    // A malformed command line: one line naming the problem, exit 2 (as every
    // corral subcommand), not the 125 of a failed action.
    int bad_usage(const std::string& problem) const;

private:
    std::string noun_;
    void (*usage_)(std::FILE*);
    std::string action_;
};

}  // namespace corral::cli
