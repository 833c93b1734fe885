// supervisor/command_path: argv[0] as execvp would resolve it, against the
// box's PATH only (pure).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "supervisor/command_path.hpp"
#include "supervisor/sandbox.hpp"

using namespace corral::supervisor;
using Strings = std::vector<std::string>;

TEST_CASE("a command with a '/' is the one candidate; a bare name is looked for in each PATH entry, in order") {
    CHECK(exec_candidates("/bin/sh", {"PATH=/usr/bin"}) == Strings{"/bin/sh"});
    CHECK(exec_candidates("./run", {"PATH=/usr/bin"}) == Strings{"./run"});
    CHECK(exec_candidates("sh", {"PATH=/usr/local/bin:/bin"}) == Strings{"/usr/local/bin/sh", "/bin/sh"});
    // An empty entry (leading, trailing or doubled colon) is the working directory, as for execvp.
    CHECK(exec_candidates("sh", {"PATH=:/bin::"}) == Strings{"./sh", "/bin/sh", "./sh", "./sh"});
}

TEST_CASE("the last PATH= wins, and the supervisor's own environment plays no part") {
    CHECK(env_value({"PATH=/a", "HOME=/h", "PATH=/b"}, "PATH") == "/b");
    CHECK(env_value({"PATHX=/a"}, "PATH").empty());
    CHECK(exec_candidates("sh", {"HOME=/h"}) == Strings{"./sh"});  // no PATH at all: only the working directory
    SandboxSpec spec;
    spec.argv = {"sh"};
    spec.env = {{"PATH", "/opt/bin"}};
    CHECK(exec_candidates("sh", command_environment(spec)) == Strings{"/opt/bin/sh"});
}
