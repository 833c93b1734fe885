// base/option_table.cpp — the option parser and the help rows of an option
// table (option_table.hpp).
#include "base/option_table.hpp"

#include "base/suggest.hpp"
#include "base/sys_error.hpp"

namespace corral {

namespace {

bool has_help_row(std::span<const OptionSpec> options) {
    for (const auto& o : options)
        if (o.name == "--help") return true;
    return false;
}

// "--rootfs, --workspace, ..., --help": every option, --help last.
std::string option_list(std::span<const OptionSpec> options) {
    std::string out;
    for (const auto& o : options)
        if (o.name != "--help") out += std::string(o.name) + ", ";
    return out + "--help";
}

// One option word: its row, and the value given with `=` if any.
struct Word {
    std::string_view name;
    std::optional<std::string> inline_value;
};

Word split_word(std::string_view arg) {
    Word w{arg, std::nullopt};
    if (auto eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
        w.name = arg.substr(0, eq);
        w.inline_value = std::string(arg.substr(eq + 1));
    }
    return w;
}

bool is_help_word(std::string_view arg) { return arg == "--help" || arg == "-h"; }

}  // namespace

const OptionSpec* find_option_spec(std::span<const OptionSpec> options, std::string_view name) {
    if (name.empty()) return nullptr;
    for (const auto& o : options)
        if (o.name == name || (!o.short_name.empty() && o.short_name == name)) return &o;
    return nullptr;
}

std::string unknown_option_text(std::span<const OptionSpec> options, std::string_view arg) {
    // "-e=X" and "--volume=X" are looked up as "-e" and "--volume".
    std::string_view flag = arg.substr(0, arg.find('='));
    std::vector<std::string_view> names;
    for (const auto& o : options) {
        names.push_back(o.name);
        if (!o.short_name.empty()) names.push_back(o.short_name);
    }
    if (!has_help_row(options)) names.push_back("--help");
    std::string out = "unknown option \"" + std::string(arg) + "\"";
    if (auto near = closest_name(flag, names)) out += " (did you mean " + *near + "?)";
    return out + "; options are " + option_list(options);
}

CommandLine parse_command_line(const CommandSyntax& syntax, std::span<const OptionSpec> options, int argc,
                               char** argv, const std::function<void(std::size_t, const std::string&)>& store) {
    CommandLine line;
    std::vector<int> given(options.size(), 0);
    auto command_starts = [&] { return syntax.command_after && line.positionals.size() >= *syntax.command_after; };
    int i = 1;
    for (; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--") {
            ++i;
            break;
        }
        if (arg.size() < 2 || arg[0] != '-') {
            if (command_starts()) break;
            line.positionals.emplace_back(arg);
            continue;
        }
        if (is_help_word(arg)) {
            line.help = true;
            return line;
        }
        const Word w = split_word(arg);
        const OptionSpec* o = find_option_spec(options, w.name);
        if (o == nullptr) {
            std::string habit = syntax.habit ? syntax.habit(arg.substr(0, arg.find('='))) : std::string();
            throw UsageError(habit.empty() ? unknown_option_text(options, arg) : habit);
        }
        const std::string name(w.name);
        std::string value;
        if (o->placeholder.empty()) {
            if (w.inline_value) throw UsageError(name + ": takes no value, got \"" + *w.inline_value + "\"");
        } else if (w.inline_value) {
            value = *w.inline_value;
        } else {
            if (i + 1 >= argc)
                throw UsageError(name + ": missing value; see `" + std::string(syntax.command) + " --help`");
            value = argv[++i];
        }
        const auto row = static_cast<std::size_t>(o - options.data());
        if (++given[row] > 1 && !o->repeatable)
            throw UsageError(std::string(o->name) + ": given twice; give it once");
        store(row, value);
    }
    auto& rest = syntax.command_after ? line.command : line.positionals;
    for (; i < argc; ++i) rest.emplace_back(argv[i]);
    return line;
}

void append_option_help(std::string& out, const OptionSpec& o, std::size_t column) {
    std::string head = "  ";
    if (!o.short_name.empty()) head += std::string(o.short_name) + ", ";
    head += std::string(o.name) + (o.placeholder.empty() ? "" : " " + std::string(o.placeholder));
    out += head + std::string(head.size() < column ? column - head.size() : 1, ' ');
    std::string_view rest = o.help;
    for (bool first = true;; first = false) {
        auto nl = rest.find('\n');
        if (!first) out += std::string(column, ' ');
        out += std::string(rest.substr(0, nl)) + "\n";
        if (nl == std::string_view::npos) break;
        rest.remove_prefix(nl + 1);
    }
}

std::string options_help(std::span<const OptionSpec> options, std::size_t column) {
    std::string out;
    for (const auto& o : options)
        if (o.name != "--help") append_option_help(out, o, column);
    const OptionSpec help{"--help", "", "show this text.", "-h"};
    append_option_help(out, help, column);
    return out;
}

}  // namespace corral
