// tools/exec_main.cpp — `corral-exec SESSION -- CMD [ARGS...]`: `corral exec`
// as an executable of its own. It links the exec client (tools/cmd_exec.cpp)
// and the run index: none of the gateway, and of Boost.Asio and OpenSSL only
// the static data their initialisers keep (linked with --gc-sections, the
// top-level meson.build), so starting it costs a small binary's load instead
// of all of corral's: an exec into a live session is mostly this start
// (docs/sessions.md, Lifecycle item 2).
#include <cstdio>
#include <exception>

#include "base/terminal_text.hpp"
#include "run/outcome.hpp"
#include "tools/commands.hpp"

int main(int argc, char** argv) {
    try {
        return corral::cli::cmd_exec(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "corral exec: %s\n", corral::terminal_text(e.what()).c_str());
        return corral::run::kExitSetup;
    }
}
