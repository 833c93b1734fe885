// The contract of `corral run` as a program: bad input gets one clear line
// and the documented exit status, deadlines and the command's own status are
// reported as documented, output is streamed and logged, and run.json carries
// every field of the contract.
#include <doctest/doctest.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <set>

#include "tests/supervisor/sandbox/sandbox_support.hpp"

namespace fs = std::filesystem;

namespace corral::test::sandbox {
namespace {

bool is_start_or_summary_line(const std::string& l) {
    static const std::regex start(R"(^corral run: run \d{8}T\d{9}Z-[0-9a-f]{6}, run dir .*)");
    static const std::regex summary(R"(^corral run: \d{8}T\d{9}Z-[0-9a-f]{6}: .*; record .*/run\.json$)");
    return std::regex_match(l, start) || std::regex_match(l, summary);
}

// One clear line: exactly one non-empty line on stderr, nothing on stdout,
// naming every one of `needles`.
void check_one_line_error(const Result& r, const std::set<int>& codes, const std::vector<std::string>& needles) {
    INFO(transcript(r));
    CHECK(!r.timed_out);
    CHECK_MESSAGE(codes.count(r.exit_code), "unexpected exit status " << r.exit_code);
    std::vector<std::string> err_lines;
    for (const auto& l : lines(r.err)) {
        // Not this run's error: another suite running beside this one kills a
        // supervisor on purpose (test_limits.cpp), and whichever run starts
        // next removes its leftovers and says so, one line each.
        // It may also find that supervisor's record still "running" and
        // complete it as lost, one line.
        if (l.rfind("corral run: stale cleanup: ", 0) == 0) continue;
        if (l.rfind("corral run: run ", 0) == 0 && l.find(" was lost (its supervisor is gone)") != std::string::npos)
            continue;
        // Every run's own bookkeeping: the start line and the summary line.
        if (is_start_or_summary_line(l)) continue;
        if (!l.empty()) err_lines.push_back(l);
    }
    CHECK_MESSAGE(err_lines.size() == 1, "expected exactly one error line on stderr");
    CHECK(r.out.empty());
    for (const auto& n : needles) CHECK_MESSAGE(r.err.find(n) != std::string::npos, "error does not name " << n);
}

TEST_CASE("a rootfs that does not exist is refused with one line naming it") {
    const std::string missing = fresh_path("no-such-rootfs");
    CorralArgs args;
    args.rootfs = missing;
    auto run = corral_run({"/bin/true"}, args);
    check_one_line_error(run.result, {2, 125}, {missing});
    // The run's record says why it never ran.
    REQUIRE(run.record.has_value());
    INFO(run.record->dump(2));
    CHECK((*run.record)["status"] == 125);
    REQUIRE((*run.record)["messages"].size() == 1);
    CHECK((*run.record)["messages"][0].get<std::string>().find(missing) != std::string::npos);
}

TEST_CASE("a command that is a directory or not executable is named as such (exit 125)") {
    auto dir = corral_run({"/etc"});
    check_one_line_error(dir.result, {125}, {"cannot execute /etc in the sandbox: Is a directory"});
    auto file = corral_run({"/etc/passwd"});
    check_one_line_error(file.result, {125}, {"cannot execute /etc/passwd in the sandbox: Permission denied"});
}

TEST_CASE("CORRAL_STATE_DIR set but empty is refused, not taken for the default") {
    CorralArgs args;
    args.own_run_dir = false;
    args.process.env["CORRAL_STATE_DIR"] = "";
    auto run = corral_run({"/bin/true"}, args);
    check_one_line_error(run.result, {125}, {"CORRAL_STATE_DIR is set but empty"});
}

TEST_CASE("a rootfs that is a file is refused with one line naming it") {
    const std::string file = fresh_path("rootfs-file");
    write_file(file, "not a directory\n");
    CorralArgs args;
    args.rootfs = file;
    auto run = corral_run({"/bin/true"}, args);
    check_one_line_error(run.result, {2, 125}, {file});
}

TEST_CASE("a command missing in the rootfs exits 127 naming the path tried") {
    auto run = corral_run({"/bin/no-such-command"});
    check_one_line_error(run.result, {127}, {"command not found in sandbox", "/bin/no-such-command"});
    if (run.record) check_nothing_left(run);

    auto bare = corral_run({"no-such-command-either"});
    check_one_line_error(bare.result, {127}, {"command not found in sandbox", "no-such-command-either"});
    if (bare.record) check_nothing_left(bare);
    // /usr/bin/env exists on the host, not in this rootfs: the lookup is the sandbox's.
    auto host_only = corral_run({"/usr/bin/env"});
    check_one_line_error(host_only.result, {127}, {"/usr/bin/env"});
    if (host_only.record) check_nothing_left(host_only);
}

TEST_CASE("malformed --memory, --timeout and --env are usage errors (exit 2) naming option and text") {
    {
        CorralArgs args;
        args.flags = {"--memory", "12XB"};
        auto run = corral_run({"/bin/true"}, args);
        check_one_line_error(run.result, {2}, {"--memory", "12XB"});
    }
    {
        CorralArgs args;
        args.flags = {"--timeout", "-5s"};
        auto run = corral_run({"/bin/true"}, args);
        check_one_line_error(run.result, {2}, {"--timeout", "-5s"});
    }
    {
        CorralArgs args;
        args.flags = {"--env", "NOEQUALS"};
        auto run = corral_run({"/bin/true"}, args);
        check_one_line_error(run.result, {2}, {"--env", "NOEQUALS"});
    }
    {
        CorralArgs args;
        args.flags = {"--no-such-option"};
        auto run = corral_run({"/bin/true"}, args);
        check_one_line_error(run.result, {2}, {"--no-such-option"});
    }
}

TEST_CASE("an exhausted --uid-range is refused while two runs hold both UIDs") {
    // A range of its own, outside this executable's usual slice.
    const std::string range = "1900100390-1900100391";
    std::string ws = fresh_dir("ws", 01777);
    CorralArgs holder;
    holder.own_uid_range = false;
    holder.flags = {"--uid-range", range, "--workspace", ws};
    const std::vector<std::string> hold{
        "/bin/sh", "-c",
        "echo START; i=0; while [ ! -e /workspace/release ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; echo DONE"};
    CorralProcess a(hold, holder);
    CorralProcess b(hold, holder);
    REQUIRE_MESSAGE(a.wait_for_out("START", std::chrono::seconds(30)), a.out() << a.err());
    REQUIRE_MESSAGE(b.wait_for_out("START", std::chrono::seconds(30)), b.out() << b.err());

    CorralArgs third;
    third.own_uid_range = false;
    third.flags = {"--uid-range", range};
    auto run = corral_run({"/bin/true"}, third);
    check_one_line_error(run.result, {2, 125}, {"exhausted", "1900100390-1900100391"});

    write_file(ws + "/release", "");
    CHECK(a.wait() == 0);
    CHECK(b.wait() == 0);
    for (auto* p : {&a, &b}) {
        CorralRun r;
        r.run_dir = p->run_dir();
        r.record = read_record(r.run_dir);
        check_nothing_left(r);
    }
    // Both UIDs are free again.
    auto again = corral_run({"/bin/true"}, third);
    CHECK(again.result.exit_code == 0);
    if (again.record) check_nothing_left(again);
}

TEST_CASE("a UID owned by a process outside corral is skipped with a warning, and that process is left alone") {
    // A range of its own; a foreign process takes its first UID.
    const uid_t first = 1900100392;
    const std::string range = "1900100392-1900100393";
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    pid_t foreign = ::fork();
    REQUIRE(foreign >= 0);
    if (foreign == 0) {
        ::close(fds[0]);
        if (::setresgid(first, first, first) != 0 || ::setresuid(first, first, first) != 0) ::_exit(1);
        if (::write(fds[1], "r", 1) != 1) ::_exit(1);
        ::close(fds[1]);
        for (;;) ::pause();
    }
    ::close(fds[1]);
    char c = 0;
    REQUIRE(::read(fds[0], &c, 1) == 1);
    ::close(fds[0]);

    CorralArgs args;
    args.own_uid_range = false;
    args.flags = {"--uid-range", range};
    auto run = corral_run({"/bin/sh", "-c", "id -u"}, args);
    INFO(transcript(run.result));
    CHECK(run.result.exit_code == 0);
    CHECK(run.result.out == std::to_string(first + 1) + "\n");
    CHECK(run.result.err.find("uid " + std::to_string(first) + " is used by processes outside corral (pids " +
                              std::to_string(foreign) + ")") != std::string::npos);
    CHECK(process_alive(foreign));  // not the run's: never killed
    if (run.record) check_nothing_left(run);

    ::kill(foreign, SIGKILL);
    ::waitpid(foreign, nullptr, 0);
}

// A group (sudo, staff, ...) whose GID no user has as UID, with its name;
// {0, ""} on a host where every group shares its number with a user.
std::pair<gid_t, std::string> group_without_a_user() {
    std::pair<gid_t, std::string> found{0, ""};
    ::setgrent();
    while (const group* g = ::getgrent()) {
        if (g->gr_gid > 0 && g->gr_gid < 65534 && ::getpwuid(g->gr_gid) == nullptr) {
            found = {g->gr_gid, g->gr_name};
            break;
        }
    }
    ::endgrent();
    return found;
}

// Skipped (and counted) on a host where every group shares its number with a user.
TEST_CASE("a UID whose number is a host group's GID is never leased (the box would get that group)" *
          doctest::skip(group_without_a_user().first == 0)) {
    // A range of just that number must not run the box with it.
    auto [taken, group_name] = group_without_a_user();
    CorralArgs args;
    args.own_uid_range = false;
    args.flags = {"--uid-range", std::to_string(taken) + "-" + std::to_string(taken)};
    auto run = corral_run({"/bin/sh", "-c", "echo RAN; id"}, args);
    INFO(transcript(run.result));
    CHECK(run.result.exit_code == 125);
    CHECK(run.result.out.find("RAN") == std::string::npos);
    CHECK(run.result.err.find("exists in the group database (as the run's GID) as " + group_name) != std::string::npos);
    CHECK(run.result.err.find("exhausted") != std::string::npos);
}

TEST_CASE("a malformed command line of any subcommand exits 2 with one line naming the problem") {
    struct Case {
        std::vector<std::string> args;
        std::string names;
    };
    const std::vector<Case> cases = {
        {{"ca", "--bogus"}, "\"--bogus\""},
        {{"ca", "init", "--frob"}, "\"--frob\""},
        {{"ca", "init", "--state-dir"}, "--state-dir: missing value"},
        {{"ca", "init", "--state-dir", ""}, "--state-dir: empty path"},
        {{"gateway", "--bogus"}, "\"--bogus\""},
        {{"gateway"}, "--config FILE or --org DIR is required"},
        {{"gateway", "--config", "x.toml", "--org", "org"}, "--config and --org: give one of them, not both"},
        {{"gateway", "--org"}, "--org: missing value"},
        {{"gateway", "--thraeds", "2"}, "(did you mean --threads?)"},
        {{"ps", "--stat-dir", "/x"}, "(did you mean --state-dir?)"},
        {{"prune", "--dry-rnu"}, "(did you mean --dry-run?)"},
        {{"image", "--jsno", "ls"}, "(did you mean --json?)"},
        {{"journal", "verify", "j", "--ky", "k"}, "(did you mean --key?)"},
        {{"budget", "show", "w", "--gatewya", "unix:/x"}, "(did you mean --gateway?)"},
        {{"key", "show", "--state-dri", "/x"}, "(did you mean --state-dir?)"},
        {{"doctor", "--jsno"}, "(did you mean --json?)"},
        {{"gateway", "--config", "x.toml", "--threads", "0"}, "--threads \"0\""},
        {{"doctor", "--x"}, "\"--x\""},
        {{"key", "--bogus"}, "\"--bogus\""},
        {{"key", "show", "--frob"}, "\"--frob\""},
        {{"key", "make"}, "unknown key action \"make\"; expected: init, show"},
        {{"ca", "show"}, "unknown ca action \"show\"; expected: init"},
        {{"budget", "spend", "w"}, "unknown budget action \"spend\"; expected: show, reset"},
        {{"budget", "show"}, "missing WORKER"},
        {{"budget", "show", "w", "--gateway", "tcp:1"}, "expected unix:/ABSOLUTE/PATH"},
        {{"journal", "verify"}, "missing FILE"},
        {{"journal", "verify", "j.jsonl", "--frob"}, "\"--frob\""},
        {{"journal", "verify", "/nonexistent/j.jsonl", "--key", "/nonexistent/k.pub"}, "/nonexistent/k.pub"},
        {{"frobnicate"}, "\"frobnicate\""},
        // Docker's subcommands: what corral has instead, never "did you mean image?".
        {{"images"}, "corral has no images; `corral image ls` lists the imported images"},
        {{"pull", "debian:12"}, "corral does not pull images from registries"},
        {{"cp", "a", "b"}, "--bind SRC:DST"},
        {{"rm", "x"}, "`corral prune`"},
        {{"imgae", "ls"}, "(did you mean image?)"},
    };
    for (const auto& c : cases) {
        std::vector<std::string> argv{corral::test::corral_bin()};
        argv.insert(argv.end(), c.args.begin(), c.args.end());
        auto r = corral::test::run(argv);
        INFO(transcript(r));
        CHECK(r.exit_code == 2);
        std::vector<std::string> err_lines;
        for (const auto& l : lines(r.err))
            if (!l.empty() && !is_start_or_summary_line(l)) err_lines.push_back(l);
        CHECK(err_lines.size() == 1);
        CHECK(r.err.find(c.names) != std::string::npos);
    }
}

TEST_CASE("corral run as a non-root user is refused with exit 125") {
    // A copy nobody can reach and execute, wherever the build dir lives.
    const std::string copy = fresh_dir("nonroot-bin", 0755) + "/corral";
    fs::copy_file(corral_bin(), copy);
    fs::permissions(copy, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    auto r = corral::test::run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", copy, "run",
                                "--rootfs", rootfs(), "--", "/bin/true"});
    check_one_line_error(r, {125}, {"must run as root"});
}

TEST_CASE("--timeout kills the run at the deadline: exit 124, deadline_hit, a message on stderr") {
    CorralArgs args;
    args.flags = {"--timeout", "1s"};
    auto run = corral_sh("echo START; exec sleep 100", args);
    INFO(transcript(run.result));
    REQUIRE(run.result.out.find("START") != std::string::npos);
    CHECK(run.result.exit_code == 124);
    std::string err = run.result.err;
    for (auto& c : err) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    CHECK((err.find("timeout") != std::string::npos || err.find("deadline") != std::string::npos));
    REQUIRE(run.record.has_value());
    const auto& rec = *run.record;
    CHECK(rec["deadline_hit"] == true);
    CHECK(rec["status"] == 124);
    CHECK(rec["limits"]["timeout_ms"] == 1000);
    CHECK(rec["duration_ms"].get<long long>() >= 1000);
    CHECK(rec["duration_ms"].get<long long>() < 30000);
    check_nothing_left(run);
}

TEST_CASE("the command's exit status passes through: exit 3 is 3, SIGTERM is 143") {
  {
    auto three = corral_sh("echo START; exit 3");
    INFO(transcript(three.result));
    REQUIRE(three.result.out.find("START") != std::string::npos);
    CHECK(three.result.exit_code == 3);
    REQUIRE(three.record.has_value());
    CHECK((*three.record)["exit_code"] == 3);
    CHECK((*three.record)["signal"].is_null());
    CHECK((*three.record)["status"] == 3);
    CHECK((*three.record)["deadline_hit"] == false);
    check_nothing_left(three);
  }
  {
    // The shell signals itself: default SIGTERM disposition must end it.
    auto term = corral_sh("echo START; kill -TERM $$; echo NOT-KILLED");
    INFO(transcript(term.result));
    REQUIRE(term.result.out.find("START") != std::string::npos);
    CHECK(term.result.out.find("NOT-KILLED") == std::string::npos);
    CHECK(term.result.exit_code == 143);
    REQUIRE(term.record.has_value());
    CHECK((*term.record)["signal"] == 15);
    CHECK((*term.record)["exit_code"].is_null());
    CHECK((*term.record)["status"] == 143);
    check_nothing_left(term);
  }
}

TEST_CASE("stdout and stderr are streamed live and kept in stdout.log/stderr.log") {
    CorralProcess run({"/bin/sh", "-c", "echo early-out; echo early-err >&2; sleep 3; echo late-out; echo late-err >&2"});
    REQUIRE_MESSAGE(run.wait_for_out("early-out", std::chrono::seconds(30)), run.out() << run.err());
    // stdout and stderr are separate pipes, so early-err may be forwarded a
    // moment after early-out: wait for it (bounded) rather than race it.
    CHECK(run.wait_for_err("early-err", std::chrono::seconds(2)));
    // "late-*" comes 3 s after "early-*": seeing early without late proves streaming.
    CHECK(run.out().find("late-out") == std::string::npos);
    CHECK(run.err().find("late-err") == std::string::npos);
    CHECK(run.wait() == 0);
    INFO(run.out() << "--- stderr ---\n" << run.err());
    CHECK(run.out() == "early-out\nlate-out\n");
    CHECK(run.err().find("early-err\nlate-err\n") != std::string::npos);
    CHECK(read_file(run.run_dir() + "/stdout.log") == "early-out\nlate-out\n");
    CHECK(read_file(run.run_dir() + "/stderr.log") == "early-err\nlate-err\n");
    struct stat st {};
    REQUIRE(stat(run.run_dir().c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0700);
    CHECK(st.st_uid == 0);
    CorralRun r;
    r.run_dir = run.run_dir();
    r.record = read_record(r.run_dir);
    check_nothing_left(r);
}

TEST_CASE("--log-limit caps each log on the host's disk; the stream still gets everything, run.json says so") {
    CorralArgs args;
    args.flags = {"--log-limit", "64K"};
    // 200000 bytes on stdout, 100000 on stderr, then a marker past the cap.
    auto run = corral_sh("head -c 200000 /dev/zero | tr '\\0' a; head -c 100000 /dev/zero | tr '\\0' b >&2; "
                         "echo TAIL-OUT; echo TAIL-ERR >&2",
                         args);
    CHECK(run.result.exit_code == 0);
    CHECK(run.result.out.size() == 200000 + 9);  // the stream: everything
    CHECK(run.result.out.ends_with("TAIL-OUT\n"));
    CHECK(run.result.err.find("TAIL-ERR") != std::string::npos);
    CHECK(run.result.err.find("stdout.log reached --log-limit (65536 bytes)") != std::string::npos);
    CHECK(run.result.err.find("stderr.log reached --log-limit (65536 bytes)") != std::string::npos);
    const std::string out_log = read_file(run.run_dir + "/stdout.log");
    const std::string err_log = read_file(run.run_dir + "/stderr.log");
    CHECK(out_log == std::string(65536, 'a'));  // the log: exactly the first 64 KiB
    CHECK(err_log == std::string(65536, 'b'));
    REQUIRE(run.record.has_value());
    const auto& output = (*run.record)["output"];
    INFO(output.dump());
    CHECK(output["stdout"]["bytes"] == 200009);
    CHECK(output["stdout"]["logged"] == 65536);
    CHECK(output["stderr"]["bytes"] == 100009);
    CHECK(output["stderr"]["logged"] == 65536);
    CHECK(output["log_limit_bytes"] == 65536);
    check_nothing_left(run);
}

TEST_CASE("stdin is /dev/null unless --stdin passes corral's stdin through") {
    CorralArgs closed;
    closed.process.stdin_data = "host-stdin-data\n";
    auto run = corral_sh("echo START; cat; echo \"rc=$?\"; echo DONE", closed);
    INFO(transcript(run.result));
    REQUIRE(run.result.out.find("DONE") != std::string::npos);
    CHECK(run.result.out.find("host-stdin-data") == std::string::npos);
    CHECK(field(run.result.out, "rc") == "0");  // EOF at once: /dev/null
    check_nothing_left(run);

    CorralArgs open = closed;
    open.flags = {"--stdin"};
    auto passed = corral_sh("echo START; cat; echo DONE", open);
    INFO(transcript(passed.result));
    REQUIRE(passed.result.out.find("DONE") != std::string::npos);
    CHECK(passed.result.out == "START\nhost-stdin-data\nDONE\n");
    check_nothing_left(passed);
}

TEST_CASE("run.json has every field of the contract with the right types and values") {
    std::string ws = fresh_dir("ws", 0755);
    CorralArgs args;
    args.flags = {"--memory", "64M", "--pids", "100", "--cpus", "0.5", "--timeout", "30s",
                  "--env", "SBT_A=b", "--workspace", ws, "--hostname", "sbt-record"};
    auto run = corral_run({"/bin/sh", "-c", "echo hi; exit 0"}, args);
    INFO(transcript(run.result));
    CHECK(run.result.exit_code == 0);
    REQUIRE(run.record.has_value());
    const auto& rec = *run.record;
    INFO(rec.dump(2));
    const std::set<std::string> expected{"id", "argv", "uid", "gid", "hostname", "rootfs", "workspace",
                                         "started_at", "ended_at", "duration_ms", "exit_code", "signal",
                                         "deadline_hit", "limits", "peak_memory_bytes", "peak_pids",
                                         "teardown", "status", "output"};
    for (const auto& k : expected) CHECK_MESSAGE(rec.contains(k), "run.json lacks " << k);
    REQUIRE(rec.contains("id"));
    CHECK(std::regex_match(rec["id"].get<std::string>(), std::regex(R"(\d{8}T\d{9}Z-[0-9a-f]{6})")));
    CHECK(rec["argv"] == nlohmann::json::array({"/bin/sh", "-c", "echo hi; exit 0"}));
    CHECK(rec["uid"].is_number_integer());
    CHECK(rec["gid"] == rec["uid"]);
    CHECK(rec["hostname"] == "sbt-record");
    CHECK(fs::equivalent(rec["rootfs"].get<std::string>(), rootfs()));
    CHECK(fs::equivalent(rec["workspace"].get<std::string>(), ws));
    const std::regex rfc3339(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
    CHECK(std::regex_match(rec["started_at"].get<std::string>(), rfc3339));
    CHECK(std::regex_match(rec["ended_at"].get<std::string>(), rfc3339));
    CHECK(rec["ended_at"].get<std::string>() >= rec["started_at"].get<std::string>());
    CHECK(rec["duration_ms"].is_number_integer());
    CHECK(rec["duration_ms"].get<long long>() >= 0);
    CHECK(rec["exit_code"] == 0);
    CHECK(rec["signal"].is_null());
    CHECK(rec["deadline_hit"] == false);
    CHECK(rec["limits"]["memory_bytes"] == 64LL * 1024 * 1024);
    CHECK(rec["limits"]["pids"] == 100);
    CHECK(rec["limits"]["cpus"] == doctest::Approx(0.5));
    CHECK(rec["limits"]["timeout_ms"] == 30000);
    CHECK(rec["peak_memory_bytes"].is_number_integer());
    CHECK(rec["peak_pids"].is_number_integer());
    CHECK(rec["peak_pids"].get<long long>() >= 1);
    CHECK(rec["teardown"]["verdict"] == "clean");
    CHECK(rec["teardown"]["problems"] == nlohmann::json::array());
    REQUIRE(rec["teardown"]["steps"].is_array());
    CHECK(!rec["teardown"]["steps"].empty());
    for (const auto& s : rec["teardown"]["steps"]) {
        CHECK(s["step"].is_string());
        CHECK(s["ok"] == true);
        CHECK(s.contains("detail"));
    }
    CHECK(rec["status"] == 0);
    CHECK(read_file(run.run_dir + "/stdout.log") == "hi\n");
    check_nothing_left(run);

    // Without limits every limit is null.
    auto plain = corral_run({"/bin/true"});
    REQUIRE(plain.record.has_value());
    for (const char* k : {"memory_bytes", "pids", "cpus", "timeout_ms"})
        CHECK_MESSAGE((*plain.record)["limits"][k].is_null(), k << " = " << (*plain.record)["limits"][k].dump());
    check_nothing_left(plain);
}

}  // namespace
}  // namespace corral::test::sandbox
