// cli/command_table.hpp — the command lines of corral's subcommands: each
// subcommand's option table (base/option_table.hpp) and the arguments it
// parses into live in this folder, beside the others; tools/ only acts on the
// parsed arguments. The list below is what the man page and the bash
// completion (tools/gen_docs.cpp) read, so neither can miss an option.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "base/option_table.hpp"

namespace corral::cli {

// One command line: `corral ps`, `corral session ls`, `corral ca init`.
struct CommandTable {
    std::string_view subcommand;  // "session"
    std::string_view action;      // "ls"; empty for a subcommand without actions
    std::span<const OptionSpec> (*options)();
};

// Every subcommand's tables, `corral run`'s first, in kSubcommandInfo's order.
std::span<const CommandTable> command_tables();

// A command's --help: its usage and prose (`head`, ending in "\n", e.g. in
// "options:\n"), then a row per option of the table, --help last (the
// options' help at `column`).
std::string help_with_options(std::string_view head, std::span<const OptionSpec> options, std::size_t column = 25);

}  // namespace corral::cli
