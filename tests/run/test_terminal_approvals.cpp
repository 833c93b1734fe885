// run/terminal_approvals: the --tty prompt's side of the approval desk,
// against a real gateway::ApprovalDesk (its ledger in a temporary file):
// the question for an entry, questions in order, one decided elsewhere
// taken down, the terminal's own answer recorded with its decider, and an
// answer to an entry that ended meanwhile refused and said so.
#include <doctest/doctest.h>

#include <poll.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "gateway/approval_desk.hpp"
#include "run/terminal_approvals.hpp"

using namespace corral;

namespace {

approval::Request egress_request(const std::string& path) {
    approval::Request r;
    r.identity = "w/run-1";
    r.method = "GET";
    r.host = "127.0.0.1";
    r.port = 8080;
    r.path = path;
    return r;
}

bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

struct DeskFixture {
    std::string dir;
    std::unique_ptr<gateway::Ledger> ledger;
    std::unique_ptr<gateway::ApprovalDesk> desk;
    DeskFixture() {
        char tmpl[] = "/tmp/corral-terminal-approvals.XXXXXX";
        REQUIRE(mkdtemp(tmpl) != nullptr);
        dir = tmpl;
        ledger = std::make_unique<gateway::Ledger>(dir + "/ledger.jsonl");
        desk = std::make_unique<gateway::ApprovalDesk>(*ledger);
        desk->announce_in_log(false);  // the test's output stays its own
    }
    ~DeskFixture() {
        desk.reset();
        ledger.reset();
        std::filesystem::remove_all(dir);
    }
};

}  // namespace

TEST_CASE("terminal approvals: the question says what is asked, the id, the identity and when it expires") {
    approval::Entry e;
    e.id = "ap-3-deadbeef";
    e.request = egress_request("/v1/things?q=1");
    e.deadline = approval::Clock::now() + std::chrono::seconds(90);
    auto q = run::approval_question(e, e.deadline - std::chrono::seconds(60));
    CHECK(q.id == "ap-3-deadbeef");
    REQUIRE(q.lines.size() == 3);
    CHECK(has(q.lines[0], "GET 127.0.0.1:8080/v1/things?q=1"));
    CHECK(has(q.lines[1], "approval ap-3-deadbeef for w/run-1, expires in 60 s ("));
    CHECK(has(q.lines[1], " UTC)"));

    e.request = approval::Request{};
    e.request.kind = approval::Request::Kind::tool;
    e.request.server = "github";
    e.request.tool = "create_pull_request";
    e.request.arguments = "{\"title\":\"" + std::string(300, 'x') + "\"}";
    e.request.arguments_digest = "sha256:abcd";
    q = run::approval_question(e, e.deadline + std::chrono::seconds(5));
    CHECK(has(q.lines[0], "the call of tool create_pull_request of MCP server github (arguments sha256:abcd: {\"title\":\"xxx"));
    CHECK(q.lines[0].size() < 300);
    CHECK(has(q.lines[1], "expires in 0 s"));
}

TEST_CASE("terminal approvals: how an entry ended, in words") {
    approval::Entry e;
    e.id = "ap-1-00000001";
    e.state = approval::State::denied;
    e.decided_by = "root (uid 0)";
    e.reason = "not today";
    CHECK(run::ended_sentence(e) == "ap-1-00000001: denied by root (uid 0) (not today)");
    e.state = approval::State::approved;
    e.reason.clear();
    CHECK(run::ended_sentence(e) == "ap-1-00000001: approved by root (uid 0)");
    e.state = approval::State::timed_out;
    CHECK(has(run::ended_sentence(e), "timed out"));
    e.state = approval::State::cancelled;
    e.reason = "the run ended";
    CHECK(run::ended_sentence(e) == "ap-1-00000001: cancelled (the run ended)");
    CHECK(run::terminal_decider(0) == "root (uid 0) at the run's terminal");
}

TEST_CASE("terminal approvals: questions in order; one decided elsewhere goes; the terminal's answer is a decision") {
    DeskFixture f;
    run::TerminalApprovals t(*f.desk, run::terminal_decider(0));
    CHECK_FALSE(readable(t.changes_fd()));
    CHECK_FALSE(t.next().has_value());

    const approval::Entry first = f.desk->ask(egress_request("/first"), std::chrono::seconds(60));
    const approval::Entry second = f.desk->ask(egress_request("/second"), std::chrono::seconds(60));
    // The same exact request again joins the first entry: no new question.
    f.desk->ask(egress_request("/first"), std::chrono::seconds(60));
    CHECK(readable(t.changes_fd()));
    t.changes_seen();
    CHECK_FALSE(readable(t.changes_fd()));

    auto q1 = t.next();
    REQUIRE(q1.has_value());
    CHECK(q1->id == first.id);
    CHECK_FALSE(t.ended(first.id).has_value());

    // `corral approve` decides the first while it is shown.
    REQUIRE(f.desk->decide(first.id, true, "root (uid 0)", "", false).has_value());
    CHECK(readable(t.changes_fd()));
    t.changes_seen();
    auto how = t.ended(first.id);
    REQUIRE(how.has_value());
    CHECK(*how == first.id + ": approved by root (uid 0)");
    // A y pressed for it now is refused at the desk, and said so.
    CHECK(has(t.answer(first.id, true), first.id + ": not decided here: "));

    auto q2 = t.next();
    REQUIRE(q2.has_value());
    CHECK(q2->id == second.id);
    const std::string outcome = t.answer(second.id, false);
    CHECK(outcome == second.id + ": denied by root (uid 0) at the run's terminal (denied at the run's terminal)");
    auto counts = f.desk->counts("w/run-1");
    CHECK(counts.approved == 1);
    CHECK(counts.denied == 1);
    CHECK_FALSE(t.next().has_value());
}

TEST_CASE("terminal approvals: an entry that ended before its turn is never asked") {
    DeskFixture f;
    run::TerminalApprovals t(*f.desk, run::terminal_decider(0));
    const approval::Entry first = f.desk->ask(egress_request("/a"), std::chrono::seconds(60));
    const approval::Entry second = f.desk->ask(egress_request("/b"), std::chrono::seconds(60));
    REQUIRE(f.desk->decide(first.id, false, "root (uid 0)", "no", false).has_value());
    auto q = t.next();
    REQUIRE(q.has_value());
    CHECK(q->id == second.id);
    f.desk->cancel_all("the run ended");
    CHECK(t.ended(second.id) == second.id + ": cancelled (the run ended)");
}
