// The approvals control socket's protocol (approval/protocol.hpp): the lines
// a client sends read back as sent, a bad line is refused naming what was
// wrong, and an entry shows what is asked and, once decided, by whom.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "approval/protocol.hpp"

using namespace corral;
using namespace corral::approval;
using nlohmann::json;

namespace {

std::string without_newline(std::string line) {
    REQUIRE(!line.empty());
    CHECK(line.back() == '\n');
    line.pop_back();
    return line;
}

Entry egress_entry() {
    Queue q;
    Request r;
    r.identity = "w1/run-1";
    r.method = "CONNECT";
    r.host = "api.github.com";
    r.port = 443;
    return q.ask(r, Clock::now(), std::chrono::seconds(60));
}

}  // namespace

TEST_CASE("approval protocol: list and decide read back as written") {
    auto list = parse_control_request(without_newline(list_request()));
    REQUIRE(list);
    CHECK(list->op == ControlRequest::Op::list);
    auto decide = parse_control_request(without_newline(decide_request("ap-1-0a1b2c3d", false, "not \"today\"", true)));
    REQUIRE(decide);
    CHECK(decide->op == ControlRequest::Op::decide);
    CHECK(decide->id == "ap-1-0a1b2c3d");
    CHECK(!decide->approve);
    CHECK(decide->reason == "not \"today\"");
    CHECK(decide->always);
}

TEST_CASE("approval protocol: a bad request is refused with what was wrong") {
    CHECK(parse_control_request("nope").problem() == "not a JSON object");
    CHECK(parse_control_request("{}").problem().find("\"op\"") != std::string::npos);
    CHECK(parse_control_request(R"({"op":"erase"})").problem().find("unknown op") != std::string::npos);
    CHECK(parse_control_request(R"({"op":"decide","approve":true})").problem().find("\"id\"") != std::string::npos);
    CHECK(parse_control_request(R"({"op":"decide","id":"ap-1-x","approve":"yes"})").problem().find("true or false") !=
          std::string::npos);
    CHECK(parse_control_request(std::string(kMaxControlLine + 1, ' ')).problem().find("longer than") != std::string::npos);
}

TEST_CASE("approval protocol: an entry shows what is asked; a decided one who decided") {
    Entry e = egress_entry();
    json j = entry_json(e);
    CHECK(j["kind"] == "egress");
    CHECK(j["method"] == "CONNECT");
    CHECK(j["host"] == "api.github.com");
    CHECK(j["port"] == 443);
    CHECK(j["state"] == "pending");
    CHECK(j["digest"] == e.digest);
    CHECK(!j.contains("decided_by"));
    CHECK(j["deadline"].get<std::string>().size() == std::string("2026-12-06T15:04:05.123Z").size());

    e.state = State::denied;
    e.decided_by = "root (uid 0)";
    e.reason = "no";
    e.decided_at = Clock::now();
    j = entry_json(e);
    CHECK(j["state"] == "denied");
    CHECK(j["decided_by"] == "root (uid 0)");
    CHECK(j["reason"] == "no");

    auto answer = json::parse(list_answer("run r1", {e}));
    CHECK(answer["decider"] == "run r1");
    CHECK(answer["pending"].size() == 1);
    CHECK(json::parse(decide_answer(Failed{"expired"}))["error"] == "expired");
    CHECK(json::parse(decide_answer(e))["ok"] == true);
}

TEST_CASE("approval protocol: where deciders listen") {
    CHECK(run_control_socket("/var/lib/corral", "r1") == "/var/lib/corral/approvals/r1.sock");
    CHECK(daemon_control_socket("/var/lib/corral") == "/var/lib/corral/approvals/gateway.sock");
}
