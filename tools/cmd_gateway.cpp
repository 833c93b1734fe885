#include <cstdio>

#include "tools/commands.hpp"

namespace corral::cli {

int cmd_gateway(int, char**) {
    std::fprintf(stderr, "corral gateway: not available in this build yet\n");
    return 2;
}

}  // namespace corral::cli
