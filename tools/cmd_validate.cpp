#include <cstdio>

#include "tools/commands.hpp"

namespace corral::cli {

int cmd_validate(int, char**) {
    std::fprintf(stderr, "corral validate: not available in this build yet\n");
    return 2;
}

}  // namespace corral::cli
