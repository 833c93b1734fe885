// tests/workspace/review_support.hpp — what the reviewed-workspace tests
// share: a git repository owned by an operator's user, the corral commands
// after a run, and a tree's state without its times.
#pragma once

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/supervisor/sandbox/sandbox_support.hpp"
#include "tests/support/process.hpp"
#include "workspace/change.hpp"
#include "tests/supervisor/sandbox/workspace_support.hpp"

namespace corral::test::review {

using namespace corral::test::sandbox;

inline constexpr uid_t kOwnerUid = 41101;
inline constexpr gid_t kOwnerGid = 41102;

inline Result must_run(const std::vector<std::string>& argv) {
    Result r = run(argv);
    INFO(argv.front() << " " << (argv.size() > 1 ? argv[1] : "") << ": " << r.out << r.err);
    REQUIRE(r.exit_code == 0);
    return r;
}

inline Result git(const std::string& dir, std::vector<std::string> args) {
    std::vector<std::string> argv{"git", "-C", dir, "-c", "safe.directory=*", "-c", "user.name=t",
                                  "-c", "user.email=t@example.invalid"};
    argv.insert(argv.end(), args.begin(), args.end());
    return must_run(argv);
}

// A committed repository: the files named (path -> content), a .gitignore
// of *.log, everything the operator's user's.
inline std::string make_repo(const std::string& stem, const std::map<std::string, std::string>& files) {
    const std::string dir = fresh_dir(stem, 0755);
    for (const auto& [path, content] : files) {
        std::filesystem::create_directories(std::filesystem::path(dir + "/" + path).parent_path());
        sandbox::write_file(dir + "/" + path, content);
    }
    sandbox::write_file(dir + "/.gitignore", "*.log\n");
    git(dir, {"init", "-q"});
    git(dir, {"add", "-A"});
    git(dir, {"commit", "-q", "-m", "start"});
    must_run({"chown", "-R", std::to_string(kOwnerUid) + ":" + std::to_string(kOwnerGid), dir});
    // Older than the margin before the next run's fence (workspace/change.hpp
    // changed_since): a change this close before a start counts as one after it.
    usleep(2 * workspace::kFenceMarginNs / 1000);
    return dir;
}

// Every entry below `root`: type, mode, owner, content or link text (no times).
inline std::map<std::string, std::string> tree_state(const std::string& root) {
    std::map<std::string, std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
        const std::string p = e.path().string();
        struct stat st {};
        REQUIRE(lstat(p.c_str(), &st) == 0);
        std::string v = std::to_string(st.st_mode) + " " + std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid);
        if (S_ISREG(st.st_mode)) v += " " + sandbox::read_file(p);
        if (S_ISLNK(st.st_mode)) v += " -> " + std::filesystem::read_symlink(p).string();
        out[p.substr(root.size())] = v;
    }
    return out;
}

inline Result corral_cmd(std::vector<std::string> args) {
    args.insert(args.begin(), corral_bin());
    return run(args);
}

// The digest `corral diff` ends with.
inline std::string digest_of(const std::string& diff_out) {
    const auto at = diff_out.rfind("digest: ");
    REQUIRE(at != std::string::npos);
    std::string d = diff_out.substr(at + 8);
    while (!d.empty() && d.back() == '\n') d.pop_back();
    return d;
}

inline bool has_line(const std::string& text, const std::string& line) {
    return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

}  // namespace corral::test::review
