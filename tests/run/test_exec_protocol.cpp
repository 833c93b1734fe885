// What `corral exec` and a session's supervisor say on the socket
// (run/exec_protocol.hpp): a request and an answer survive the line, and
// every bad field is refused with its name.
#include <doctest/doctest.h>

#include "base/sys_error.hpp"
#include "run/exec_protocol.hpp"

using namespace corral::run;
using corral::UsageError;

TEST_CASE("an exec request and its answer survive their line") {
    ExecRequest r;
    r.role = corral::supervisor::Role::verifier;
    r.argv = {"sh", "-c", "echo \"quoted\"\n"};
    r.env = {{"A", "1"}, {"B", "x=y"}};
    r.cwd = "/tmp";
    r.timeout = std::chrono::milliseconds(1500);
    r.grace = std::chrono::milliseconds(0);
    const std::string line = exec_request_line(r);
    CHECK(line.back() == '\n');
    CHECK(line.find('\n') == line.size() - 1);  // one line, whatever argv holds
    ExecRequest back = parse_exec_request_line(line.substr(0, line.size() - 1));
    CHECK(back.role == corral::supervisor::Role::verifier);
    CHECK(back.argv == r.argv);
    CHECK(back.env == r.env);
    CHECK(back.cwd == r.cwd);
    CHECK(back.timeout == r.timeout);
    CHECK(back.grace == r.grace);
    CHECK_FALSE(back.tty);

    r.tty = true;
    r.term = "screen-256color";
    const std::string tty_line = exec_request_line(r);
    ExecRequest tty_back = parse_exec_request_line(tty_line.substr(0, tty_line.size() - 1));
    CHECK(tty_back.tty);
    CHECK(tty_back.term == "screen-256color");

    ExecAnswer a;
    a.exec = 3;
    a.status = 124;
    a.outcome = corral::supervisor::Outcome::deadline;
    a.messages = {"deadline of 1500 ms reached"};
    ExecAnswer ab = parse_exec_answer_line(exec_answer_line(a));
    CHECK(ab.exec == 3);
    CHECK(ab.status == 124);
    CHECK(ab.outcome == corral::supervisor::Outcome::deadline);
    CHECK(exec_answer_line(a).find(R"("outcome":"deadline")") != std::string::npos);
    CHECK_THROWS_AS(parse_exec_answer_line(R"({"exec":1,"status":0,"outcome":"exploded"})"), corral::UsageError);
    CHECK(ab.messages == a.messages);
}

TEST_CASE("a prompt exec carries the task and no command") {
    ExecRequest r;
    r.prompt = "fix the \"failing\" test\nthen stop";
    const std::string line = exec_request_line(r);
    CHECK(line.find('\n') == line.size() - 1);
    ExecRequest back = parse_exec_request_line(line.substr(0, line.size() - 1));
    CHECK(back.prompt == r.prompt);
    CHECK(back.argv.empty());
    CHECK(back.role == corral::supervisor::Role::agent);
    CHECK_FALSE(parse_exec_request_line(R"({"argv":["x"]})").prompt.has_value());
    CHECK_FALSE(parse_exec_request_line(R"({"argv":["x"],"prompt":null})").prompt.has_value());
}

TEST_CASE("a bad exec request is refused with the field named") {
    const std::pair<const char*, const char*> cases[] = {
        {"not json", "not a JSON object"},
        {"[]", "not a JSON object"},
        {R"({})", "argv"},
        {R"({"argv":[]})", "argv"},
        {R"({"argv":[1]})", "argv"},
        {R"({"argv":[""]})", "argv[0]"},
        {R"({"argv":["x"],"role":"root"})", "--role root"},
        {R"({"argv":["x"],"role":7})", "--role"},
        {R"({"argv":["x"],"env":{"A":"1"}})", "env"},
        {R"({"argv":["x"],"env":[["A"]]})", "env"},
        {R"({"argv":["x"],"env":[["1A","v"]]})", ""},
        {R"({"argv":["x"],"cwd":"rel"})", "--cwd"},
        {R"({"argv":["x"],"timeout_ms":0})", "--timeout"},
        {R"({"argv":["x"],"timeout_ms":-5})", "timeout_ms"},
        {R"({"argv":["x"],"grace_ms":"1s"})", "grace_ms"},
        {R"({"argv":[],"prompt":" \n"})", "--prompt: empty"},
        {R"({"argv":[],"prompt":7})", "prompt: expected a string"},
        {R"({"argv":["x"],"prompt":"task"})", "not both"},
        {R"({"argv":[],"prompt":"task","role":"verifier"})", "--role verifier cannot take it"},
        {R"({"argv":[],"prompt":"a\u0000b"})", "NUL"},
        {R"({"prompt":"task"})", "argv"},
        {R"({"argv":["x"],"tty":true})", "tty: expected null or"},
        {R"({"argv":["x"],"tty":{"term":7}})", "tty: expected null or"},
        {R"({"argv":[],"prompt":"task","tty":{"term":"xterm"}})", "--tty with --prompt"},
    };
    for (const auto& c : cases) {
        const char* line = c.first;
        const char* says = c.second;
        INFO(line);
        try {
            parse_exec_request_line(line);
            FAIL_CHECK("accepted");
        } catch (const UsageError& e) {
            CHECK(std::string(e.what()).find(says) != std::string::npos);
        }
    }
    CHECK_THROWS_AS(parse_exec_answer_line("{\"exec\":1}"), corral::UsageError);
}
