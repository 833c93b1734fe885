// tests/workspace/review_support.hpp — what the reviewed-workspace tests
// share: a git repository owned by an operator's user, the corral commands
// after a run, and a tree's state without its times.
#pragma once

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

// How much memory a command may peak at while it streams a 1 GiB file: an
// eighth of it, room for a sanitizer build's shadow and allocator.
inline constexpr long kStreamedMaxRssKib = 128 * 1024;

// A command run to its end, its output dropped: its exit status and the peak
// resident set (KiB) of it and of the children it waited for (wait4's
// rusage; the kernel keeps the largest of them).
struct Peak {
    int exit_code = -1;
    long max_rss_kib = 0;
};
inline Peak run_measuring_memory(std::vector<std::string> argv) {
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        const int null = open("/dev/null", O_WRONLY);
        if (null < 0 || dup2(null, STDOUT_FILENO) < 0) _exit(126);
        execv(args[0], args.data());
        _exit(127);
    }
    int status = 0;
    struct rusage usage {};
    REQUIRE(wait4(pid, &status, 0, &usage) == pid);
    return Peak{WIFEXITED(status) ? WEXITSTATUS(status) : -1, usage.ru_maxrss};
}

// Record `n` of the run's journal (negative: from the end, -1 the last).
inline nlohmann::json journal_record(const std::string& run_dir, int n) {
    const auto all = lines(sandbox::read_file(run_dir + "/journal.jsonl"));
    const long at = n < 0 ? static_cast<long>(all.size()) + n : n;
    REQUIRE(at >= 0);
    REQUIRE(at < static_cast<long>(all.size()));
    return nlohmann::json::parse(all[static_cast<std::size_t>(at)]);
}

inline bool has_line(const std::string& text, const std::string& line) {
    return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

}  // namespace corral::test::review
