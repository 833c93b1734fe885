// tests/oci/runtime/test_bundle_request.cpp — a bundle's mapped config as
// corral's run request, and the control socket's lines.
#include <doctest/doctest.h>

#include "oci/runtime/bundle_request.hpp"
#include "oci/runtime/control.hpp"
#include "oci/runtime/container_dir.hpp"
#include "oci/runtime/ps.hpp"
#include "tests/oci/config_fixture.hpp"

#include <unistd.h>

namespace corral::oci {
namespace {

using testing::read_config;
using testing::runc_spec_config;

nlohmann::json without_terminal() {
    auto j = runc_spec_config();
    j["process"]["terminal"] = false;
    return j;
}

bool front_note(const BundleRequest& r, NoteKind kind, const std::string& field) {
    for (const auto& n : r.notes)
        if (n.kind == kind && n.field == field) return true;
    return false;
}

TEST_CASE("runc's default config becomes a quiet run of its process on its root") {
    auto j = without_terminal();
    j["process"]["args"] = {"/bin/echo", "hi"};
    j["process"]["cwd"] = "/srv/app";
    BundleRequest br = bundle_request(read_config(j), "/var/lib/corral");
    const run::RunRequest& r = br.request;
    CHECK(r.command == std::vector<std::string>{"/bin/echo", "hi"});
    REQUIRE(r.cwd);
    CHECK(*r.cwd == "/srv/app");
    REQUIRE(r.rootfs);
    const auto* dir = std::get_if<names::DirRootfs>(&*r.rootfs);
    REQUIRE(dir != nullptr);
    CHECK(dir->path == "/srv/bundle/rootfs");
    CHECK(r.hostname == std::optional<std::string>("runc"));
    CHECK(r.open_files == std::optional<std::uint64_t>(1024));
    CHECK(r.state_dir == std::optional<std::string>("/var/lib/corral"));
    CHECK(r.quiet);
    CHECK_FALSE(r.tty);
    // The config's own notes come along (root in the box mapped).
    CHECK(front_note(br, NoteKind::mapped, "process.user"));
}

TEST_CASE("the environment is the config's, in order") {
    auto j = without_terminal();
    j["process"]["env"] = {"PATH=/bin", "A=1", "A=2"};
    const auto env = bundle_request(read_config(j), "").request.env;
    REQUIRE(env.size() >= 2);
    CHECK(env.front() == std::pair<std::string, std::string>{"PATH", "/bin"});
    CHECK(env.back() == std::pair<std::string, std::string>{"A", "2"});
}

TEST_CASE("limits, binds and /tmp reach the request") {
    auto j = without_terminal();
    j["linux"]["resources"]["memory"] = {{"limit", 268435456}};
    j["linux"]["resources"]["pids"] = {{"limit", 64}};
    j["linux"]["resources"]["cpu"] = {{"quota", 50000}, {"period", 100000}};
    j["mounts"].push_back({{"destination", "/data"}, {"type", "bind"}, {"source", "/srv/data"}, {"options", {"rbind", "ro"}}});
    j["mounts"].push_back({{"destination", "/tmp"}, {"type", "tmpfs"}, {"source", "tmpfs"}, {"options", {"size=1m"}}});
    const run::RunRequest r = bundle_request(read_config(j), "").request;
    CHECK(r.memory_bytes == std::optional<std::uint64_t>(268435456));
    CHECK(r.pids == std::optional<std::uint64_t>(64));
    REQUIRE(r.cpus);
    CHECK(*r.cpus == doctest::Approx(0.5));
    REQUIRE(r.binds.size() == 1);
    CHECK(r.binds[0].source == "/srv/data");
    CHECK(r.binds[0].target == "/data");
    CHECK(r.binds[0].read_only);
    CHECK(r.tmp_bytes == std::optional<std::uint64_t>(1u << 20));
}

TEST_CASE("a terminal: the request says so, with the console's size") {
    auto tty = runc_spec_config();  // runc's default asks for a terminal
    CHECK(bundle_request(read_config(tty), "").terminal);
    tty["process"]["consoleSize"] = {{"height", 40}, {"width", 120}};
    const BundleRequest br = bundle_request(read_config(tty), "");
    CHECK(br.console_rows == 40);
    CHECK(br.console_cols == 120);
    CHECK_FALSE(bundle_request(read_config(without_terminal()), "").terminal);
}

TEST_CASE("a noexec bind is a noexec bind of the box") {
    auto noexec = without_terminal();
    noexec["mounts"].push_back({{"destination", "/data"}, {"type", "bind"}, {"source", "/srv/data"}, {"options", {"bind", "noexec"}}});
    const BundleRequest br = bundle_request(read_config(noexec), "");
    REQUIRE(br.request.binds.size() == 1);
    CHECK(br.request.binds[0].noexec);
    CHECK_FALSE(br.request.binds[0].read_only);
}

TEST_CASE("a worker without its organisation directory is refused with the field named") {
    auto worker = without_terminal();
    worker["annotations"] = {{"io.corral.worker", "ci"}};
    CHECK_THROWS_WITH(bundle_request(read_config(worker), ""), doctest::Contains("io.corral.config"));
}

TEST_CASE("a tmpfs is the box's own, with its size, mode and flags") {
    auto j = without_terminal();
    j["mounts"].push_back({{"destination", "/run"}, {"type", "tmpfs"}, {"source", "tmpfs"},
                           {"options", {"nosuid", "noexec", "mode=755", "size=65536k"}}});
    const run::RunRequest r = bundle_request(read_config(j), "").request;
    REQUIRE(r.tmpfs.size() == 1);
    CHECK(r.tmpfs[0].target == "/run");
    CHECK(r.tmpfs[0].size_bytes == 65536ull * 1024);
    CHECK(r.tmpfs[0].mode == 0755);
    CHECK(r.tmpfs[0].noexec);
    CHECK(r.tmpfs[0].option == "config.json mounts[7]");  // after runc's seven
}

TEST_CASE("rlimits other than NOFILE are noted, not dropped silently") {
    auto j = without_terminal();
    j["process"]["rlimits"].push_back({{"type", "RLIMIT_NPROC"}, {"hard", 100}, {"soft", 100}});
    j["process"]["rlimits"].push_back({{"type", "RLIMIT_CORE"}, {"hard", 0}, {"soft", 0}});
    BundleRequest br = bundle_request(read_config(j), "");
    CHECK(front_note(br, NoteKind::replaced, "process.rlimits"));
    CHECK(front_note(br, NoteKind::ignored, "process.rlimits"));
}

TEST_CASE("the control lines: what is a request and what is not") {
    auto start = parse_control_line("start");
    REQUIRE(start);
    CHECK(start->kind == ControlRequest::Kind::start);
    auto kill = parse_control_line("kill 15 1");
    REQUIRE(kill);
    CHECK(kill->kind == ControlRequest::Kind::kill);
    CHECK(kill->signal == 15);
    CHECK(kill->all);
    CHECK(control_line(*kill) == "kill 15 1");
    CHECK(control_line(*start) == "start");
    ControlRequest exec;
    exec.kind = ControlRequest::Kind::exec;
    exec.args = {"/bin/sh", "-c", "echo \"hi\""};
    exec.env = {{"A", "1=2"}};
    exec.cwd = "/tmp";
    auto back = parse_control_line(control_line(exec));
    REQUIRE(back);
    CHECK(back->kind == ControlRequest::Kind::exec);
    CHECK(back->args == exec.args);
    CHECK(back->env == exec.env);
    CHECK(back->cwd == "/tmp");
    for (const char* bad : {"", "start ", "kill", "kill 0 0", "kill 65 0", "kill 9 2", "kill 9 0 x", "kill -9 0", "stop",
                            "exec", "exec {}", "exec {\"args\": []}", "exec {\"args\": [1]}",
                            "exec {\"args\": [\"x\"], \"env\": [\"NOEQUALS\"]}", "exec {\"args\": [\"x\"], \"cwd\": \"rel\"}"})
        CHECK_MESSAGE(!parse_control_line(bad), bad);
}

TEST_CASE("a record's supervisor: alive while its pid has its start time") {
    ContainerRecord r;
    r.state.status = ContainerStatus::running;
    r.supervisor = getpid();
    r.supervisor_start = process_start_time(getpid());
    CHECK(r.supervisor_start != 0);
    CHECK(supervisor_alive(r));
    CHECK(effective_status(r) == ContainerStatus::running);
    r.supervisor_start += 1;  // the pid now names another process
    CHECK_FALSE(supervisor_alive(r));
    CHECK(effective_status(r) == ContainerStatus::stopped);
    CHECK(process_start_time(0) == 0);
}

TEST_CASE("linux.seccomp: the profile becomes the filter stacked after corral's") {
    auto cfg = without_terminal();
    cfg["linux"]["seccomp"] = nlohmann::json::parse(R"({
        "defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38, "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [
            {"names": ["read", "write"], "action": "SCMP_ACT_ALLOW"},
            {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
             "args": [{"index": 0, "value": 4294967295, "valueTwo": 8, "op": "SCMP_CMP_MASKED_EQ"}]},
            {"names": ["kill"], "action": "SCMP_ACT_KILL"}]})");
    const BundleRequest br = bundle_request(read_config(cfg), "");
    REQUIRE(br.request.stacked_seccomp);
    const auto& f = *br.request.stacked_seccomp;
    CHECK(f.default_action.verdict == corral::supervisor::FilterVerdict::errno_);
    CHECK(f.default_action.errno_value == 38);
    REQUIRE(f.rules.size() == 3);
    CHECK(f.rules[0].syscalls == std::vector<std::string>{"read", "write"});
    REQUIRE(f.rules[1].args.size() == 1);
    CHECK(f.rules[1].args[0].op == corral::supervisor::FilterOp::masked_eq);
    CHECK(f.rules[1].args[0].value_two == 8);
    CHECK(f.rules[2].action.verdict == corral::supervisor::FilterVerdict::kill_thread);
    CHECK_FALSE(bundle_request(read_config(without_terminal()), "").request.stacked_seccomp);
    auto bad = cfg;
    bad["linux"]["seccomp"]["syscalls"][2]["action"] = "SCMP_ACT_SOMETHING";
    CHECK_THROWS_WITH(bundle_request(read_config(bad), ""), doctest::Contains("linux.seccomp.syscalls[2].action"));
    bad = cfg;
    bad["linux"]["seccomp"]["syscalls"][1]["args"][0]["index"] = 6;
    CHECK_THROWS_WITH(bundle_request(read_config(bad), ""), doctest::Contains("args[0].index"));
}

}  // namespace
}  // namespace corral::oci

