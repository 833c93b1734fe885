// tools/main.cpp — `corral SUBCOMMAND ...`: dispatch only; each subcommand
// lives in its own cmd_*.cpp and calls into the component libraries.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>

#include "tools/commands.hpp"

namespace {

struct Subcommand {
    const char* name;
    int (*run)(int, char**);
    const char* summary;
};

constexpr Subcommand kSubcommands[] = {
    {"run", corral::cli::cmd_run, "run a command or an agent in a fresh sandbox"},
    {"doctor", corral::cli::cmd_doctor, "check every kernel feature corral needs"},
    {"gateway", corral::cli::cmd_gateway, "run the egress gateway daemon"},
    {"ca", corral::cli::cmd_ca, "manage corral's certificate authority (ca init)"},
    {"validate", corral::cli::cmd_validate, "validate an organisation config and print the resolved workers"},
};

void usage(std::FILE* out) {
    std::fprintf(out, "usage: corral SUBCOMMAND [OPTIONS]\n\nsubcommands:\n");
    for (const auto& s : kSubcommands) std::fprintf(out, "  %-10s %s\n", s.name, s.summary);
    std::fprintf(out, "\n`corral SUBCOMMAND --help` explains each one.\n");
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    std::string_view name = argv[1];
    if (name == "--help" || name == "-h" || name == "help") {
        usage(stdout);
        return 0;
    }
    if (name == "--version") {
        std::printf("corral %s\n", CORRAL_VERSION);
        return 0;
    }
    for (const auto& s : kSubcommands) {
        if (name == s.name) {
            try {
                return s.run(argc - 1, argv + 1);
            } catch (const std::exception& e) {
                std::fprintf(stderr, "corral %s: %s\n", s.name, e.what());
                return 125;  // containment/setup failure; see docs/architecture.md "Exit status"
            }
        }
    }
    std::fprintf(stderr, "corral: unknown subcommand \"%s\"; expected one of: run, doctor, gateway, ca, validate\n",
                 argv[1]);
    return 2;
}
