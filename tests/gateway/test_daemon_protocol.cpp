// gateway/daemon_protocol: the first lines and the counts answer, both sides.
// The answer as the supervisor reads it for run.json: exact counts or
// nothing, never a number made up from another one.
#include <doctest/doctest.h>

#include <string>

#include "gateway/daemon_protocol.hpp"
#include "gateway/ledger.hpp"

using namespace corral::gateway;

namespace {
// The answer read, with what was wrong kept in *problem for the checks below.
std::optional<DaemonCounts> parse_daemon_counts(std::string_view answer, std::string* problem) {
    auto counts = parse_counts_answer(answer);
    if (!counts) {
        *problem = counts.problem();
        return std::nullopt;
    }
    return *std::move(counts);
}
}  // namespace

TEST_CASE("the daemon's counts line: two unsigned integers") {
    std::string problem;
    auto c = parse_daemon_counts("{\"requests\":12,\"refusals\":3}\n", &problem);
    REQUIRE(c.has_value());
    CHECK(c->requests == 12);
    CHECK(c->refusals == 3);
    auto big = parse_daemon_counts("{\"requests\":18446744073709551615,\"refusals\":0}\n", &problem);
    REQUIRE(big.has_value());
    CHECK(big->requests == 18446744073709551615ull);
}

TEST_CASE("the daemon's counts line: secrets_reflected, 0 from a daemon that does not send it") {
    std::string problem;
    auto c = parse_daemon_counts("{\"requests\":12,\"refusals\":3,\"secrets_reflected\":2}\n", &problem);
    REQUIRE(c.has_value());
    CHECK(c->secrets_reflected == 2);
    auto old = parse_daemon_counts("{\"requests\":12,\"refusals\":3}\n", &problem);
    REQUIRE(old.has_value());
    CHECK(old->secrets_reflected == 0);
    for (const char* bad : {"{\"requests\":1,\"refusals\":0,\"secrets_reflected\":-1}",
                            "{\"requests\":1,\"refusals\":0,\"secrets_reflected\":0.5}",
                            "{\"requests\":1,\"refusals\":0,\"secrets_reflected\":null}"}) {
        std::string text = bad;
        CAPTURE(text);
        CHECK_FALSE(parse_daemon_counts(bad, &problem).has_value());
        CHECK(problem.rfind("unexpected answer: ", 0) == 0);
    }
}

TEST_CASE("a count that is not an unsigned integer is refused, not converted") {
    for (const char* bad : {"{\"requests\":-1,\"refusals\":0}", "{\"requests\":1.5,\"refusals\":0}",
                            "{\"requests\":1,\"refusals\":1.8448e19}", "{\"requests\":1,\"refusals\":-1e300}",
                            "{\"requests\":\"1\",\"refusals\":0}", "{\"requests\":1}", "[1,2]", "not json", ""}) {
        std::string text = bad;
        CAPTURE(text);
        std::string problem;
        CHECK_FALSE(parse_daemon_counts(bad, &problem).has_value());
        CHECK(problem.rfind("unexpected answer: ", 0) == 0);
    }
}

TEST_CASE("what the daemon writes is what the supervisor reads, instance and ledger included") {
    DaemonCounts sent{7, 2, 1, "9f2c4a1b7e3d5f60", ""};
    std::string problem;
    auto got = parse_daemon_counts(counts_answer(sent), &problem);
    REQUIRE(got.has_value());
    CHECK(got->requests == 7);
    CHECK(got->refusals == 2);
    CHECK(got->secrets_reflected == 1);
    CHECK(got->instance == "9f2c4a1b7e3d5f60");
    CHECK(got->ledger_failure.empty());
    CHECK(counts_answer(sent).find("\"ledger\":\"ok\"") != std::string::npos);

    sent.ledger_failure = "write(/var/log/corral/ledger.jsonl): No space left on device";
    got = parse_daemon_counts(counts_answer(sent), &problem);
    REQUIRE(got.has_value());
    CHECK(got->ledger_failure == sent.ledger_failure);
}

TEST_CASE("an older daemon's answer: no instance, a healthy ledger") {
    std::string problem;
    auto old = parse_daemon_counts("{\"requests\":1,\"refusals\":0}\n", &problem);
    REQUIRE(old.has_value());
    CHECK(old->instance.empty());
    CHECK(old->ledger_failure.empty());
    for (const char* bad : {"{\"requests\":1,\"refusals\":0,\"instance\":5}",
                            "{\"requests\":1,\"refusals\":0,\"ledger\":\"\"}",
                            "{\"requests\":1,\"refusals\":0,\"ledger\":null}"}) {
        std::string text = bad;
        CAPTURE(text);
        CHECK_FALSE(parse_daemon_counts(bad, &problem).has_value());
    }
}

