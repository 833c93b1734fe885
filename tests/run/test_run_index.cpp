// run/run_index.hpp (reserving an id, finding a run) and run/refusal_report.hpp.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/sys_error.hpp"
#include "gateway/ledger.hpp"
#include "run/refusal_report.hpp"
#include "run/run_index.hpp"
#include "supervisor/run_record.hpp"

namespace corral::run {
namespace {

namespace fs = std::filesystem;

// A root-only state dir (reserve_run refuses anything else), removed after.
struct StateDir {
    fs::path path;
    StateDir() {
        char tmpl[] = "/run/corral-test-state-XXXXXX";
        path = ::mkdtemp(tmpl);
        ::chmod(path.c_str(), 0700);
    }
    ~StateDir() { fs::remove_all(path); }
};

bool running_as_root() { return ::geteuid() == 0; }

TEST_CASE("reserve_run: a drawn id already taken is never shared; the next draw is used" *
          doctest::skip(!running_as_root())) {
    StateDir st;
    int draws = 0;
    auto same_then_other = [&] { return ++draws <= 2 ? std::string("20261202T000000000Z-aaaaaa") : std::string("20261202T000000000Z-bbbbbb"); };
    auto first = reserve_run(st.path, std::nullopt, same_then_other);
    CHECK(first.id == "20261202T000000000Z-aaaaaa");
    CHECK(fs::is_directory(first.run_dir));
    CHECK((fs::status(first.run_dir).permissions() & fs::perms::all) == fs::perms::owner_all);
    auto second = reserve_run(st.path, std::nullopt, same_then_other);
    CHECK(second.id == "20261202T000000000Z-bbbbbb");  // the taken one was skipped
    CHECK(draws == 3);
    // A --run-dir elsewhere: the entry is a symlink to it.
    fs::path elsewhere = st.path / "elsewhere";
    fs::create_directory(elsewhere);
    auto third = reserve_run(st.path, elsewhere.string(), [] { return std::string("20261202T000000001Z-cccccc"); });
    CHECK(fs::read_symlink(st.path / "runs" / third.id) == elsewhere);
    CHECK(third.run_dir == elsewhere.string());
    // Always the same id: refused after a bounded number of draws, with a reason.
    CHECK_THROWS_WITH_AS(reserve_run(st.path, std::nullopt, [] { return std::string("20261202T000000000Z-aaaaaa"); }),
                         doctest::Contains("no free run id"), UsageError);
}

TEST_CASE("find_run: exact id, unique prefix, ambiguous and unknown ones named" * doctest::skip(!running_as_root())) {
    StateDir st;
    for (const char* id : {"20261202T010000000Z-aaaaaa", "20261202T010000000Z-aabbbb", "20261202T020000000Z-cccccc"})
        reserve_run(st.path, std::nullopt, [id] { return std::string(id); });
    std::ofstream(st.path / "runs/20261202T020000000Z-cccccc/run.json") << R"({"state":"finished","id":"x"})";
    CHECK(find_run(st.path, "20261202T02").id == "20261202T020000000Z-cccccc");
    CHECK(find_run(st.path, "20261202T02").state == "finished");
    CHECK(find_run(st.path, "20261202T010000000Z-aaaaaa").state == "starting");  // no run.json yet
    CHECK_THROWS_WITH_AS(find_run(st.path, "20261202T01"), doctest::Contains("ambiguous"), UsageError);
    CHECK_THROWS_WITH_AS(find_run(st.path, "2099"), doctest::Contains("no run \"2099\""), UsageError);
    CHECK_THROWS_WITH_AS(find_run(st.path, "../x"), doctest::Contains("expected an id"), UsageError);
    CHECK_THROWS_WITH_AS(find_run(st.path, "202"), doctest::Contains("no run"), UsageError);  // too short for a prefix
    auto all = list_runs(st.path);
    REQUIRE(all.size() == 3);
    CHECK(all[0].id == "20261202T020000000Z-cccccc");  // newest first
}

TEST_CASE("find_run: the box's hostname, any unique part of an id, and a running session's name select a run" *
          doctest::skip(!running_as_root())) {
    StateDir st;
    for (const char* id : {"20261202T010000000Z-3f9a1c", "20261202T010000000Z-77aa01", "20261202T020000000Z-77bb02"})
        reserve_run(st.path, std::nullopt, [id] { return std::string(id); });
    CHECK(find_run(st.path, "corral-3f9a1c").id == "20261202T010000000Z-3f9a1c");  // the hostname as the box shows it
    CHECK(find_run(st.path, "3f9a1c").id == "20261202T010000000Z-3f9a1c");
    CHECK(find_run(st.path, "9a1c").id == "20261202T010000000Z-3f9a1c");
    CHECK(find_run(st.path, "bb02").id == "20261202T020000000Z-77bb02");
    CHECK_THROWS_WITH_AS(find_run(st.path, "corral-77"), doctest::Contains("no run"), UsageError);  // 2 chars: too short
    CHECK_THROWS_WITH_AS(find_run(st.path, "Z-77"), doctest::Contains("2 runs contain it"), UsageError);
    // A prefix still wins over a part found elsewhere.
    CHECK(find_run(st.path, "20261202T02").id == "20261202T020000000Z-77bb02");

    // A running session's name: its record names it and its supervisor (this process) lives.
    auto me = supervisor::this_supervisor();
    nlohmann::json rec{{"state", "running"},
                       {"kind", "session"},
                       {"session", {{"name", "harness"}}},
                       {"supervisor", {{"pid", me.pid}, {"start_ticks", me.start_ticks}, {"boot_id", me.boot_id}}}};
    std::ofstream(st.path / "runs/20261202T010000000Z-77aa01/run.json") << rec.dump();
    CHECK(find_run(st.path, "harness").id == "20261202T010000000Z-77aa01");
    rec["state"] = "finished";  // an ended session's name is free again: no longer a handle
    std::ofstream(st.path / "runs/20261202T010000000Z-77aa01/run.json") << rec.dump();
    CHECK_THROWS_WITH_AS(find_run(st.path, "harness"), doctest::Contains("no run \"harness\""), UsageError);
}

TEST_CASE("run_id_of_dir: the run whose dir it is, however the path is written; none for another dir" *
          doctest::skip(!running_as_root())) {
    StateDir st;
    auto own = reserve_run(st.path, std::nullopt, [] { return std::string("20261205T000000000Z-aaaaaa"); });
    fs::path elsewhere = st.path / "elsewhere";
    fs::create_directory(elsewhere);
    auto linked = reserve_run(st.path, elsewhere.string(), [] { return std::string("20261205T000000001Z-bbbbbb"); });
    CHECK(run_id_of_dir(st.path.string(), own.run_dir) == own.id);
    CHECK(run_id_of_dir(st.path.string(), own.run_dir + "/../" + own.id + "/.") == own.id);
    CHECK(run_id_of_dir(st.path.string(), elsewhere.string()) == linked.id);  // --run-dir: through its link
    CHECK(run_id_of_dir(st.path.string(), elsewhere.string(), own.id) == linked.id);  // a wrong guess: still found
    CHECK(run_id_of_dir(st.path.string(), own.run_dir, "../runs") == own.id);          // a guess that is no id: ignored
    CHECK(run_id_of_dir(st.path.string(), st.path.string()) == std::nullopt);
    CHECK(run_id_of_dir((st.path / "none").string(), own.run_dir) == std::nullopt);  // a state dir without runs
    CHECK_THROWS_AS(run_id_of_dir(st.path.string(), (st.path / "gone").string()), SysError);
}

TEST_CASE("live_state: a running record whose supervisor is gone is lost; this process is running") {
    nlohmann::json rec{{"state", "running"}, {"supervisor", {{"pid", 0}, {"start_ticks", 0}, {"boot_id", ""}}}};
    CHECK(live_state(rec) == "lost");
    auto me = supervisor::this_supervisor();
    rec["supervisor"] = {{"pid", me.pid}, {"start_ticks", me.start_ticks}, {"boot_id", me.boot_id}};
    CHECK(live_state(rec) == "running");
    rec["supervisor"]["start_ticks"] = me.start_ticks + 1;  // the pid reused by another process
    CHECK(live_state(rec) == "lost");
    CHECK(live_state(nlohmann::json{{"state", "finished"}}) == "finished");
    CHECK(live_state(nlohmann::json{{"id", "old"}}) == "finished");  // records from before "state" are final
}

TEST_CASE("refusal report: one line per host:port, with the reason and what would allow it") {
    RefusalReport report;
    std::vector<gateway::RefusalNotice> n{{"example.com", 443, "CONNECT", "", "not_granted", 403, 1}};
    auto first = report.new_lines(n);
    REQUIRE(first.size() == 1);
    CHECK(first[0] == "refused CONNECT example.com:443 (not_granted, 403): no grant covers example.com:443; to allow "
                      "it, add a [[grants]] entry with host = \"example.com\", port = 443, mode = \"tunnel\" to "
                      "worker.toml, or pass --allow example.com:443 for one run");
    n[0].count = 9;  // the same host:port again: nothing new
    CHECK(report.new_lines(n).empty());
    n.push_back({"10.0.0.1", 80, "GET", "", "numeric_host", 403, 1});
    auto second = report.new_lines(n);
    REQUIRE(second.size() == 1);
    CHECK(second[0].find("GET 10.0.0.1:80 (numeric_host, 403): requests must name a host") != std::string::npos);
}

TEST_CASE("refusal report under --gateway names the daemon's organisation, never --allow (refused there)") {
    RefusalReport report;
    std::vector<gateway::RefusalNotice> n{{"example.com", 443, "CONNECT", "", "not_granted", 403, 1}};
    auto lines = report.new_lines(n, gateway::GrantsFrom::daemon);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0] == "refused CONNECT example.com:443 (not_granted, 403): no grant covers example.com:443; to allow "
                      "it, add a [[grants]] entry with host = \"example.com\", port = 443, mode = \"tunnel\" to the "
                      "`corral gateway` daemon's organisation (org.toml, or the worker's worker.toml, under its --org "
                      "DIR) and restart the daemon; --allow is refused with --gateway");
    CHECK(lines[0].find("pass --allow") == std::string::npos);
    // A session's listeners are told the same way.
    RefusalListeners listeners;
    std::vector<std::string> told;
    listeners.add("agent", [&](const std::string& l) { told.push_back(l); });
    listeners.deliver(n, gateway::GrantsFrom::daemon);
    REQUIRE(told.size() == 1);
    CHECK(told[0] == lines[0]);
}

