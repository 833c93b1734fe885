// The MCP e2e suite needs node and the pinned MCP packages in the repo's
// node_modules/ (tools/install-npm-deps.sh); without them the executable
// exits 77 (SKIP) after saying why. As root it first moves into a network
// namespace of its own with only `lo`: nothing it starts reaches past loopback.
#include <doctest/doctest.h>

#include <cstdio>

#include "tests/mcp_e2e/harness.hpp"

int main(int argc, char** argv) {
    if (auto why = corral::test::mcp_e2e::missing_prerequisite(); !why.empty()) {
        std::printf("SKIP: %s\n", why.c_str());
        return 77;
    }
    if (auto failed = corral::test::mcp_e2e::isolate_loopback(); !failed.empty()) {
        std::fprintf(stderr, "cannot isolate the suite's network: %s\n", failed.c_str());
        return 1;
    }
    doctest::Context ctx(argc, argv);
    return ctx.run();
}