TEST_CASE("first lines: an announcement or a counts request, nothing else") {
    Identity id{"w1", "run-1"};
    auto a = identity_announcement(id);
    CHECK(a == "CORRAL-IDENTITY w1/run-1\n");
    auto first = parse_daemon_first_line(std::string_view(a).substr(0, a.size() - 1));
    REQUIRE(first.has_value());
    CHECK_FALSE(first->counts);
    CHECK(first->id.str() == "w1/run-1");
    auto c = counts_request(id);
    first = parse_daemon_first_line(std::string_view(c).substr(0, c.size() - 1));
    REQUIRE(first.has_value());
    CHECK(first->counts);
    for (const char* bad : {"CORRAL-IDENTITY w1", "CORRAL-IDENTITY w1/run/2", "corral-identity w1/r", "CORRAL-COUNTS ",
                            "CORRAL-IDENTITY w 1/r", "GET / HTTP/1.1"})
        CHECK_FALSE(parse_daemon_first_line(bad).has_value());
}

TEST_CASE("a session's announcement carries the connection's role; the counts request never does") {
    Identity id{"w1", "run-1", "verifier"};
    auto a = identity_announcement(id);
    CHECK(a == "CORRAL-IDENTITY w1/run-1 role=verifier\n");
    auto first = parse_daemon_first_line(std::string_view(a).substr(0, a.size() - 1));
    REQUIRE(first.has_value());
    CHECK(first->id.str() == "w1/run-1");  // the role is no part of the identity's name
    CHECK(first->id.role == "verifier");
    CHECK(counts_request(id) == "CORRAL-COUNTS w1/run-1\n");
    CHECK(parse_daemon_first_line("CORRAL-IDENTITY w1/run-1")->id.role.empty());
    for (const char* bad : {"CORRAL-IDENTITY w1/run-1 role=", "CORRAL-IDENTITY w1/run-1 role=a b",
                            "CORRAL-IDENTITY w1/run-1 role=a/b", "CORRAL-IDENTITY w1/run-1 role=x role=y",
                            "CORRAL-COUNTS w1/run-1 role=agent", "CORRAL-IDENTITY w1/run-1 rol=agent"}) {
        std::string text = bad;
        CAPTURE(text);
        CHECK_FALSE(parse_daemon_first_line(bad).has_value());
    }
}

TEST_CASE("daemon protocol: the budget lines name a worker, never an identity or a path") {
    auto show = parse_daemon_first_line("CORRAL-BUDGET dev-1");
    REQUIRE(show);
    CHECK(show->budget);
    CHECK_FALSE(show->budget_reset);
    CHECK(show->worker == "dev-1");
    auto reset = parse_daemon_first_line("CORRAL-BUDGET-RESET dev-1");
    REQUIRE(reset);
    CHECK(reset->budget_reset);
    CHECK(budget_request("dev-1", true) == "CORRAL-BUDGET-RESET dev-1\n");
    for (const char* bad : {"CORRAL-BUDGET ", "CORRAL-BUDGET ../etc", "CORRAL-BUDGET a/b", "CORRAL-BUDGET -x",
                            "CORRAL-BUDGET a b"})
        CHECK_FALSE(parse_daemon_first_line(bad));
}

TEST_CASE("daemon protocol: the counts answer carries the model totals, and a bad one is refused") {
    DaemonCounts c{3, 1, 0, "abc", "", metering::MeterTotals{}};
    c.model->requests = 2;
    c.model->output_tokens = 22;
    std::string problem;
    auto back = parse_daemon_counts(counts_answer(c), &problem);
    REQUIRE(back);
    REQUIRE(back->model);
    CHECK(back->model->output_tokens == 22);
    CHECK_FALSE(parse_daemon_counts(R"({"requests":1,"refusals":0,"model":{"requests":-1}})", &problem));
    CHECK(problem.find("model totals") != std::string::npos);
    auto old = parse_daemon_counts(R"({"requests":1,"refusals":0})", &problem);
    REQUIRE(old);
    CHECK_FALSE(old->model);
}

TEST_CASE("daemon protocol: the refused host:ports travel with the counts; a malformed list is refused") {
    DaemonCounts sent{3, 2, 0, "ab", ""};
    sent.refused.push_back(RefusalNotice{"example.com", 443, "CONNECT", "", "not_granted", 403, 2});
    sent.refused.push_back(RefusalNotice{"api.example.com", 443, "POST", "inject", "model_policy", 400, 1});
    std::string problem;
    auto got = parse_daemon_counts(counts_answer(sent), &problem);
    REQUIRE_MESSAGE(got.has_value(), problem);
    REQUIRE(got->refused.size() == 2);
    CHECK(got->refused[0].host == "example.com");
    CHECK(got->refused[0].count == 2);
    CHECK(got->refused[1].reason == "model_policy");
    CHECK(got->refused[1].status == 400);
    CHECK(got->refused[1].mode == "inject");
    // An older daemon sends none.
    auto old = parse_daemon_counts("{\"requests\":1,\"refusals\":1}\n", &problem);
    REQUIRE(old.has_value());
    CHECK(old->refused.empty());
    CHECK_FALSE(parse_daemon_counts("{\"requests\":1,\"refusals\":1,\"refused\":{}}\n", &problem).has_value());
    CHECK(problem.find("refused must be a list") != std::string::npos);
    CHECK_FALSE(parse_daemon_counts("{\"requests\":1,\"refusals\":1,\"refused\":[{\"host\":1}]}\n", &problem).has_value());
}

