#include <cstdio>

#include "tools/commands.hpp"

namespace corral::cli {

int cmd_ca(int, char**) {
    std::fprintf(stderr, "corral ca: not available in this build yet\n");
    return 2;
}

}  // namespace corral::cli
