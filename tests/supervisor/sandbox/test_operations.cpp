// Day-2 operations against live runs: the run's identity and run.json from
// start to end, `corral ps/logs/inspect/stop`, graceful stops (a TERM trap
// runs, SIGKILL after the grace, a second signal kills at once), a closed
// stdout ending the run, and a killed supervisor's run shown as lost.
#include <dirent.h>
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <thread>

#include "tests/supervisor/sandbox/sandbox_support.hpp"

namespace corral::test::sandbox {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// A state dir of this test's own, so `corral ps` lists only its runs.
struct StateDir {
    std::string path = fresh_dir("state", 0700);
    CorralArgs args(std::vector<std::string> extra = {}) const {
        CorralArgs a;
        a.flags = {"--state-dir", path};
        a.flags.insert(a.flags.end(), extra.begin(), extra.end());
        return a;
    }
    Result corral(std::vector<std::string> argv) const {
        std::vector<std::string> full{corral_bin()};
        full.insert(full.end(), argv.begin(), argv.end());
        full.push_back("--state-dir");
        full.push_back(path);
        return run(full, RunOptions{std::chrono::seconds(60)});
    }
};

json parse_or_fail(const std::string& text) {
    auto j = json::parse(text, nullptr, false);
    REQUIRE_MESSAGE(!j.is_discarded(), "not JSON: " << text);
    return j;
}

// The run id corral printed at start ("corral run: run ID, run dir DIR").
std::string printed_run_id(const std::string& err) {
    const std::string head = "corral run: run ";
    auto at = err.find(head);
    if (at == std::string::npos) return {};
    auto end = err.find(',', at);
    return err.substr(at + head.size(), end - at - head.size());
}

bool wait_for_state(const StateDir& st, const std::string& id, const std::string& state, std::chrono::seconds bound) {
    auto until = std::chrono::steady_clock::now() + bound;
    while (std::chrono::steady_clock::now() < until) {
        auto r = st.corral({"inspect", id});
        if (r.exit_code == 0 && parse_or_fail(r.out).value("state", "") == state) return true;
        std::this_thread::sleep_for(50ms);
    }
    return false;
}

const char* kTrapScript = "trap 'echo trapped; exit 7' TERM; echo ready; while :; do sleep 0.1; done";
const char* kIgnoreTermScript = "trap 'echo ignoring' TERM; echo ready; while :; do sleep 0.1; done";

TEST_CASE("a live run: id and run dir printed, run.json running, ps/logs/inspect see it, stop ends it") {
    StateDir st;
    CorralProcess p({"/bin/sh", "-c", kTrapScript}, st.args());
    REQUIRE_MESSAGE(p.wait_for_out("ready", 30s), p.err());
    const std::string id = printed_run_id(p.err());
    INFO("stderr: " << p.err());
    REQUIRE(!id.empty());
    CHECK(p.err().find("run dir " + p.run_dir()) != std::string::npos);

    // run.json exists while the run is alive, and says so.
    auto rec = read_record(p.run_dir());
    REQUIRE(rec.has_value());
    CHECK((*rec)["state"] == "running");
    CHECK((*rec)["id"] == id);
    CHECK((*rec)["ended_at"].is_null());
    CHECK((*rec)["status"].is_null());
    CHECK((*rec)["supervisor"]["pid"] == p.pid());
    CHECK((*rec)["uid"].get<int>() > 0);

    auto ps = st.corral({"ps", "--json"});
    REQUIRE(ps.exit_code == 0);
    auto list = parse_or_fail(ps.out);
    REQUIRE(list.size() == 1);
    CHECK(list[0]["id"] == id);
    CHECK(list[0]["state"] == "running");
    CHECK(list[0]["argv"][0] == "/bin/sh");
    CHECK(list[0]["uptime_ms"].is_number());
    auto table = st.corral({"ps"});
    CHECK(table.out.find(id) != std::string::npos);
    CHECK(table.out.find("running") != std::string::npos);

    auto logs = st.corral({"logs", id.substr(0, 22)});  // a unique prefix is enough
    CHECK(logs.exit_code == 0);
    CHECK(logs.out == "ready\n");
    auto inspect = st.corral({"inspect", id});
    CHECK(parse_or_fail(inspect.out)["state"] == "running");

    auto stop = st.corral({"stop", "--grace", "20s", id});
    INFO("stop: " << transcript(stop));
    CHECK(stop.exit_code == 0);
    CHECK(stop.err.find("stopped, teardown clean") != std::string::npos);
    CHECK(p.wait() == 128 + SIGTERM);
    CHECK(p.out().find("trapped") != std::string::npos);  // the TERM trap ran
    rec = read_record(p.run_dir());
    REQUIRE(rec.has_value());
    CHECK((*rec)["state"] == "finished");
    CHECK((*rec)["outcome"] == "stopped");
    CHECK((*rec)["status_from"] == "corral");
    CHECK((*rec)["status"] == 143);
    CHECK((*rec)["stop"]["cause"] == "corral stop");
    CHECK((*rec)["stop"]["grace_ms"] == 20000);
    CHECK((*rec)["stop"]["killed"] == false);
    CHECK((*rec)["cpu_usec"].is_number());
    CHECK((*rec)["peak_pids"].is_number());
    // The summary line names the outcome and the record.
    CHECK(p.err().find(id + ": stopped by `corral stop` (143)") != std::string::npos);
    CHECK(p.err().find("record " + p.run_dir() + "/run.json") != std::string::npos);
    check_nothing_left(id, (*rec)["uid"].get<uid_t>());

    // Finished runs: not in ps, in ps -a; a second stop says it is not running.
    CHECK(parse_or_fail(st.corral({"ps", "--json"}).out).empty());
    CHECK(parse_or_fail(st.corral({"ps", "--json", "-a"}).out).size() == 1);
    // ps -a says how it ended and when, and shows the command as a shell would take it.
    auto all = st.corral({"ps", "-a"});
    INFO(all.out);
    CHECK(all.out.find("OUTCOME") != std::string::npos);
    CHECK(all.out.find("stopped 143") != std::string::npos);
    CHECK(all.out.find("s ago") != std::string::npos);
    CHECK(all.out.find("/bin/sh -c 'trap") != std::string::npos);
    auto again = st.corral({"stop", id});
    CHECK(again.exit_code == 1);
    CHECK(again.err.find("not running (state finished)") != std::string::npos);
}

TEST_CASE("a plain `corral stop ID` (no --grace) is recorded as stopped by corral stop, with the run's own grace") {
    StateDir st;
    auto args = st.args();
    args.flags.insert(args.flags.end(), {"--grace", "3s"});
    CorralProcess p({"/bin/sh", "-c", "echo ready; sleep 600"}, args);
    REQUIRE(p.wait_for_out("ready", 30s));
    const std::string id = printed_run_id(p.err());
    auto stop = st.corral({"stop", id});
    INFO("stop: " << transcript(stop));
    CHECK(stop.exit_code == 0);
    CHECK(p.wait() == 128 + SIGTERM);
    auto rec = read_record(p.run_dir());
    REQUIRE(rec.has_value());
    CHECK((*rec)["outcome"] == "stopped");
    CHECK((*rec)["stop"]["cause"] == "corral stop");
    CHECK((*rec)["stop"]["grace_ms"] == 3000);
    CHECK(p.err().find(id + ": stopped by `corral stop` (143)") != std::string::npos);
}

TEST_CASE("the deadline stops gracefully: the trap runs within the grace; a command ignoring TERM is killed after it") {
    StateDir st;
    auto graceful = corral_sh(kTrapScript, st.args({"--timeout", "1s", "--grace", "20s"}));
    INFO(transcript(graceful.result));
    CHECK(graceful.result.exit_code == 124);
    CHECK(graceful.result.out.find("trapped") != std::string::npos);
    REQUIRE(graceful.record.has_value());
    CHECK((*graceful.record)["outcome"] == "deadline");
    CHECK((*graceful.record)["stop"]["cause"] == "deadline");
    CHECK((*graceful.record)["stop"]["killed"] == false);
    CHECK((*graceful.record)["exit_code"] == 7);
    check_nothing_left(graceful);

    auto stubborn = corral_sh(kIgnoreTermScript, st.args({"--timeout", "1s", "--grace", "1s"}));
    INFO(transcript(stubborn.result));
    CHECK(stubborn.result.exit_code == 124);
    CHECK(stubborn.result.out.find("ignoring") != std::string::npos);  // it got the TERM
    REQUIRE(stubborn.record.has_value());
    CHECK((*stubborn.record)["stop"]["killed"] == true);
    CHECK((*stubborn.record)["stop"]["grace_ms"] == 1000);
    CHECK(stubborn.result.err.find("still running after the 1s grace; sandbox killed") != std::string::npos);
    check_nothing_left(stubborn);

    auto at_once = corral_sh(kTrapScript, st.args({"--timeout", "1s", "--grace", "0"}));
    CHECK(at_once.result.exit_code == 124);
    CHECK(at_once.result.out.find("trapped") == std::string::npos);
    REQUIRE(at_once.record.has_value());
    CHECK((*at_once.record)["stop"]["killed"] == true);
    check_nothing_left(at_once);
}

TEST_CASE("SIGTERM to corral stops gracefully; a second signal during the grace kills at once") {
    StateDir st;
    {
        CorralProcess p({"/bin/sh", "-c", kTrapScript}, st.args());
        REQUIRE(p.wait_for_out("ready", 30s));
        p.signal(SIGTERM);
        CHECK(p.wait() == 128 + SIGTERM);
        CHECK(p.out().find("trapped") != std::string::npos);
        auto rec = read_record(p.run_dir());
        REQUIRE(rec.has_value());
        CHECK((*rec)["outcome"] == "interrupted");
        CHECK((*rec)["stop"]["cause"] == "signal");
        CHECK((*rec)["stop"]["signal"] == "SIGTERM");
        CHECK((*rec)["stop"]["second_signal"].is_null());
        check_nothing_left((*rec)["id"].get<std::string>(), (*rec)["uid"].get<uid_t>());
    }
    {
        CorralProcess p({"/bin/sh", "-c", kIgnoreTermScript}, st.args({"--grace", "10m"}));
        REQUIRE(p.wait_for_out("ready", 30s));
        p.signal(SIGINT);
        REQUIRE(p.wait_for_out("ignoring", 30s));
        p.signal(SIGINT);  // the operator insists: no 10-minute wait
        CHECK(p.wait(30s) == 128 + SIGINT);
        auto rec = read_record(p.run_dir());
        REQUIRE(rec.has_value());
        CHECK((*rec)["stop"]["killed"] == true);
        CHECK((*rec)["stop"]["second_signal"] == "SIGINT");
        // What happened, not a grace that never ran out.
        CHECK(p.err().find("interrupted by SIGINT; CMD got SIGTERM; a second SIGINT killed the sandbox at once, "
                           "before its 600s grace ran out") != std::string::npos);
        CHECK(p.err().find("after the 600s grace") == std::string::npos);
        CHECK((*rec)["teardown"]["verdict"] == "clean");
        check_nothing_left((*rec)["id"].get<std::string>(), (*rec)["uid"].get<uid_t>());
    }
}

TEST_CASE("a closed stdout ends the run: `corral run -- yes | head -2` returns, the log keeps what was produced") {
    StateDir st;
    const std::string run_dir = fresh_path("run");
    std::string line;
    for (const auto& a : corral_argv(st.args(), run_dir, {"/bin/yes"})) line += "'" + a + "' ";
    auto r = run({"/bin/sh", "-c", line + "| head -2"}, RunOptions{std::chrono::seconds(60)});
    INFO(transcript(r));
    CHECK(!r.timed_out);
    CHECK(r.out == "y\ny\n");
    auto rec = read_record(run_dir);
    REQUIRE(rec.has_value());
    CHECK((*rec)["output"]["stdout"]["reader_gone"] == true);
    CHECK((*rec)["signal"] == SIGPIPE);  // yes died of the SIGPIPE it got
    CHECK((*rec)["outcome"] == "killed");
    CHECK((*rec)["status_from"] == "command");
    const auto logged = (*rec)["output"]["stdout"]["logged"].get<std::uint64_t>();
    CHECK(logged >= 4);
    CHECK(read_file(run_dir + "/stdout.log").size() == logged);
    check_nothing_left((*rec)["id"].get<std::string>(), (*rec)["uid"].get<uid_t>());
}

TEST_CASE("a killed supervisor's run is shown as lost; concurrent runs get distinct ids in start order") {
    StateDir st;
    {
        CorralProcess p({"/bin/sh", "-c", "echo ready; sleep 600"}, st.args());
        REQUIRE(p.wait_for_out("ready", 30s));
        const std::string id = printed_run_id(p.err());
        p.kill_supervisor_only();
        p.wait();
        CHECK(wait_for_state(st, id, "lost", 10s));
        auto ps = parse_or_fail(st.corral({"ps", "--json", "-a"}).out);
        REQUIRE(ps.size() == 1);
        CHECK(ps[0]["state"] == "lost");
        auto stop = st.corral({"stop", id});
        CHECK(stop.exit_code == 1);
        CHECK(stop.err.find("not running (state lost)") != std::string::npos);
    }
    // Four at once: four ids, four entries, sorted by start (newest first in ps).
    std::vector<std::unique_ptr<CorralProcess>> runs;
    for (int i = 0; i < 4; ++i) runs.push_back(std::make_unique<CorralProcess>(std::vector<std::string>{"/bin/true"}, st.args()));
    std::set<std::string> ids;
    for (auto& p : runs) {
        CHECK(p->wait() == 0);
        ids.insert(printed_run_id(p->err()));
    }
    CHECK(ids.size() == 4);
    auto all = parse_or_fail(st.corral({"ps", "--json", "-a"}).out);
    REQUIRE(all.size() == 5);
    for (std::size_t i = 1; i < all.size(); ++i)
        CHECK(all[i - 1]["id"].get<std::string>() > all[i]["id"].get<std::string>());
}

TEST_CASE("the pids limit reached is said like the OOM kill, and counted; CPU time and peaks are always recorded") {
    StateDir st;
    auto r = corral_sh("for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 2 & done; wait; echo done",
                       st.args({"--pids", "6"}));
    INFO(transcript(r.result));
    REQUIRE(r.record.has_value());
    CHECK((*r.record)["pids_limit_hits"].get<int>() > 0);
    CHECK(r.result.err.find("the sandbox reached its process limit (6 pids): ") != std::string::npos);
    CHECK(r.result.err.find("raise --pids") != std::string::npos);
    CHECK((*r.record)["peak_pids"].get<int>() <= 6);
    check_nothing_left(r);

    auto plain = corral_sh("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done", st.args());
    REQUIRE(plain.record.has_value());
    CHECK((*plain.record)["limits"]["pids"].is_null());
    CHECK((*plain.record)["peak_pids"].get<int>() >= 1);   // without a limit too
    CHECK((*plain.record)["peak_memory_bytes"].get<std::uint64_t>() > 0);
    CHECK((*plain.record)["cpu_usec"].get<std::uint64_t>() > 0);
    CHECK((*plain.record)["pids_limit_hits"] == 0);
    CHECK(plain.result.err.find("process limit") == std::string::npos);
}

TEST_CASE("bad input to ps, logs, stop, inspect and --grace gets one clear line") {
    StateDir st;
    auto no_id = st.corral({"stop"});
    CHECK(no_id.exit_code == 2);
    CHECK(no_id.err.find("expected one run id") != std::string::npos);
    auto unknown = st.corral({"inspect", "20991231T000000000Z-000000"});
    CHECK(unknown.exit_code == 125);
    CHECK(unknown.err.find("no run \"20991231T000000000Z-000000\"") != std::string::npos);
    auto bad_id = st.corral({"logs", "../etc"});
    CHECK(bad_id.exit_code == 125);
    CHECK(bad_id.err.find("expected an id as `corral ps` shows it") != std::string::npos);
    auto bad_opt = st.corral({"ps", "--bogus"});
    CHECK(bad_opt.exit_code == 2);
    CHECK(bad_opt.err.find("unknown option \"--bogus\"") != std::string::npos);
    auto bad_grace = st.corral({"stop", "--grace", "soon", "x"});
    CHECK(bad_grace.exit_code == 2);
    CHECK(bad_grace.err.find("--grace") != std::string::npos);
    auto run_grace = corral_run({"/bin/true"}, st.args({"--grace", "-1s"}));
    CHECK(run_grace.result.exit_code == 2);
    CHECK(run_grace.result.err.find("--grace") != std::string::npos);
}

// Root must not create, open or lock anything in a state dir someone else
// could change (through a symlink root would write where they chose; a lock
// file they opened first would hang root): every command checks it first.
TEST_CASE("every command refuses a state dir someone else could change, before creating anything in it") {
    const std::string users = fresh_dir("users-state", 0700);
    REQUIRE(chown(users.c_str(), 4321, 4321) == 0);
    const std::string group = fresh_dir("group-state", 0770);
    const std::string link = fresh_path("state-link");
    REQUIRE(symlink(users.c_str(), link.c_str()) == 0);
    using Argv = std::vector<std::string>;
    auto commands = [](const std::string& d) -> std::vector<Argv> {
        const Argv sd{"--state-dir", d};
        auto with = [&](Argv a) { return a.insert(a.end(), sd.begin(), sd.end()), a; };
        return {with({"session", "start", "--name", "x", "--rootfs", rootfs(), "--uid-range", uid_range()}),
                with({"run", "--rootfs", rootfs(), "--uid-range", uid_range()}), with({"ps"}), with({"inspect", "abcd"}),
                with({"logs", "abcd"}), with({"stop", "abcd"}), with({"session", "ls"}), with({"session", "stop", "x"}),
                with({"image", "ls"}), with({"journal", "verify", "/dev/null"}),
                {"exec", "--state-dir", d, "x", "--", "/bin/true"}};
    };
    for (const auto& [dir, says] : {std::pair{users, std::string(" is owned by uid 4321")},
                                    std::pair{group, std::string(" is writable by group or others")},
                                    std::pair{link, std::string(" is owned by uid 4321")}})
        for (Argv argv : commands(dir)) {
            if (argv.front() == "run") argv.insert(argv.end(), {"--", "/bin/true"});
            argv.insert(argv.begin(), corral_bin());
            Result r = run(argv, RunOptions{std::chrono::seconds(30)});
            INFO(transcript(r));
            CHECK(r.exit_code != 0);
            CHECK(r.err.find(dir) != std::string::npos);
            CHECK(r.err.find(says) != std::string::npos);
            for (const auto& d : {users, group}) {
                DIR* listing = opendir(d.c_str());
                REQUIRE(listing != nullptr);
                int entries = 0;
                while (dirent* e = readdir(listing))
                    entries += std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..";
                closedir(listing);
                CHECK_MESSAGE(entries == 0, "root created something in " << d);
            }
        }
}

TEST_CASE("prune removes ended runs and their dirs, says so, keeps a running run and a --run-dir of the operator's") {
    StateDir st;
    CorralArgs in_state = st.args();
    in_state.own_run_dir = false;  // run dirs under STATE/runs
    std::vector<std::string> ended;
    for (int i = 0; i < 2; ++i) {
        auto r = corral_run({"/bin/echo", "ended"}, in_state);
        REQUIRE(r.result.exit_code == 0);
        ended.push_back(printed_run_id(r.result.err));
    }
    auto elsewhere = corral_run({"/bin/echo", "elsewhere"}, st.args());  // --run-dir of the test's own
    REQUIRE(elsewhere.result.exit_code == 0);
    const std::string elsewhere_id = printed_run_id(elsewhere.result.err);
    CorralProcess live({"/bin/sh", "-c", "echo ready; sleep 600"}, in_state);
    REQUIRE(live.wait_for_out("ready", 20s));
    const std::string live_id = printed_run_id(live.err());

    auto dry = st.corral({"prune", "--older-than", "0s", "--dry-run"});
    INFO(transcript(dry));
    CHECK(dry.exit_code == 0);
    CHECK(dry.out.find("would remove 3 runs") != std::string::npos);
    for (const auto& id : ended) CHECK(::access((st.path + "/runs/" + id).c_str(), F_OK) == 0);

    auto pruned = st.corral({"prune", "--older-than", "0s", "--json"});
    INFO(transcript(pruned));
    REQUIRE(pruned.exit_code == 0);
    const json report = parse_or_fail(pruned.out);
    CHECK(report["removed"].size() == 3);
    CHECK(report["bytes"].get<std::uint64_t>() > 0);
    for (const auto& id : ended) CHECK(::access((st.path + "/runs/" + id).c_str(), F_OK) != 0);
    struct stat lst {};
    CHECK(::lstat((st.path + "/runs/" + elsewhere_id).c_str(), &lst) != 0);       // its entry is gone
    CHECK(::access((elsewhere.run_dir + "/run.json").c_str(), F_OK) == 0);        // its directory is the operator's
    CHECK(::access((st.path + "/runs/" + live_id + "/run.json").c_str(), F_OK) == 0);  // never a running run
    const json left = parse_or_fail(st.corral({"ps", "--json", "-a"}).out);
    REQUIRE(left.size() == 1);
    CHECK(left[0]["id"] == live_id);

    auto nothing = st.corral({"prune"});  // the default retention keeps what just ended
    CHECK(nothing.out.find("removed 0 runs") != std::string::npos);
    CHECK(st.corral({"stop", "--grace", "0", live_id}).exit_code == 0);
    live.wait();
}

}  // namespace
}  // namespace corral::test::sandbox
