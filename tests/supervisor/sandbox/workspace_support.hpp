// tests/supervisor/sandbox/workspace_support.hpp — what the workspace and
// bind tests share: the operator's user that owns their directories, a run
// that must be refused before its script starts, and lstat that must work.
#pragma once

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <string>

#include "tests/supervisor/sandbox/sandbox_support.hpp"

namespace corral::test::sandbox {

// An operator's user and group that exist nowhere else in the tests.
inline constexpr uid_t kOwnerUid = 41001;
inline constexpr gid_t kOwnerGid = 41002;

// Runs a script that prints INSIDE if it ever starts; checks that it never
// did and that stderr names `message`. Returns the run for further checks.
inline CorralRun run_refused(const CorralArgs& args, const std::string& message) {
    auto run = corral_sh("echo START; echo INSIDE; echo DONE", args);
    INFO(transcript(run.result));
    CHECK(run.result.out.find("INSIDE") == std::string::npos);
    CHECK(run.result.err.find(message) != std::string::npos);
    return run;
}

inline struct stat stat_of(const std::string& path) {
    struct stat st {};
    REQUIRE_MESSAGE(lstat(path.c_str(), &st) == 0, "lstat " << path);
    return st;
}

}  // namespace corral::test::sandbox
