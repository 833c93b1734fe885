#include <cstdio>

#include "tools/commands.hpp"

namespace corral::cli {

int cmd_doctor(int, char**) {
    std::fprintf(stderr, "corral doctor: not available in this build yet\n");
    return 2;
}

}  // namespace corral::cli
