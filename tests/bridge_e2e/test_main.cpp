// The bridge tests need root, curl, node, openssl and the repo's node_modules
// (ws, for the stand-in upstream); without them the executable exits 77 (SKIP)
// after saying why.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

namespace corral::test::bridge {
std::string missing_prerequisite();
}

int main(int argc, char** argv) {
    if (auto why = corral::test::bridge::missing_prerequisite(); !why.empty()) {
        std::printf("SKIP: %s\n", why.c_str());
        return 77;
    }
    doctest::Context ctx(argc, argv);
    return ctx.run();
}