TEST_CASE("ps: the host's ps table reduced to the header and the container's pids") {
    const std::string table =
        "UID          PID    PPID  C STIME TTY          TIME CMD\n"
        "root           1       0  0 09:00 ?        00:00:01 /sbin/init\n"
        "1900101       42       7  0 09:01 ?        00:00:00 sleep 1000\n"
        "1900101      420      42  0 09:01 ?        00:00:00 sh -c echo 42\n";
    CHECK(corral::oci::keep_ps_lines(table, {42, 420}) ==
          "UID          PID    PPID  C STIME TTY          TIME CMD\n"
          "1900101       42       7  0 09:01 ?        00:00:00 sleep 1000\n"
          "1900101      420      42  0 09:01 ?        00:00:00 sh -c echo 42\n");
    // A pid in another column (PPID 42) is not a match.
    CHECK(corral::oci::keep_ps_lines(table, {7}) == "UID          PID    PPID  C STIME TTY          TIME CMD\n");
    CHECK_THROWS_WITH(corral::oci::keep_ps_lines("CMD\nsleep\n", {1}), doctest::Contains("PID column"));
}

TEST_CASE("control lines: pids") {
    auto r = corral::oci::parse_control_line("pids");
    REQUIRE(r);
    CHECK(r->kind == corral::oci::ControlRequest::Kind::pids);
    CHECK(corral::oci::control_line(*r) == "pids");
    CHECK_FALSE(corral::oci::parse_control_line("pids 1"));
}
