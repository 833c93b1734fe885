// run.json: the contract's shape, nulls, atomic replace.
#include <doctest/doctest.h>
#include <unistd.h>

#include <csignal>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/sys_error.hpp"
#include "supervisor/run_record.hpp"

using namespace corral::supervisor;
using std::chrono::milliseconds;
using std::chrono::system_clock;

namespace {

std::string make_temp_dir() {
    char tmpl[] = "/tmp/corral-runrecord-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    return tmpl;
}

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

RunRecord sample_record() {
    RunRecord r;
    r.id = "20261130T053107Z-a1b2c3";
    r.argv = {"/bin/sh", "-c", "echo hi"};
    r.uid = 1900000007;
    r.gid = 1900000007;
    r.hostname = "corral-a1b2c3";
    r.rootfs = "host";
    r.started_at = system_clock::time_point(milliseconds(1700000000123));
    r.ended_at = system_clock::time_point(milliseconds(1700000001623));
    r.exit_code = 0;
    r.status = 0;
    r.state = "finished";
    r.outcome = Outcome::exited;
    r.teardown.steps = {{"kill_init", true, "pidfd_send_signal(SIGKILL)"}, {"uid_sweep", true, "no process left"}};
    return r;
}

}  // namespace

TEST_CASE("RFC3339 timestamps are UTC with milliseconds") {
    CHECK(format_rfc3339_ms(system_clock::time_point(milliseconds(0))) == "1970-01-01T00:00:00.000Z");
    CHECK(format_rfc3339_ms(system_clock::time_point(milliseconds(1700000000123))) == "2023-11-14T22:13:20.123Z");
    CHECK(format_rfc3339_ms(system_clock::time_point(milliseconds(951782400999))) == "2000-02-29T00:00:00.999Z");
    CHECK(format_rfc3339_ms(system_clock::time_point(milliseconds(-1))) == "1969-12-31T23:59:59.999Z");
}

TEST_CASE("to_json has every contract field, with null for what is absent") {
    RunRecord r = sample_record();
    auto j = to_json(r);
    for (const char* key : {"id", "argv", "uid", "gid", "hostname", "rootfs", "workspace", "started_at", "ended_at",
                            "duration_ms", "exit_code", "signal", "deadline_hit", "limits", "peak_memory_bytes",
                            "peak_pids", "teardown", "status"})
        CHECK_MESSAGE(j.contains(key), key);
    CHECK(j["id"] == "20261130T053107Z-a1b2c3");
    CHECK(j["argv"] == nlohmann::json::array({"/bin/sh", "-c", "echo hi"}));
    CHECK(j["uid"] == 1900000007u);
    CHECK(j["workspace"].is_null());
    CHECK(j["started_at"] == "2023-11-14T22:13:20.123Z");
    CHECK(j["ended_at"] == "2023-11-14T22:13:21.623Z");
    CHECK(j["duration_ms"] == 1500);
    CHECK(j["exit_code"] == 0);
    CHECK(j["signal"].is_null());
    CHECK(j["deadline_hit"] == false);
    for (const char* key : {"memory_bytes", "pids", "cpus", "timeout_ms"}) {
        REQUIRE(j["limits"].contains(key));
        CHECK_MESSAGE(j["limits"][key].is_null(), key);
    }
    CHECK(j["peak_memory_bytes"].is_null());
    CHECK(j["peak_pids"].is_null());
    CHECK(j["teardown"]["verdict"] == "clean");
    CHECK(j["teardown"]["problems"] == nlohmann::json::array());
    REQUIRE(j["teardown"]["steps"].size() == 2);
    CHECK(j["teardown"]["steps"][0] == nlohmann::json({{"step", "kill_init"}, {"ok", true}, {"detail", "pidfd_send_signal(SIGKILL)"}}));
    CHECK(j["status"] == 0);
}

TEST_CASE("to_json carries limits, signals, peaks and a failed teardown") {
    RunRecord r = sample_record();
    r.workspace = "/home/u/project";
    r.exit_code.reset();
    r.signal = 9;
    r.deadline_hit = true;
    r.limits.memory_bytes = 64ull << 20;
    r.limits.pids = 32;
    r.limits.cpus = 1.5;
    r.timeout = milliseconds(30000);
    r.peak_memory_bytes = 12345678;
    r.peak_pids = 7;
    r.teardown.steps.push_back({"cgroup_removed", false, "rmdir: Device or resource busy"});
    r.teardown.problems = {"1 process of uid 1900000007 left: 4242"};
    r.status = 126;
    auto j = to_json(r);
    CHECK(j["workspace"] == "/home/u/project");
    CHECK(j["exit_code"].is_null());
    CHECK(j["signal"] == 9);
    CHECK(j["deadline_hit"] == true);
    CHECK(j["limits"]["memory_bytes"] == 67108864u);
    CHECK(j["limits"]["pids"] == 32u);
    CHECK(j["limits"]["cpus"] == doctest::Approx(1.5));
    CHECK(j["limits"]["timeout_ms"] == 30000);
    CHECK(j["peak_memory_bytes"] == 12345678u);
    CHECK(j["peak_pids"] == 7u);
    CHECK(j["teardown"]["verdict"] == "failed");
    CHECK(j["teardown"]["problems"][0] == "1 process of uid 1900000007 left: 4242");
    CHECK(j["status"] == 126);
}

