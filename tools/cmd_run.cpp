#include <cstdio>

#include "tools/commands.hpp"

namespace corral::cli {

int cmd_run(int, char**) {
    std::fprintf(stderr, "corral run: not available in this build yet\n");
    return 2;
}

}  // namespace corral::cli
