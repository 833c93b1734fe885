// What the command sees inside the sandbox: corral's init as PID 1, an
// unprivileged identity (no capabilities, no_new_privs, seccomp, the run's
// own UID, no groups), only a loopback interface that is up, its own
// hostname, a clean environment and no inherited descriptors.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <regex>
#include <map>
#include <set>
#include <thread>
#include <sstream>

#include "tests/supervisor/sandbox/sandbox_support.hpp"

extern char** environ;

namespace corral::test::sandbox {
namespace {

std::string host_hostname() {
    char buf[256] = {};
    gethostname(buf, sizeof buf - 1);
    return buf;
}

std::string status_value(const std::string& status, const std::string& key) {
    for (const auto& line : lines(status))
        if (line.rfind(key + ":", 0) == 0) {
            std::string v = line.substr(key.size() + 1);
            auto b = v.find_first_not_of(" \t");
            return b == std::string::npos ? "" : v.substr(b);
        }
    return "<absent>";
}

TEST_CASE("PID 1 inside the sandbox is corral's init and no host process is visible") {
    auto run = corral_sh(
        "echo START; echo \"comm1=$(cat /proc/1/comm)\"; "
        "echo \"cmdline1=$(tr '\\0' ' ' < /proc/1/cmdline)\"; "
        "set -- /proc/[0-9]*; echo \"nprocs=$#\"; echo \"shellpid=$$\"; echo DONE");
    INFO(transcript(run.result));
    REQUIRE(run.result.exit_code == 0);
    REQUIRE(run.result.out.find("START") != std::string::npos);
    REQUIRE(run.result.out.find("DONE") != std::string::npos);

    std::string comm1 = field(run.result.out, "comm1");
    std::string cmdline1 = field(run.result.out, "cmdline1");
    std::string host_init = read_file("/proc/1/comm");
    while (!host_init.empty() && host_init.back() == '\n') host_init.pop_back();
    // corral's init (forked by clone3, no execve of another program) names
    // itself corral-init and shows no host argv.
    CHECK_MESSAGE(comm1 == "corral-init", "PID 1 is not corral's init: comm=" << comm1);
    CHECK_MESSAGE(comm1 != host_init, "PID 1 inside looks like the host's init " << host_init);
    CHECK_MESSAGE(cmdline1.find("corral") != std::string::npos, "PID 1 command line: " << cmdline1);
    CHECK_MESSAGE(cmdline1.find("--rootfs") == std::string::npos, "host argv visible in the box: " << cmdline1);
    // A fresh PID namespace's /proc: the init, the shell and its `tr` at most;
    // the host has hundreds. The shell is not PID 1 (normal signal semantics).
    int nprocs = std::stoi(field(run.result.out, "nprocs").empty() ? "0" : field(run.result.out, "nprocs"));
    CHECK(nprocs >= 2);
    CHECK(nprocs <= 4);
    CHECK(field(run.result.out, "shellpid") != "1");
    CHECK(!field(run.result.out, "shellpid").empty());
    check_nothing_left(run);
}

TEST_CASE("seen from the host: corral -> sandbox init -> invocation reaper -> command, in nested PID namespaces") {
    CorralProcess sup({"/bin/sh", "-c", "echo \"START uid=$(id -u)\"; exec sleep 1000"});
    REQUIRE_MESSAGE(sup.wait_for_out("START uid=", std::chrono::seconds(30)), sup.out() << sup.err());
    const uid_t uid = static_cast<uid_t>(std::stoul(field(sup.out(), "START uid")));
    std::vector<pid_t> cmd;
    for (int i = 0; i < 100 && cmd.empty(); ++i) {  // until `exec sleep` has happened
        for (pid_t p : processes_of_uid(uid))
            if (read_file("/proc/" + std::to_string(p) + "/comm") == "sleep\n") cmd.push_back(p);
        if (cmd.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    REQUIRE_MESSAGE(cmd.size() == 1, describe_processes(processes_of_uid(uid)));
    auto status_of = [](pid_t p) { return read_file("/proc/" + std::to_string(p) + "/status"); };
    auto value = [](const std::string& status, const std::string& key) {
        for (const auto& l : lines(status))
            if (l.rfind(key + ":\t", 0) == 0) return l.substr(key.size() + 2);
        return std::string("<absent>");
    };
    // The command: three PID namespace levels (host, sandbox, invocation), not PID 1 of the innermost.
    std::string cmd_status = status_of(cmd[0]);
    std::string nspid = value(cmd_status, "NSpid");
    INFO("command NSpid: " << nspid);
    CHECK(std::count(nspid.begin(), nspid.end(), '\t') == 2);
    CHECK(nspid.substr(nspid.rfind('\t') + 1) != "1");
    // Its parent: the invocation's reaper, PID 1 of the innermost namespace, root.
    pid_t reaper = std::stoi(value(cmd_status, "PPid"));
    std::string reaper_status = status_of(reaper);
    CHECK(value(reaper_status, "Name") == "corral-init");
    std::string reaper_nspid = value(reaper_status, "NSpid");
    CHECK(std::count(reaper_nspid.begin(), reaper_nspid.end(), '\t') == 2);
    CHECK(reaper_nspid.substr(reaper_nspid.rfind('\t') + 1) == "1");
    // Its parent: the sandbox's init, PID 1 of the sandbox namespace, child of corral.
    pid_t init = std::stoi(value(reaper_status, "PPid"));
    std::string init_status = status_of(init);
    CHECK(value(init_status, "Name") == "corral-init");
    std::string init_nspid = value(init_status, "NSpid");
    CHECK(std::count(init_nspid.begin(), init_nspid.end(), '\t') == 1);
    CHECK(init_nspid.substr(init_nspid.rfind('\t') + 1) == "1");
    CHECK(std::stoi(value(init_status, "PPid")) == sup.pid());

    REQUIRE(kill(sup.pid(), SIGTERM) == 0);
    CHECK(sup.wait(std::chrono::seconds(30)) == 143);
    CorralRun r;
    r.run_dir = sup.run_dir();
    r.record = read_record(r.run_dir);
    check_nothing_left(r);
}

TEST_CASE("the command has no capabilities, no_new_privs, a seccomp filter and the run's UID/GID") {
    auto run = corral_sh("echo START; cat /proc/self/status; echo DONE");
    INFO(transcript(run.result));
    REQUIRE(run.result.exit_code == 0);
    REQUIRE(run.result.out.find("START") != std::string::npos);
    REQUIRE(run.result.out.find("DONE") != std::string::npos);
    REQUIRE(run.record.has_value());
    const std::string& st = run.result.out;
    for (const char* cap : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
        CHECK_MESSAGE(status_value(st, cap) == "0000000000000000", cap << " = " << status_value(st, cap));
    CHECK(status_value(st, "NoNewPrivs") == "1");
    CHECK(status_value(st, "Seccomp") == "2");
    CHECK_MESSAGE(status_value(st, "Groups") == "", "supplementary groups: " << status_value(st, "Groups"));
    std::string uid = std::to_string((*run.record)["uid"].get<long long>());
    std::string gid = std::to_string((*run.record)["gid"].get<long long>());
    CHECK(status_value(st, "Uid") == uid + "\t" + uid + "\t" + uid + "\t" + uid);
    CHECK(status_value(st, "Gid") == gid + "\t" + gid + "\t" + gid + "\t" + gid);
    check_nothing_left(run);
}

TEST_CASE("id shows the run's UID from the default range and no supplementary groups") {
    CorralArgs args;
    args.own_uid_range = false;  // the contract's default range
    auto run = corral_sh("echo START; echo \"u=$(id -u)\"; echo \"g=$(id -g)\"; echo \"G=$(id -G)\"; "
                         "echo \"id=$(id)\"; echo DONE",
                         args);
    INFO(transcript(run.result));
    REQUIRE(run.result.exit_code == 0);
    REQUIRE(run.result.out.find("DONE") != std::string::npos);
    REQUIRE(run.record.has_value());
    long long uid = (*run.record)["uid"].get<long long>();
    long long gid = (*run.record)["gid"].get<long long>();
    CHECK(uid >= 1900000000LL);
    CHECK(uid <= 1900000999LL);
    CHECK(gid == uid);
    CHECK(field(run.result.out, "u") == std::to_string(uid));
    CHECK(field(run.result.out, "g") == std::to_string(gid));
    // `id -G` lists the primary group followed by supplementary ones: only the primary.
    CHECK(field(run.result.out, "G") == std::to_string(gid));
    // `id` names no groups= list at all when there are no supplementary groups
    // (corral may give the UID a name in the box's /etc/passwd).
    CHECK(std::regex_match(field(run.result.out, "id"), std::regex("uid=" + std::to_string(uid) + R"((\([a-z_][a-z0-9_-]*\))? )" +
                                                                   "gid=" + std::to_string(gid) + R"((\([a-z_][a-z0-9_-]*\))?)")));
    check_nothing_left(run);
}

TEST_CASE("the network namespace has only lo, it is up, and there is no host /sys") {
    auto run = corral_sh(
        "echo START; echo '--- dev'; cat /proc/net/dev; echo '--- link'; ip -o link show; "
        "echo '--- addr'; ip -o addr show; echo '--- end'; "
        "ls /sys/class/net >/dev/null 2>&1; echo \"sys_class_net_rc=$?\"; echo DONE");
    INFO(transcript(run.result));
    REQUIRE(run.result.exit_code == 0);
    REQUIRE(run.result.out.find("DONE") != std::string::npos);
    const std::string& out = run.result.out;
    std::string dev = out.substr(out.find("--- dev"), out.find("--- link") - out.find("--- dev"));
    std::set<std::string> ifaces;
    for (const auto& line : lines(dev)) {
        auto colon = line.find(':');
        if (colon == std::string::npos || line.find('|') != std::string::npos) continue;
        std::string name = line.substr(0, colon);
        name.erase(0, name.find_first_not_of(' '));
        ifaces.insert(name);
    }
    CHECK(ifaces == std::set<std::string>{"lo"});
    std::string link = out.substr(out.find("--- link"), out.find("--- addr") - out.find("--- link"));
    std::vector<std::string> link_lines;  // `ip -o`: one line per interface, after our "--- link" marker
    for (const auto& l : lines(link))
        if (!l.empty() && l[0] >= '0' && l[0] <= '9') link_lines.push_back(l);
    REQUIRE(link_lines.size() == 1);
    CHECK(link_lines[0].find(": lo:") != std::string::npos);
    CHECK_MESSAGE(link_lines[0].find(",UP") != std::string::npos, "lo is not up: " << link_lines[0]);
    std::string addr = out.substr(out.find("--- addr"), out.find("--- end") - out.find("--- addr"));
    CHECK(addr.find("inet 127.0.0.1/8") != std::string::npos);
    CHECK(field(out, "sys_class_net_rc") != "0");
    check_nothing_left(run);
}

TEST_CASE("the hostname is the sandbox's own: default corral-<id>, or --hostname") {
    const std::string host_before = host_hostname();
    auto run = corral_sh("echo START; echo \"h=$(hostname)\"; echo \"k=$(cat /proc/sys/kernel/hostname)\"; echo DONE");
    INFO(transcript(run.result));
    REQUIRE(run.result.exit_code == 0);
    REQUIRE(run.record.has_value());
    std::string h = field(run.result.out, "h");
    CHECK(h.rfind("corral-", 0) == 0);
    CHECK(h != host_before);
    CHECK(field(run.result.out, "k") == h);
    CHECK((*run.record)["hostname"] == h);
    check_nothing_left(run);

    CorralArgs named;
    named.flags = {"--hostname", "sbt-box"};
    auto run2 = corral_sh("echo START; echo \"h=$(hostname)\"; echo DONE", named);
    INFO(transcript(run2.result));
    REQUIRE(run2.result.exit_code == 0);
    CHECK(field(run2.result.out, "h") == "sbt-box");
    REQUIRE(run2.record.has_value());
    CHECK((*run2.record)["hostname"] == "sbt-box");
    CHECK(host_hostname() == host_before);
    check_nothing_left(run2);
}

TEST_CASE("the environment is clean: it does not depend on the host's environment at all") {
    // The same run twice: once with corral started from an empty environment,
    // once from this test's full environment plus a marker. The box's
    // environment must be identical (only --env and corral's own documented
    // variables), so no host variable can leak in, by name or by value.
    const std::string marker = "sbt-leak-" + random_hex(12);
    const std::vector<std::string> command{"/bin/sh", "-c", "echo START; env | sort; echo DONE"};
    CorralArgs args;
    args.flags = {"--env", "SBT_GIVEN=given value=with equals"};

    CorralRun bare;
    bare.run_dir = fresh_path("run");
    std::vector<std::string> argv{"env", "-i"};
    for (const auto& a : corral_argv(args, bare.run_dir, command)) argv.push_back(a);
    bare.result = corral::test::run(argv);
    bare.record = read_record(bare.run_dir);
    INFO("empty host env: " << transcript(bare.result));
    REQUIRE(bare.result.exit_code == 0);
    REQUIRE(bare.result.out.find("DONE") != std::string::npos);
    check_nothing_left(bare);

    args.process.env["CORRAL_SBT_LEAK_MARKER"] = marker;
    auto full = corral_run(command, args);
    INFO("full host env: " << transcript(full.result));
    REQUIRE(full.result.exit_code == 0);
    REQUIRE(full.result.out.find("DONE") != std::string::npos);
    CHECK(full.result.out.find("SBT_GIVEN=given value=with equals\n") != std::string::npos);
    CHECK(full.result.out.find(marker) == std::string::npos);
    CHECK(full.result.out.find("CORRAL_SBT_LEAK_MARKER") == std::string::npos);
    CHECK(full.result.out.find("CORRAL_BIN") == std::string::npos);
    CHECK(full.result.out == bare.result.out);
    check_nothing_left(full);
}

TEST_CASE("no descriptor beyond 0, 1, 2 is inherited by the command") {
    // Give corral open descriptors 7 and 9 (not close-on-exec) and see if
    // they reach the command: `ls` itself opens the directory as fd 3.
    std::string run_dir = fresh_path("run");
    std::vector<std::string> argv{"/bin/sh", "-c", "exec 7</etc/passwd 9>>/dev/null; exec \"$@\"", "sh"};
    for (const auto& a : corral_argv({}, run_dir, {"/bin/sh", "-c", "echo START; ls /proc/self/fd; echo DONE"}))
        argv.push_back(a);
    CorralRun run;
    run.run_dir = run_dir;
    run.result = corral::test::run(argv);
    run.record = read_record(run_dir);
    INFO(transcript(run.result));
    REQUIRE(run.result.exit_code == 0);
    auto out = run.result.out;
    auto start = out.find("START\n"), done = out.find("DONE");
    REQUIRE(start != std::string::npos);
    REQUIRE(done != std::string::npos);
    std::set<std::string> fds;
    for (const auto& l : lines(out.substr(start + 6, done - start - 6)))
        if (!l.empty()) fds.insert(l);
    CHECK(fds.count("0"));
    CHECK(fds.count("1"));
    CHECK(fds.count("2"));
    CHECK(!fds.count("7"));
    CHECK(!fds.count("9"));
    for (const auto& fd : fds) CHECK_MESSAGE((fd == "0" || fd == "1" || fd == "2" || fd == "3"), "open fd " << fd);
    check_nothing_left(run);
}

TEST_CASE("every mount is nosuid, data mounts are nodev, /tmp is a size-capped tmpfs, the workspace is the rw cwd") {
    std::string ws = fresh_dir("ws", 01777);
    CorralArgs args;
    args.flags = {"--workspace", ws};
    auto run = corral_sh("echo START; echo \"cwd=$(pwd)\"; echo from-inside > note.txt && echo \"wrote=yes\"; "
                         "echo '--- mounts'; cat /proc/self/mountinfo; echo '--- end'; echo DONE",
                         args);
    INFO(transcript(run.result));
    REQUIRE(run.result.exit_code == 0);
    REQUIRE(run.result.out.find("DONE") != std::string::npos);
    CHECK(field(run.result.out, "cwd") == "/workspace");
    CHECK(field(run.result.out, "wrote") == "yes");
    CHECK(read_file(ws + "/note.txt") == "from-inside\n");
    const std::string& out = run.result.out;
    auto from = out.find("--- mounts\n"), to = out.find("--- end");
    REQUIRE(from != std::string::npos);
    REQUIRE(to != std::string::npos);
    std::map<std::string, std::string> options_of;  // mount point -> per-mount options + fs type + super options
    int mounts = 0;
    for (const auto& line : lines(out.substr(from + 11, to - from - 11))) {
        std::istringstream in(line);
        std::string id, parent, devno, root, point, opts;
        in >> id >> parent >> devno >> root >> point >> opts;
        if (point.empty()) continue;
        ++mounts;
        CHECK_MESSAGE(opts.find("nosuid") != std::string::npos, "mount without nosuid: " << line);
        options_of[point] = opts + " " + line.substr(line.find(" - ") + 3);
    }
    CHECK(mounts >= 4);
    for (const char* point : {"/", "/tmp", "/proc", "/workspace", "/dev/shm"}) {
        REQUIRE_MESSAGE(options_of.count(point), "no mount at " << point);
        CHECK_MESSAGE(options_of[point].find("nodev") != std::string::npos, point << ": " << options_of[point]);
    }
    CHECK(options_of["/tmp"].find("tmpfs") != std::string::npos);
    CHECK(options_of["/tmp"].find("size=") != std::string::npos);
    CHECK(options_of["/"].find(" overlay ") != std::string::npos);  // the image is only ever a lower layer
    check_nothing_left(run);
}

}  // namespace
}  // namespace corral::test::sandbox
