// Integration tests of `corral gateway` on loopback with real curl and node.
// Exits 77 (meson: SKIP) with the reason when a prerequisite is missing.
#include <doctest/doctest.h>

#include <cstdio>

#include "tests/gateway_e2e/fixture.hpp"

int main(int argc, char** argv) {
    auto missing = corral::test::gw::missing_prerequisite();
    if (!missing.empty()) {
        std::printf("SKIP: %s\n", missing.c_str());
        return 77;
    }
    doctest::Context ctx(argc, argv);
    return ctx.run();
}
