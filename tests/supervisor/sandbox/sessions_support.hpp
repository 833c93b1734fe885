// Driving `corral session` from the sandbox tests: a state dir of the test's
// own, start/exec/stop, the records, and the end-of-test checks
// (test_sessions.cpp, test_session_sockets.cpp).
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/ledger.hpp"
#include "tests/supervisor/sandbox/sandbox_support.hpp"

namespace corral::test::sandbox {

using namespace std::chrono_literals;

// `corral logs SESSION`'s lines without the "==> exec N (ROLE): CMD <==" ones.
inline std::vector<std::string> without_exec_headers(const std::string& logs) {
    std::vector<std::string> out;
    for (const auto& l : lines(logs))
        if (l.rfind("==> exec ", 0) != 0) out.push_back(l);
    return out;
}

// A state dir of the test's own; every command gets it. Whatever session a
// failed check left running is stopped (no grace) when the test ends.
struct Sessions {
    std::string state = fresh_dir("state", 0700);
    mutable std::vector<std::string> started;

    Sessions() = default;
    Sessions(const Sessions&) = delete;
    Sessions& operator=(const Sessions&) = delete;
    ~Sessions() {
        for (const auto& id : started)
            if (read_file(run_dir(id) + "/run.json").find("\"running\"") != std::string::npos)
                run({corral_bin(), "session", "stop", "--grace", "0", "--state-dir", state, id}, RunOptions{30s});
    }

    Result corral(std::vector<std::string> argv, std::chrono::milliseconds timeout = 60s) const {
        std::vector<std::string> full{corral_bin()};
        full.insert(full.end(), argv.begin(), argv.end());
        // --state-dir goes before `--` (exec) or at the end (the rest).
        auto dash = std::find(full.begin(), full.end(), "--");
        full.insert(dash, {"--state-dir", state});
        return run(full, RunOptions{timeout});
    }

    // `corral session start` on the shared rootfs; returns the id (REQUIREd).
    std::string start(std::vector<std::string> flags = {}) const {
        std::vector<std::string> argv{"session", "start", "--rootfs", rootfs(), "--uid-range", uid_range()};
        argv.insert(argv.end(), flags.begin(), flags.end());
        Result r = corral(argv);
        INFO(transcript(r));
        REQUIRE(r.exit_code == 0);
        std::string id = r.out;
        while (!id.empty() && id.back() == '\n') id.pop_back();
        REQUIRE_MESSAGE(id.find('\n') == std::string::npos, "more than one line on stdout: " << r.out);
        REQUIRE(!id.empty());
        started.push_back(id);
        return id;
    }

    Result exec(const std::string& id, std::vector<std::string> options, std::vector<std::string> command,
                std::chrono::milliseconds timeout = 60s) const {
        std::vector<std::string> argv{"exec"};
        argv.insert(argv.end(), options.begin(), options.end());
        argv.push_back(id);
        argv.push_back("--");
        argv.insert(argv.end(), command.begin(), command.end());
        return corral(argv, timeout);
    }
    Result sh(const std::string& id, const std::string& role, const std::string& script) const {
        return exec(id, {"--role", role}, {"/bin/sh", "-c", script});
    }

    std::string run_dir(const std::string& id) const { return state + "/runs/" + id; }
    nlohmann::json record(const std::string& id) const { return nlohmann::json::parse(read_file(run_dir(id) + "/run.json")); }
    // The session's ledger line for `host`, waiting up to 5 s for it (null
    // when none comes): a line reaches the file a moment after its exchange.
    nlohmann::json ledger_line(const std::string& id, const std::string& host) const {
        auto found = wait_for_ledger_lines(run_dir(id) + "/ledger.jsonl",
                                           [&](const nlohmann::json& l) { return l.value("host", "") == host; });
        return found.empty() ? nlohmann::json(nullptr) : found.front();
    }
    nlohmann::json exec_record(const std::string& id, int n) const {
        return nlohmann::json::parse(read_file(run_dir(id) + "/execs/" + std::to_string(n) + "/exec.json"));
    }

    // `corral session stop`, then what a run's tests check: nothing of any
    // role's UID, cgroup, mount, lock or scratch is left.
    void stop_and_check(const std::string& id, const std::set<uid_t>& role_uids) const {
        Result r = corral({"session", "stop", id});
        INFO(transcript(r));
        CHECK(r.exit_code == 0);
        nlohmann::json rec = record(id);
        INFO(rec.dump(2));
        CHECK(rec["state"] == "finished");
        CHECK(rec["outcome"] == "stopped");
        CHECK(rec["status"] == 143);
        CHECK(rec["teardown"]["verdict"] == "clean");
        for (uid_t uid : role_uids) {
            check_nothing_left(id, uid);
            CHECK_MESSAGE(processes_of_uid(uid).empty(), "a process of role uid " << uid << " survived");
            CHECK_MESSAGE(access(lock_path(uid).c_str(), F_OK) != 0, "lock of role uid " << uid << " left");
        }
    }
};

inline uid_t uid_of_exec(const nlohmann::json& exec) { return exec["uid"].get<uid_t>(); }

}  // namespace corral::test::sandbox
