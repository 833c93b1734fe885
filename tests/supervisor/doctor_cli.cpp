// `corral doctor` through the real binary: one well-formed line per feature, every
// feature the issue lists is probed, and the exit status agrees with the lines.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/support/process.hpp"

using corral::test::corral_bin;
using corral::test::run;

namespace {
std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}
}  // namespace

TEST_CASE("corral doctor prints one ok/FAIL line per feature and exits 0 iff all are ok") {
    auto r = run({corral_bin(), "doctor"});
    REQUIRE_FALSE(r.timed_out);
    auto lines = lines_of(r.out);
    REQUIRE(lines.size() >= 18);
    bool any_fail = false;
    for (const auto& line : lines) {
        bool ok = line.rfind("ok   ", 0) == 0;
        bool fail = line.rfind("FAIL ", 0) == 0;
        CHECK_MESSAGE((ok || fail), line);
        CHECK_MESSAGE(line.find(": ") != std::string::npos, line);
        if (fail) {
            any_fail = true;
            CHECK_MESSAGE(line.find(" — ") != std::string::npos, "a FAIL line must say what to do: " << line);
        }
    }
    CHECK(r.exit_code == (any_fail ? 1 : 0));
    for (const char* feature : {"running as root", "pid namespace", "mount namespace", "network namespace",
                                "ipc namespace", "uts namespace", "cgroup namespace", "clone3", "pidfd",
                                "no_new_privs", "seccomp filter", "overlayfs", "device nodes", "netlink", "cgroup v2",
                                "cgroup memory controller", "cgroup pids controller", "cgroup cpu controller",
                                "cgroup limits"}) {
        bool found = false;
        for (const auto& line : lines)
            if (line.find(std::string(" ") + feature + ": ") == 4) found = true;
        CHECK_MESSAGE(found, "no line for " << feature);
    }
    if (corral::test::running_as_root()) {
        // Everything is present on the machines corral's CI runs on.
        MESSAGE(r.out);
        CHECK(r.exit_code == 0);
    }
}

// Skipped (doctest counts it) without root, or without setpriv (util-linux).
TEST_CASE("without CAP_MKNOD corral doctor names the device-node check and what to do" *
          doctest::skip(!corral::test::running_as_root() || !corral::test::have_program("setpriv"))) {
    // Root without CAP_MKNOD, as in a container's default capability set.
    auto r = run({"setpriv", "--bounding-set", "-mknod", "--inh-caps", "-mknod", corral_bin(), "doctor"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    bool named = false;
    for (const auto& line : lines_of(r.out))
        if (line.rfind("FAIL device nodes: ", 0) == 0 && line.find("mknod") != std::string::npos &&
            line.find("CAP_MKNOD") != std::string::npos)
            named = true;
    CHECK(named);
}

TEST_CASE("corral doctor --help explains it; an unknown argument is a usage error") {
    auto help = run({corral_bin(), "doctor", "--help"});
    CHECK(help.exit_code == 0);
    CHECK(help.out.find("usage: corral doctor") == 0);
    auto bad = run({corral_bin(), "doctor", "--bogus"});
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("--bogus") != std::string::npos);
    CHECK(lines_of(bad.err).size() == 1);
}
