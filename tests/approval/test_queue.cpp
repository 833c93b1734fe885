// tests/approval/test_queue.cpp — the approval queue's promises: bound to
// the exact request, single-use, expiring; no decision is timed_out (never a
// deny, never an approval); a decision after expiry or a second decision is
// refused with a sentence; --always only for egress.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "approval/queue.hpp"

using namespace corral::approval;
using namespace std::chrono_literals;

namespace {

Request egress(const std::string& path = "/v1/repos") {
    Request r;
    r.kind = Request::Kind::egress;
    r.identity = "w1/run-1";
    r.method = "POST";
    r.host = "api.github.com";
    r.port = 443;
    r.path = path;
    return r;
}

Request tool_call(const std::string& digest = "sha256:aa") {
    Request r;
    r.kind = Request::Kind::tool;
    r.identity = "w1/run-1";
    r.server = "gh";
    r.tool = "create_pull_request";
    r.arguments = R"({"title":"x"})";
    r.arguments_digest = digest;
    return r;
}

const Clock::time_point t0 = Clock::time_point{} + 1000h;

}  // namespace

TEST_CASE("the digest binds every forwarded field: a changed request is a different digest") {
    const std::string base = request_digest(egress());
    CHECK(base.starts_with("sha256:"));
    CHECK(request_digest(egress()) == base);
    CHECK(request_digest(egress("/v1/other")) != base);
    Request r = egress();
    r.port = 8443;
    CHECK(request_digest(r) != base);
    r = egress();
    r.method = "DELETE";
    CHECK(request_digest(r) != base);
    r = egress();
    r.identity = "w1/run-2";
    CHECK(request_digest(r) != base);
    CHECK(request_digest(tool_call("sha256:aa")) != request_digest(tool_call("sha256:bb")));
}

TEST_CASE("one pending entry per exact request; a changed request is a new entry") {
    Queue q;
    Entry a = q.ask(egress(), t0, 60s);
    Entry again = q.ask(egress(), t0 + 1s, 60s);
    CHECK(again.id == a.id);
    Entry other = q.ask(egress("/v1/other"), t0 + 2s, 60s);
    CHECK(other.id != a.id);
    auto pending = q.pending(t0 + 3s);
    REQUIRE(pending.size() == 2);
    CHECK(pending[0].id == a.id);   // oldest first
}

TEST_CASE("an approval is taken once; a deny is never taken; the listener hears each decision") {
    Queue q;
    std::vector<std::string> heard;
    q.on_decided([&](const std::string& id) { heard.push_back(id); });
    Entry a = q.ask(egress(), t0, 60s);
    CHECK_FALSE(q.take(a.id, t0 + 1s));   // pending: nothing to take
    auto d = q.decide(a.id, true, "alice", "", false, t0 + 2s);
    REQUIRE(d);
    CHECK(d->state == State::approved);
    CHECK(d->decided_by == "alice");
    CHECK(q.take(a.id, t0 + 3s));
    CHECK_FALSE(q.take(a.id, t0 + 4s));   // single-use
    CHECK(q.look(a.id, t0 + 5s)->state == State::spent);
    // The same request asked again is a new entry, to be decided again.
    Entry b = q.ask(egress(), t0 + 6s, 60s);
    CHECK(b.id != a.id);
    auto denied = q.decide(b.id, false, "bob", "not on a Friday", false, t0 + 7s);
    REQUIRE(denied);
    CHECK_FALSE(q.take(b.id, t0 + 8s));
    CHECK(heard == std::vector<std::string>{a.id, b.id});
    CHECK(refusal_sentence(*q.look(b.id, t0 + 9s)) ==
          "refused by corral: POST api.github.com:443/v1/repos was denied by bob (not on a Friday); do not retry it by "
          "other means");
}

TEST_CASE("no decision by the deadline is timed_out, never a deny or an approval; a late decision is refused") {
    Queue q;
    Entry a = q.ask(tool_call(), t0, 30s);
    CHECK(q.look(a.id, t0 + 29s)->state == State::pending);
    auto late = q.look(a.id, t0 + 30s);
    CHECK(late->state == State::timed_out);
    CHECK(late->decided_by.empty());
    CHECK_FALSE(q.take(a.id, t0 + 31s));
    auto d = q.decide(a.id, true, "alice", "", false, t0 + 31s);
    REQUIRE_FALSE(d);
    CHECK(d.problem().find("expired: no decision came within its timeout") != std::string::npos);
    CHECK(refusal_sentence(*late) ==
          "refused by corral: the call of tool create_pull_request of MCP server gh needs a person's approval, and none "
          "was given in time: no consent was given; do not try to reach the same result another way");
    // An approval not taken by the deadline lapses as well.
    Entry b = q.ask(egress(), t0, 30s);
    REQUIRE(q.decide(b.id, true, "alice", "", false, t0 + 1s));
    CHECK_FALSE(q.take(b.id, t0 + 30s));
    CHECK(q.look(b.id, t0 + 30s)->state == State::timed_out);
}

TEST_CASE("decisions refused: an unknown id, a second decision, --always on a tool call") {
    Queue q;
    auto unknown = q.decide("ap-9-deadbeef", true, "alice", "", false, t0);
    REQUIRE_FALSE(unknown);
    CHECK(unknown.problem() == "no approval request ap-9-deadbeef (`corral approvals` lists the pending ones)");
    Entry a = q.ask(tool_call(), t0, 60s);
    auto always = q.decide(a.id, true, "alice", "", true, t0 + 1s);
    REQUIRE_FALSE(always);
    CHECK(always.problem().starts_with("--always is for egress approvals"));
    REQUIRE(q.decide(a.id, false, "alice", "", false, t0 + 2s));
    auto second = q.decide(a.id, true, "bob", "", false, t0 + 3s);
    REQUIRE_FALSE(second);
    CHECK(second.problem() == "approval request " + a.id + " is denied (by alice) already; a decision is made once");
    Entry e = q.ask(egress(), t0, 60s);
    auto grant = q.decide(e.id, true, "alice", "", true, t0 + 1s);
    REQUIRE(grant);
    CHECK(grant->always);
}

TEST_CASE("the timeout is bounded; cancel_all ends what waits as cancelled; ended entries are forgotten") {
    Queue q;
    Entry a = q.ask(egress(), t0, std::chrono::seconds(1'000'000));
    CHECK(a.deadline - a.asked_at == kMaxApprovalTimeout);
    Entry b = q.ask(egress("/b"), t0, 0s);
    CHECK(b.deadline - b.asked_at == 1s);
    auto cancelled = q.cancel_all("the gateway daemon restarted", t0 + 500ms);
    CHECK(cancelled.size() == 2);
    CHECK(q.look(a.id, t0 + 1s)->state == State::cancelled);
    CHECK(refusal_sentence(*q.look(a.id, t0 + 1s)).find("its approver stopped (the gateway daemon restarted)") !=
          std::string::npos);
    q.forget_ended(t0 + 2s);
    CHECK_FALSE(q.look(a.id, t0 + 3s));
    CHECK(q.pending(t0 + 3s).empty());
}