TEST_CASE("refusal report: a loopback target is told the grant that reaches it, and that it is the host's loopback") {
    RefusalReport report;
    std::vector<gateway::RefusalNotice> n{{"localhost", 8080, "CONNECT", "", "not_granted", 403, 1},
                                          {"127.0.0.1", 5432, "CONNECT", "", "not_granted", 403, 1},
                                          {"::1", 9000, "CONNECT", "", "not_granted", 403, 1},
                                          {"db.localhost", 80, "GET", "", "private_address", 403, 1},
                                          {"internal.example", 443, "CONNECT", "", "private_address", 403, 1}};
    auto lines = report.new_lines(n);
    REQUIRE(lines.size() == 5);
    // A name: allow_private in a file, or the address through --allow (a name given to --allow must be public).
    CHECK(lines[0] == "refused CONNECT localhost:8080 (not_granted, 403): no grant covers localhost:8080; to allow it, "
                      "add a [[grants]] entry with host = \"localhost\", port = 8080, mode = \"tunnel\", "
                      "allow_private = true to worker.toml (--allow localhost:8080 is not enough: a name given to "
                      "--allow must resolve to public addresses; or have the client ask for 127.0.0.1:8080 and pass "
                      "--allow 127.0.0.1:8080); the gateway dials from the host, so this reaches the host's loopback, "
                      "not the box's");
    // An address: --allow ADDRESS grants it (naming it is the consent).
    CHECK(lines[1].find("host = \"127.0.0.1\", port = 5432, mode = \"tunnel\", allow_private = true to worker.toml, "
                        "or pass --allow 127.0.0.1:5432 for one run; the gateway dials from the host") != std::string::npos);
    CHECK(lines[2].find("host = \"[::1]\", port = 9000") != std::string::npos);
    CHECK(lines[2].find("--allow [::1]:9000 for one run") != std::string::npos);
    // A grant that exists but lacks allow_private: set it, never "no grant reaches".
    CHECK(lines[3].find("which a grant reaches only with allow_private = true: set it on the grant for db.localhost:80 "
                        "in worker.toml or org.toml (--allow db.localhost:80 is not enough") != std::string::npos);
    CHECK(lines[3].find("reaches the host's loopback") != std::string::npos);
    CHECK(lines[4].find("set it on the grant for internal.example:443 in worker.toml or org.toml") != std::string::npos);
    CHECK(lines[4].find("127.0.0.1") == std::string::npos);  // not a loopback name: no loopback advice
    CHECK(lines[4].find("host's loopback") == std::string::npos);
    for (const auto& l : lines) CHECK(l.find("which no grant reaches") == std::string::npos);
    // Under --gateway: the daemon's files, allow_private set there.
    RefusalReport daemon;
    auto d = daemon.new_lines({n[0]}, gateway::GrantsFrom::daemon);
    REQUIRE(d.size() == 1);
    CHECK(d[0].find("allow_private = true to the `corral gateway` daemon's organisation") != std::string::npos);
    CHECK(d[0].find("pass --allow") == std::string::npos);
}

