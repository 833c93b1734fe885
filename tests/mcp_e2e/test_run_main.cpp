// The `corral run` MCP test (test_corral_run.cpp) needs root (it creates a
// sandbox), openssl (the test CA), node and the pinned MCP packages in the
// repo's node_modules/; without them the executable exits 77 (SKIP) after
// saying why. It first moves into a network namespace of its own with only
// `lo`: nothing it starts reaches past loopback.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "tests/mcp_e2e/harness.hpp"

int main(int argc, char** argv) {
    std::string why = corral::test::mcp_e2e::missing_prerequisite();
    if (why.empty() && !corral::test::running_as_root()) why = "needs root (creates sandboxes)";
    if (why.empty() && !corral::test::have_program("openssl")) why = "openssl is not installed (the test CA)";
    if (!why.empty()) {
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