TEST_CASE("daemon protocol: an MCP listener's connection is announced as such, with its role; nothing else is one") {
    corral::names::Identity id{"w1", "r1", ""};
    CHECK(mcp_announcement(id) == "CORRAL-MCP w1/r1\n");
    auto first = parse_daemon_first_line("CORRAL-MCP w1/r1");
    REQUIRE(first.has_value());
    CHECK(first->mcp);
    CHECK_FALSE(first->counts);
    CHECK(first->id.str() == "w1/r1");
    id.role = "service";
    CHECK(mcp_announcement(id) == "CORRAL-MCP w1/r1 role=service\n");
    auto with_role = parse_daemon_first_line("CORRAL-MCP w1/r1 role=service");
    REQUIRE(with_role.has_value());
    CHECK(with_role->mcp);
    CHECK(with_role->id.role == "service");
    auto proxy = parse_daemon_first_line("CORRAL-IDENTITY w1/r1");
    REQUIRE(proxy.has_value());
    CHECK_FALSE(proxy->mcp);
    CHECK_FALSE(parse_daemon_first_line("CORRAL-MCP w1").has_value());
    CHECK_FALSE(parse_daemon_first_line("CORRAL-MCP w1/r1 role=a/b").has_value());
    CHECK_FALSE(parse_daemon_first_line("CORRAL-MCPw1/r1").has_value());
}

TEST_CASE("daemon protocol: the run's tool-call counts travel with the counts; absent without MCP; bad ones refused") {
    DaemonCounts c;
    c.requests = 1, c.instance = "ab";
    CHECK(parse_counts_answer(counts_answer(c))->tools == std::nullopt);
    ToolCallCounts t;
    t.calls = 3, t.allowed = 2, t.refused["budget_exhausted"] = 1;
    t.per_tool["s/echo"] = {3, 1};
    c.tools = t;
    const std::string line = counts_answer(c);
    CHECK(line.find("\"tools\":{\"allowed\":2,\"calls\":3,") != std::string::npos);
    auto back = parse_counts_answer(line);
    REQUIRE(back);
    REQUIRE(back->tools.has_value());
    CHECK(tool_counts_json(*back->tools) == tool_counts_json(t));
    for (const char* bad : {R"({"requests":1,"refusals":0,"tools":{"calls":-1,"allowed":0,"refused":{},"per_tool":{}}})",
                            R"({"requests":1,"refusals":0,"tools":{"calls":1,"allowed":0,"refused":{"x":1.5},"per_tool":{}}})",
                            R"({"requests":1,"refusals":0,"tools":{"calls":1,"allowed":0,"refused":{},"per_tool":{"s/t":{"calls":1}}}})",
                            R"({"requests":1,"refusals":0,"tools":[]})"}) {
        auto r = parse_counts_answer(bad);
        CHECK_FALSE(r);
        if (!r) CHECK(r.problem().find("every count an unsigned integer") != std::string::npos);
    }
}

TEST_CASE("daemon protocol: the run's approval counts travel with the counts; absent from an older daemon; bad ones "
          "refused") {
    DaemonCounts c;
    c.requests = 2, c.instance = "ab";
    CHECK(parse_counts_answer(counts_answer(c))->approvals == std::nullopt);
    c.approvals = corral::approval::ApprovalCounts{3, 1, 1, 1, 0};
    auto back = parse_counts_answer(counts_answer(c));
    REQUIRE(back);
    REQUIRE(back->approvals.has_value());
    CHECK(corral::approval::approval_counts_json(*back->approvals) == corral::approval::approval_counts_json(*c.approvals));
    for (const char* bad : {R"({"requests":1,"refusals":0,"approvals":{"requested":1}})",
                            R"({"requests":1,"refusals":0,"approvals":{"requested":1,"approved":-1,"denied":0,"timed_out":0,"cancelled":0}})",
                            R"({"requests":1,"refusals":0,"approvals":[]})"}) {
        auto r = parse_counts_answer(bad);
        CHECK_FALSE(r);
        if (!r) CHECK(r.problem().find("approvals") != std::string::npos);
    }
}

