// Sessions say why (issue 35): `corral exec -i` passes its stdin to CMD;
// Ctrl-C on a non-tty exec is passed on and waited for, as `corral run`
// waits; a gateway refusal during an exec, and the session's deadline that
// ended it, reach that exec's caller on stderr; `corral logs SESSION` names
// each exec before its output; corral-exec, the small client, does what
// corral exec does.
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "tests/supervisor/sandbox/sandbox_support.hpp"
#include "tests/supervisor/sandbox/sessions_support.hpp"

namespace corral::test::sandbox {
namespace {

using nlohmann::json;

TEST_CASE("exec -i / --stdin: CMD reads corral exec's stdin; without it, the box's /dev/null") {
    Sessions s;
    const std::string id = s.start();
    RunOptions with_input;
    with_input.stdin_data = "line one\nline two\n";
    for (const char* flag : {"-i", "--stdin"}) {
        std::vector<std::string> argv{corral_bin(), "exec", "--state-dir", s.state, flag, id, "--", "/bin/sh", "-c",
                                      "wc -l; echo done"};
        Result r = run(argv, with_input);
        INFO(transcript(r));
        CHECK(r.exit_code == 0);
        CHECK(lines(r.out) == std::vector<std::string>{"2", "done"});
    }
    Result plain = run({corral_bin(), "exec", "--state-dir", s.state, id, "--", "/bin/sh", "-c", "wc -l"}, with_input);
    INFO(transcript(plain));
    CHECK(plain.exit_code == 0);
    CHECK(lines(plain.out) == std::vector<std::string>{"0"});
    s.stop_and_check(id, {uid_of_exec(s.exec_record(id, 1))});
}

TEST_CASE("Ctrl-C on a non-tty exec: CMD gets SIGTERM, corral exec waits for it and exits with its status") {
    Sessions s;
    const std::string id = s.start();
    RunOptions opts;
    opts.stderr_file = fresh_path("exec-stderr");
    Background caller({corral_bin(), "exec", "--state-dir", s.state, "--grace", "20s", id, "--", "/bin/sh", "-c",
                       "trap 'sleep 1; echo got-term; exit 7' TERM; echo up; sleep 60 & wait"},
                      opts);
    REQUIRE(caller.wait_for_stdout("up", 30s));
    caller.signal(SIGINT);
    // corral exec is still there while CMD's trap runs: it waits, as corral run does.
    CHECK(caller.wait_exit(30s) == 130);
    CHECK(caller.drain_stdout().find("got-term") != std::string::npos);
    const std::string err = read_file(opts.stderr_file);
    INFO(err);
    CHECK(err.find("corral exec: interrupted by SIGINT (corral exec's, passed on); CMD got SIGTERM and ended within the "
                   "20s grace") != std::string::npos);
    json rec = s.exec_record(id, 1);
    INFO(rec.dump(2));
    CHECK(rec["outcome"] == "interrupted");
    CHECK(rec["caller_gone"] == false);
    CHECK(rec["exit_code"] == 7);
    s.stop_and_check(id, {uid_of_exec(rec)});
}

TEST_CASE("a refusal during an exec is told to that exec's caller; the session's deadline too") {
    Sessions s;
    const std::string id = s.start({"--timeout", "20s"});
    // The watcher polls the gateway's refusals every 250 ms while the box has traffic, and twice after:
    // the exec lives on a while after its request.
    Result refused = s.sh(id, "agent", "wget -q -O- http://no-grant-io.invalid/ >/dev/null 2>&1; sleep 3; echo after");
    INFO(transcript(refused));
    CHECK(refused.out.find("after") != std::string::npos);
    CHECK(refused.err.find("corral exec: refused ") != std::string::npos);
    CHECK(refused.err.find(" no-grant-io.invalid:80 (") != std::string::npos);
    // A later exec that makes no request is told nothing of it.
    Result quiet = s.sh(id, "agent", "sleep 1; echo quiet");
    INFO(transcript(quiet));
    CHECK(quiet.err.find("refused") == std::string::npos);
    // The session's --timeout ends a running exec: its caller is told so.
    Result ended = s.sh(id, "agent", "sleep 60");
    INFO(transcript(ended));
    CHECK(ended.exit_code == 143);
    CHECK(ended.err.find("corral exec: the session ended: its deadline (--timeout 20s) was reached; every exec got "
                         "SIGTERM") != std::string::npos);
}

TEST_CASE("corral logs SESSION names each exec (number, role, command) before its output, on each stream") {
    Sessions s;
    const std::string id = s.start();
    CHECK(s.sh(id, "agent", "echo one").exit_code == 0);
    CHECK(s.sh(id, "service", "echo two; echo oops >&2").exit_code == 0);
    Result logs = s.corral({"logs", id});
    INFO(transcript(logs));
    CHECK(logs.exit_code == 0);
    CHECK(lines(logs.out) == std::vector<std::string>{"==> exec 1 (agent): /bin/sh -c 'echo one' <==", "one",
                                                      "==> exec 2 (service): /bin/sh -c 'echo two; echo oops >&2' <==",
                                                      "two"});
    CHECK(lines(logs.err) ==
          std::vector<std::string>{"==> exec 2 (service): /bin/sh -c 'echo two; echo oops >&2' <==", "oops"});
    s.stop_and_check(id, {uid_of_exec(s.exec_record(id, 1))});
}

// corral-exec (tools/exec_main.cpp): the exec client alone, beside corral.
std::string corral_exec_bin() { return corral_bin().substr(0, corral_bin().rfind('/')) + "/corral-exec"; }

TEST_CASE("corral-exec is corral exec: the same output, status, record and refusals, from a small binary") {
    Sessions s;
    const std::string id = s.start();
    RunOptions with_input;
    with_input.stdin_data = "in\n";
    Result r = run({corral_exec_bin(), "--state-dir", s.state, "-i", id, "--", "/bin/sh", "-c",
                    "cat; echo out; echo err >&2; exit 3"},
                   with_input);
    INFO(transcript(r));
    CHECK(r.exit_code == 3);
    CHECK(lines(r.out) == std::vector<std::string>{"in", "out"});
    CHECK(lines(r.err) == std::vector<std::string>{"err"});
    json rec = s.exec_record(id, 1);
    INFO(rec.dump(2));
    CHECK(rec["exit_code"] == 3);
    CHECK(rec["role"] == "agent");
    // Its refusals are corral exec's, in its words.
    Result unknown = run({corral_exec_bin(), "--state-dir", s.state, "20991231T000000000Z-abcdef", "--", "/bin/true"});
    CHECK(unknown.exit_code == 125);
    CHECK(unknown.err.find("corral exec: ") == 0);
    CHECK(unknown.err.find("no run") != std::string::npos);
    Result no_command = run({corral_exec_bin(), "--state-dir", s.state, id});
    CHECK(no_command.exit_code == 2);
    CHECK(no_command.err.find("missing command") != std::string::npos);
    Result help = run({corral_exec_bin(), "--help"});
    CHECK(help.exit_code == 0);
    CHECK(help.out.find("corral exec") != std::string::npos);
    s.stop_and_check(id, {uid_of_exec(rec)});
}

}  // namespace
}  // namespace corral::test::sandbox
