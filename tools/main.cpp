// tools/main.cpp — `corral SUBCOMMAND ...`: dispatch only; each subcommand
// lives in its own cmd_*.cpp and calls into the component libraries.
#include <sys/prctl.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>

#include "supervisor/identity.hpp"
#include "tools/commands.hpp"

namespace {

struct Subcommand {
    const char* name;
    int (*run)(int, char**);
    const char* summary;
};

constexpr Subcommand kSubcommands[] = {
    {"run", corral::cli::cmd_run, "run a command or an agent in a fresh sandbox"},
    {"ps", corral::cli::cmd_ps, "list the runs (running ones; -a: all) of the state dir"},
    {"logs", corral::cli::cmd_logs, "print (-f: follow) a run's stdout and stderr logs"},
    {"stop", corral::cli::cmd_stop, "stop a run: SIGTERM to its command, SIGKILL after the grace, verified teardown"},
    {"inspect", corral::cli::cmd_inspect, "print a run's run.json with its live state"},
    {"doctor", corral::cli::cmd_doctor, "check every kernel feature corral needs"},
    {"gateway", corral::cli::cmd_gateway, "run the egress gateway daemon"},
    {"ca", corral::cli::cmd_ca, "manage corral's certificate authority (ca init)"},
    {"validate", corral::cli::cmd_validate, "validate an organisation config and print the resolved workers"},
    {"budget", corral::cli::cmd_budget, "show or reset a worker's budget across runs (kept by the gateway daemon)"},
    {"image", corral::cli::cmd_image, "import OCI / docker save images and tarballs; list, inspect, remove them"},
};

void usage(std::FILE* out) {
    std::fprintf(out, "usage: corral SUBCOMMAND [OPTIONS]\n\nsubcommands:\n");
    for (const auto& s : kSubcommands) std::fprintf(out, "  %-10s %s\n", s.name, s.summary);
    std::fprintf(out, "\n`corral SUBCOMMAND --help` explains each one.\n");
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

}  // namespace

int main(int argc, char** argv) {
    keep_memory_out_of_core_dumps();
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
                // One prefixed line per problem: a message may hold several.
                std::string_view text = e.what();
                do {
                    auto eol = text.find('\n');
                    std::string_view line = text.substr(0, eol);
                    if (!line.empty()) std::fprintf(stderr, "corral %s: %.*s\n", s.name, static_cast<int>(line.size()), line.data());
                    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
                } while (!text.empty());
                return 125;  // containment/setup failure; see docs/architecture.md "Exit status"
            }
        }
    }
    std::fprintf(stderr, "corral: unknown subcommand \"%s\"; expected one of: run, ps, logs, stop, inspect, doctor, gateway, ca, validate, budget, image\n",
                 argv[1]);
    return 2;
}