TEST_CASE("a failed step alone makes the verdict failed") {
    TeardownReport t;
    CHECK(t.clean());
    t.steps.push_back({"reap_init", true, ""});
    CHECK(t.verdict() == "clean");
    t.steps.push_back({"pid_namespace_gone", false, "still present"});
    CHECK(t.verdict() == "failed");
}

TEST_CASE("write_run_record writes run.json 0600 and replaces it atomically") {
    std::string dir = make_temp_dir();
    RunRecord r = sample_record();
    write_run_record(dir, r);
    std::string path = dir + "/run.json";
    auto first = nlohmann::json::parse(slurp(path));
    CHECK(first == to_json(r));
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);

    // A reader holding the old file keeps reading the complete old record while the
    // new one replaces it (rename, never an in-place rewrite).
    int old_fd = ::open(path.c_str(), O_RDONLY);
    REQUIRE(old_fd >= 0);
    r.status = 126;
    r.teardown.problems = {"something survived"};
    write_run_record(dir, r);
    std::string old_text(8192, '\0');
    ssize_t n = ::read(old_fd, old_text.data(), old_text.size());
    ::close(old_fd);
    REQUIRE(n > 0);
    old_text.resize(static_cast<std::size_t>(n));
    CHECK(nlohmann::json::parse(old_text)["status"] == 0);
    auto second = nlohmann::json::parse(slurp(path));
    CHECK(second["status"] == 126);
    CHECK(second["teardown"]["verdict"] == "failed");

    // Nothing but run.json is left in the directory.
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename());
    CHECK(names == std::vector<std::string>{"run.json"});
    std::filesystem::remove_all(dir);
}

TEST_CASE("a running record: its supervisor, no end, no status; outcome says whose status a finished one is") {
    RunRecord r = sample_record();
    r.state = "running";
    r.outcome.reset();
    r.supervisor = this_supervisor();
    auto j = to_json(r);
    CHECK(j["state"] == "running");
    CHECK(j["ended_at"].is_null());
    CHECK(j["duration_ms"].is_null());
    CHECK(j["status"].is_null());
    CHECK(j["outcome"].is_null());
    CHECK(j["status_from"].is_null());
    CHECK(j["supervisor"]["pid"] == getpid());
    CHECK(j["supervisor"]["boot_id"].get<std::string>().size() == 36);
    CHECK(supervisor_alive(r.supervisor));
    SupervisorProcess reused = r.supervisor;
    reused.start_ticks += 1;
    CHECK_FALSE(supervisor_alive(reused));
    r.state = "finished";
    for (const auto& [outcome, from] : std::vector<std::pair<std::string, std::string>>{
             {"exited", "command"}, {"killed", "command"}, {"deadline", "corral"}, {"stopped", "corral"},
             {"interrupted", "corral"}, {"not_found", "corral"}, {"setup_failed", "corral"},
             {"teardown_failed", "corral"}, {"usage_error", "corral"}, {"refused", "corral"},
             {"caller_gone", "corral"}}) {
        r.outcome = parse_outcome(outcome);
        REQUIRE(r.outcome);
        CHECK(outcome_name(*r.outcome) == outcome);
        CHECK(to_json(r)["outcome"] == outcome);
        CHECK(to_json(r)["status_from"] == from);
    }
    r.stop = StopRecord{"corral stop", SIGTERM, milliseconds(2500), true};
    j = to_json(r);
    CHECK(j["stop"] == nlohmann::json{{"cause", "corral stop"}, {"signal", "SIGTERM"}, {"grace_ms", 2500}, {"killed", true},
                                      {"second_signal", nullptr}});
    r.stop->second_signal = SIGINT;
    CHECK(to_json(r)["stop"]["second_signal"] == "SIGINT");
}

TEST_CASE("argv that is not UTF-8 is still recorded") {
    std::string dir = make_temp_dir();
    RunRecord r = sample_record();
    r.argv = {"/bin/echo", std::string("\xff\xfe bad", 6)};
    CHECK_NOTHROW(write_run_record(dir, r));
    auto j = nlohmann::json::parse(slurp(dir + "/run.json"));
    CHECK(j["argv"].size() == 2);
    std::filesystem::remove_all(dir);
}

TEST_CASE("write_run_record into a missing directory names the call and path") {
    try {
        write_run_record("/nonexistent/corral-run-dir", sample_record());
        FAIL("expected SysError");
    } catch (const corral::SysError& e) {
        CHECK(std::string(e.what()).find("/nonexistent/corral-run-dir") != std::string::npos);
        CHECK(e.error() == ENOENT);
    }
}