TEST_CASE("refusal report: the box's host and method are shown escaped, in the line and in its advice") {
    RefusalReport report;
    std::vector<gateway::RefusalNotice> n{{"a\xc2\x9b" "2J\x9d" "0;t\x1b", 443, "GET\x9b", "", "not_granted", 403, 1}};
    auto lines = report.new_lines(n);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].starts_with("refused GET\\x9b a\\u009b2J\\x9d0;t\\x1b:443 (not_granted, 403): no grant covers "
                               "a\\u009b2J\\x9d0;t\\x1b:443;"));
    for (char raw : {'\x1b', '\x9b', '\x9d'}) CHECK(lines[0].find(raw) == std::string::npos);
}

TEST_CASE("refusal listeners: a refusal made while a listener listens is told to it once, by role") {
    RefusalListeners listeners;
    std::vector<gateway::RefusalNotice> n{{"early.example", 443, "CONNECT", "", "not_granted", 403, 1, "agent"}};
    listeners.deliver(n, gateway::GrantsFrom::run);  // before anyone listens: told to no one later
    std::vector<std::string> agent, service;
    const int a = listeners.add("agent", [&](const std::string& l) { agent.push_back(l); });
    const int s = listeners.add("service", [&](const std::string& l) { service.push_back(l); });
    listeners.deliver(n, gateway::GrantsFrom::run);
    CHECK(agent.empty());
    n.push_back({"new.example", 80, "GET", "", "not_granted", 403, 1, "agent"});
    listeners.deliver(n, gateway::GrantsFrom::run);
    listeners.deliver(n, gateway::GrantsFrom::run);  // nothing new
    REQUIRE(agent.size() == 1);
    CHECK(agent[0].rfind("refused GET new.example:80 (not_granted, 403)", 0) == 0);
    CHECK(service.empty());
    n[0].count = 2;  // refused again, now: told, once
    n[0].role = "";  // a daemon's counts name no role: every listener
    listeners.deliver(n, gateway::GrantsFrom::run);
    n[0].count = 3;
    listeners.deliver(n, gateway::GrantsFrom::run);
    CHECK(agent.size() == 2);
    REQUIRE(service.size() == 1);
    CHECK(service[0].rfind("refused CONNECT early.example:443", 0) == 0);
    listeners.remove(a);
    listeners.remove(s);
    n[1].count = 2;
    listeners.deliver(n, gateway::GrantsFrom::run);
    CHECK(agent.size() == 2);
}

}  // namespace
}  // namespace corral::run
