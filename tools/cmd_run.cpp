// tools/cmd_run.cpp — `corral run [OPTIONS] -- CMD [ARGS...]`: argv → request
// (run/request.hpp) → the run's phases (run/run.hpp) → corral's exit status
// (docs/architecture.md "Exit status").
#include <cstdio>

#include "base/parse.hpp"
#include "base/terminal_text.hpp"
#include "run/outcome.hpp"
#include "run/request.hpp"
#include "run/run.hpp"
#include "supervisor/terminal.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

namespace {

int usage(const UsageError& e) {
    std::fprintf(stderr, "corral run: %s\n", terminal_text(e.what()).c_str());
    return run::kExitUsage;
}

}  // namespace

int cmd_run(int argc, char** argv) {
    run::RunRequest request;
    try {
        request = run::parse_run_request(argc, argv);
        if (!request.help && request.tty) supervisor::require_caller_terminal();
    } catch (const UsageError& e) {
        return usage(e);
    }
    if (request.help) {
        std::fputs(run::run_help_text().c_str(), stdout);
        return 0;
    }
    return run::run_as_supervisor(request, run::RunBody{});
}

}  // namespace corral::cli
