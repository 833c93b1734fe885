// tools/main.cpp — `corral SUBCOMMAND ...`: dispatch only; each subcommand
// lives in its own cmd_*.cpp and calls into the component libraries.
#include <sys/prctl.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>

#include <string>
#include <vector>

#include "base/suggest.hpp"
#include "base/terminal_text.hpp"
#include "supervisor/exec_as_user.hpp"
#include "supervisor/privilege_drop.hpp"
#include "tools/commands.hpp"
#include "tools/subcommands.hpp"

namespace {

using corral::cli::kSubcommandInfo;

// Each subcommand of kSubcommandInfo but "help", by name.
struct Subcommand {
    std::string_view name;
    int (*run)(int, char**);
};

constexpr Subcommand kSubcommands[] = {
    {"run", corral::cli::cmd_run},           {"ps", corral::cli::cmd_ps},
    {"logs", corral::cli::cmd_logs},         {"stop", corral::cli::cmd_stop},
    {"inspect", corral::cli::cmd_inspect},   {"doctor", corral::cli::cmd_doctor},
    {"gateway", corral::cli::cmd_gateway},   {"ca", corral::cli::cmd_ca},
    {"validate", corral::cli::cmd_validate}, {"budget", corral::cli::cmd_budget},
    {"image", corral::cli::cmd_image},       {"session", corral::cli::cmd_session},
    {"exec", corral::cli::cmd_exec},         {"key", corral::cli::cmd_key},
    {"journal", corral::cli::cmd_journal},   {"prune", corral::cli::cmd_prune},
    {"mcp", corral::cli::cmd_mcp},           {"approvals", corral::cli::cmd_approvals},
    {"approve", corral::cli::cmd_approve},   {"deny", corral::cli::cmd_deny},
    {"diff", corral::cli::cmd_diff},         {"apply", corral::cli::cmd_apply},
    {"discard", corral::cli::cmd_discard},
};

// The dispatcher and the list `corral help`, the man page and the completion
// read must name the same subcommands, in the same order.
constexpr bool same_subcommands() {
    if (std::size(kSubcommands) + 1 != std::size(kSubcommandInfo)) return false;
    for (std::size_t i = 0; i < std::size(kSubcommands); ++i)
        if (kSubcommands[i].name != kSubcommandInfo[i].name) return false;
    return kSubcommandInfo[std::size(kSubcommands)].name == "help";
}
static_assert(same_subcommands());

// A Docker habit's answer never hides a subcommand corral has.
constexpr bool habits_are_not_subcommands() {
    for (const auto& h : corral::cli::kDockerSubcommandHabits)
        for (const auto& s : kSubcommandInfo)
            if (h.name == s.name) return false;
    return true;
}
static_assert(habits_are_not_subcommands());

void usage(std::FILE* out) {
    std::fprintf(out, "usage: corral SUBCOMMAND [OPTIONS]\n\nsubcommands:\n");
    for (const auto& s : kSubcommandInfo)
        std::fprintf(out, "  %-10.*s %.*s\n", static_cast<int>(s.name.size()), s.name.data(),
                     static_cast<int>(s.summary.size()), s.summary.data());
    std::fprintf(out, "\n`corral help SUBCOMMAND` (or `corral SUBCOMMAND --help`) explains each one;\n"
                      "`man corral` has them all.\n");
}

const Subcommand* find_subcommand(std::string_view name) {
    for (const auto& s : kSubcommands)
        if (s.name == name) return &s;
    return nullptr;
}

// "unknown subcommand "rnu" (did you mean run?); expected one of: run, doctor, ..."
void unknown_subcommand(std::string_view name) {
    if (std::string_view habit = corral::cli::docker_subcommand_habit(name); !habit.empty()) {
        std::fprintf(stderr, "corral: %.*s\n", static_cast<int>(habit.size()), habit.data());
        return;
    }
    std::vector<std::string_view> names;
    std::string list;
    for (const auto& s : kSubcommandInfo) {
        names.push_back(s.name);
        list += (list.empty() ? "" : ", ") + std::string(s.name);
    }
    std::string near;
    if (auto n = corral::closest_name(name, names)) near = " (did you mean " + *n + "?)";
    std::fprintf(stderr, "corral: unknown subcommand \"%.*s\"%s; expected one of: %s\n", static_cast<int>(name.size()),
                 name.data(), near.c_str(), list.c_str());
}

// corral holds credentials, the CA key and the box's secrets-free but
// private state in memory (and so do the init and reaper, copies made by
// clone): none of it may end in a core file or a core_pattern helper, nor be
// read through /proc by anyone without CAP_SYS_PTRACE. Both are inherited by
// every process corral clones; the command's execve resets dumpable for the
// agent's own programs, whose core dumps the init disables separately.
void keep_memory_out_of_core_dumps() {
    (void)corral::supervisor::disable_core_dumps();  // RLIMIT_CORE 1/1, as for the box's command
    (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

int run_subcommand(const Subcommand& s, int argc, char** argv) {
    try {
        return s.run(argc, argv);
    } catch (const std::exception& e) {
        // One prefixed line per problem: a message may hold several; each
        // escaped, since a message may carry a box's bytes (a path, a name).
        std::string_view text = e.what();
        do {
            auto eol = text.find('\n');
            const std::string line = corral::terminal_text(text.substr(0, eol));
            if (!line.empty())
                std::fprintf(stderr, "corral %.*s: %.*s\n", static_cast<int>(s.name.size()), s.name.data(),
                             static_cast<int>(line.size()), line.data());
            text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
        } while (!text.empty());
        return 125;  // containment/setup failure; see docs/architecture.md "Exit status"
    }
}

}  // namespace

int main(int argc, char** argv) {
    keep_memory_out_of_core_dumps();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    std::string_view name = argv[1];
    // Not a subcommand a person types: the notifier hook's way to its user.
    if (name == corral::supervisor::kExecAsUserCommand) return corral::supervisor::exec_as_user_main(argc - 1, argv + 1);
    // Nor is this: the bash completion's words (tools/cmd_complete.cpp).
    if (name == corral::cli::kCompleteCommand) return corral::cli::cmd_complete(argc - 1, argv + 1);
    if (name == "--version") {
        std::printf("corral %s\n", CORRAL_VERSION);
        return 0;
    }
    if (name == "--help" || name == "-h" || (name == "help" && argc == 2)) {
        usage(stdout);
        return 0;
    }
    if (name == "help") {
        // `corral help run` is `corral run --help`.
        std::string_view topic = argv[2];
        if (argc > 3) {
            std::fprintf(stderr, "corral help: takes one subcommand, got %d arguments\n", argc - 2);
            return 2;
        }
        if (topic == "help") {
            usage(stdout);
            return 0;
        }
        const Subcommand* s = find_subcommand(topic);
        if (s == nullptr) {
            unknown_subcommand(topic);
            return 2;
        }
        char help_flag[] = "--help";
        char* help_argv[] = {argv[2], help_flag, nullptr};
        return run_subcommand(*s, 2, help_argv);
    }
    if (const Subcommand* s = find_subcommand(name)) return run_subcommand(*s, argc - 1, argv + 1);
    unknown_subcommand(name);
    return 2;
}
