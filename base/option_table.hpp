// base/option_table.hpp — the one option parser of every `corral` subcommand:
// a command's options are a table (name, short alias, placeholder, help,
// repeatable, how the value is stored), and the parser, --help, the man page,
// the bash completion and "did you mean" all read that table.
//
// The parser is pure (no file system, no environment) and throws UsageError
// with one line naming the option; the command prints it and exits 2:
//   unknown option "--memroy" (did you mean --memory?); options are --memory, ..., --help
//   --memory: missing value; see `corral run --help`
//   --quiet: takes no value, got "yes"
//   --memory: given twice; give it once   (unless the row is repeatable)
// Forms: --name VALUE, --name=VALUE, -s VALUE (a short alias), a switch
// alone; `--` ends the options; --help or -h anywhere before it asks for
// help (nothing after it is read).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace corral {

// One row of a command's option table (without its storage: Option<Args>).
struct OptionSpec {
    std::string_view name;          // "--all"
    std::string_view placeholder;   // "DIR"; empty: a switch that takes no value
    std::string_view help;          // its --help lines, '\n' between them, without the indentation
    std::string_view short_name{};  // "-a"; empty: none
    bool repeatable = false;        // may be given more than once (each value stored in turn)
};

// How a command reads the words around its options.
struct CommandSyntax {
    std::string_view command;  // "corral ps": in "see `corral ps --help`"
    // After this many positionals the next one starts the command (CMD
    // ARGS..., taken as is, options included), as `--` does; nullopt: the
    // command takes no CMD, options and positionals mix and `--` makes the
    // rest positionals.
    std::optional<std::size_t> command_after{};
    // The whole answer for an unknown flag that is a habit rather than a typo
    // (Docker's -v for `corral run`); empty: the usual message.
    std::string (*habit)(std::string_view flag) = nullptr;
};

struct CommandLine {
    std::vector<std::string> positionals;
    std::vector<std::string> command;  // CMD ARGS... (CommandSyntax::command_after)
    bool help = false;                 // --help or -h was given
};

// Reads argv[1..argc) (argv[0] is the subcommand), calling store(row, value)
// for each option in the order given (a switch's value is ""). Throws
// UsageError as above; whatever store throws passes through.
CommandLine parse_command_line(const CommandSyntax& syntax, std::span<const OptionSpec> options, int argc,
                               char** argv, const std::function<void(std::size_t row, const std::string& value)>& store);

// The table's row called `name` (its long name or short alias; "-h" is
// "--help" only when the table has a --help row), or null.
const OptionSpec* find_option_spec(std::span<const OptionSpec> options, std::string_view name);

// `unknown option "ARG" (did you mean --X?); options are A, B, ..., --help`.
std::string unknown_option_text(std::span<const OptionSpec> options, std::string_view arg);

// "  -a, --all DIR        help line 1\n                       help line 2\n": one
// row in a help text, its help from `column` on.
void append_option_help(std::string& out, const OptionSpec& o, std::size_t column = 25);
// Every row but --help, then --help ("show this text.") unless the table has its own.
std::string options_help(std::span<const OptionSpec> options, std::size_t column = 25);

// A typed table: each row stores its value into the command's arguments.
template <class Args>
struct Option {
    OptionSpec spec;
    void (*store)(Args& args, const std::string& value);
};

template <class Args>
std::vector<OptionSpec> option_specs(std::span<const Option<Args>> table) {
    std::vector<OptionSpec> specs;
    for (const auto& o : table) specs.push_back(o.spec);
    return specs;
}

// The untyped rows of a typed table that lives as long as the program (a
// namespace-scope array), made once on the first call and kept: what a
// command's `*_option_specs()` hands to its --help, the man page and the
// completion (cli/command_table.hpp), so that each command states only its
// table. `Table` is the array itself: option_specs_of<kDoctorOptions>().
template <auto& Table>
std::span<const OptionSpec> option_specs_of() {
    static const auto specs = [] {
        std::vector<OptionSpec> out;
        for (const auto& o : Table) out.push_back(o.spec);
        return out;
    }();
    return specs;
}

// parse_command_line over a typed table, storing into `args`.
template <class Args>
CommandLine parse_options(const CommandSyntax& syntax, std::span<const Option<Args>> table, int argc, char** argv,
                          Args& args) {
    const auto specs = option_specs(table);
    return parse_command_line(syntax, specs, argc, argv,
                              [&](std::size_t row, const std::string& value) { table[row].store(args, value); });
}

}  // namespace corral
