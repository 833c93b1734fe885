// workspace/child_process.hpp — the two programs a review runs, each with a
// fixed argv and no environment of corral's: `diff -u` (diffutils, Essential
// in Debian) for text files, and `git check-ignore` as DIR's owner (its
// repository, its rules: git refuses a repository root does not own, and
// nothing of it should run as root).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace corral::workspace {

struct ChildRun {
    std::vector<std::string> argv;      // argv[0] is an absolute path: no PATH lookup
    std::string stdin_data;             // given through a memfd
    std::vector<int> extra_fds;         // become fds 3, 4, ... in the child
    std::optional<uid_t> uid;           // drop to this user (and gid, no supplementary groups) first
    gid_t gid = 0;
    std::size_t max_output = 4u << 20;  // stdout beyond this is cut (and `truncated` set)
};

struct ChildResult {
    int status = -1;                    // the exit status, 128+N for signal N
    std::string out;
    bool truncated = false;
};

// Runs it and waits. Throws SysError naming the call when it cannot be started.
ChildResult run_child(const ChildRun& run);

}  // namespace corral::workspace