TEST_CASE("daemon protocol: a capture stub's question and a captured connection's line, both ways") {
    Identity id{"w1", "run-1"};
    auto host = corral::names::normalize_host("API.Example.test").host;
    REQUIRE(host);
    const std::string q = granted_request(id, *host);
    CHECK(q == "CORRAL-GRANTED w1/run-1 api.example.test\n");
    auto first = parse_daemon_first_line(std::string_view(q).substr(0, q.size() - 1));
    REQUIRE(first.has_value());
    CHECK(first->granted);
    CHECK(first->id.str() == "w1/run-1");
    CHECK(first->target->host.text() == "api.example.test");

    Identity agent{"w1", "run-1", "agent"};
    const std::string c = captured_announcement(agent, corral::names::Authority{*host, 8443});
    CHECK(c == "CORRAL-CAPTURED w1/run-1 api.example.test:8443 role=agent\n");
    first = parse_daemon_first_line(std::string_view(c).substr(0, c.size() - 1));
    REQUIRE(first.has_value());
    CHECK(first->captured);
    CHECK(first->id.role == "agent");
    CHECK(first->target->port == 8443);
    auto v6 = corral::names::normalize_host("::1").host;
    const std::string c6 = captured_announcement(id, corral::names::Authority{*v6, 443});
    CHECK(c6 == "CORRAL-CAPTURED w1/run-1 [::1]:443\n");
    CHECK(parse_daemon_first_line(std::string_view(c6).substr(0, c6.size() - 1))->target->host.text() == "::1");
    for (const char* bad : {"CORRAL-GRANTED w1/run-1", "CORRAL-GRANTED w1/run-1 bad_host!", "CORRAL-GRANTED w1/run-1 a role=agent",
                            "CORRAL-CAPTURED w1/run-1 api.example.test", "CORRAL-CAPTURED w1/run-1 api.example.test:0",
                            "CORRAL-CAPTURED w1/run-1 api.example.test:99999", "CORRAL-CAPTURED w1 api.example.test:443",
                            // one spelling only: as the run writes it
                            "CORRAL-GRANTED w1/run-1 API.Example.test", "CORRAL-CAPTURED w1/run-1 api.example.test:0443",
                            "CORRAL-CAPTURED w1/run-1 ::1:443", "CORRAL-DNS w1/run-1 A name", "CORRAL-DNS w1/run-1 A n Not_Granted"}) {
        std::string text = bad;
        CAPTURE(text);
        CHECK_FALSE(parse_daemon_first_line(bad).has_value());
    }
    CHECK(granted_answer({443, 8443}) == "{\"ports\":[443,8443]}\n");
    auto ports = parse_granted_answer(granted_answer({443}));
    REQUIRE(ports);
    CHECK(*ports == std::vector<std::uint16_t>{443});
    CHECK_FALSE(parse_granted_answer("{\"ports\":[0]}\n"));
    CHECK_FALSE(parse_granted_answer("{\"ports\":\"443\"}\n"));
    CHECK_FALSE(parse_granted_answer("not json"));
    auto dns = dns_refusal_line(id, "AAAA", "ungranted.example", "not_granted");
    REQUIRE(dns);
    CHECK(*dns == "CORRAL-DNS w1/run-1 AAAA ungranted.example not_granted\n");
    first = parse_daemon_first_line(std::string_view(*dns).substr(0, dns->size() - 1));
    REQUIRE(first.has_value());
    CHECK(first->dns);
    CHECK(first->name == "ungranted.example");
    CHECK_FALSE(dns_refusal_line(id, "A", "a name with spaces", "not_granted"));
}

TEST_CASE("a refused DNS query is one ledger line whichever side writes it, an empty name and type included") {
    const Identity id{"w1", "run-1"};
    // The embedded stub writes the entry itself; the daemon rebuilds it from the CORRAL-DNS line.
    const auto embedded = dns_refusal_entry(id.str(), "", "", "malformed");
    auto line = dns_refusal_line(id, embedded.method, embedded.host, embedded.reason);
    REQUIRE(line);
    CHECK(*line == "CORRAL-DNS w1/run-1 - . malformed\n");
    auto first = parse_daemon_first_line(std::string_view(*line).substr(0, line->size() - 1));
    REQUIRE(first.has_value());
    const auto daemon = dns_refusal_entry(first->id.str(), first->qtype, first->name, first->reason);
    auto e = embedded, d = daemon;
    d.time = e.time;
    CHECK(format_ledger_line(e) == format_ledger_line(d));
    CHECK(e.host == ".");
    CHECK(e.method == "-");
    CHECK(e.port == 53);
    CHECK(e.captured);
    CHECK(dns_refusal_entry("w1/run-1", "A", std::string(300, 'a'), "not_granted").host.size() == 256);
}
