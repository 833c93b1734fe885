// The gateway's MCP endpoint (gateway/mcp_endpoint.hpp) end to end on
// 127.0.0.1: a real Gateway serving /mcp/NAME in front of a small TLS MCP
// stand-in of this test's own (initialize, tools/list, tools/call of echo, a
// result holding the injected secret, an oversize result), driven by a plain
// HTTP client. Nothing dials anything but 127.0.0.1.
#include <openssl/ssl.h>

#include <atomic>
#include <functional>
#include <thread>

#include <nlohmann/json.hpp>

#include <doctest/doctest.h>

#include "base/sha256.hpp"
#include "gateway/mcp_endpoint.hpp"
#include "mcp/tool_pin.hpp"
#include "tests/gateway/mcp_endpoint_fixture.hpp"

namespace corral::test::loopback {

using json = nlohmann::json;

TEST_CASE("mcp endpoint: an allowed call reaches the server with the injected credential, the box's dropped") {
    Endpoint ep;
    auto init = ep.post({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", json::object()}});
    CHECK(init.result_int() == 200);
    CHECK(init["mcp-session-id"] == "sess-1");
    auto res = ep.post(call(2, "echo", {{"text", "hello"}}),
                       "Authorization: Bearer box-made-up\r\nMcp-Session-Id: sess-1\r\nCookie: c=1\r\n");
    REQUIRE(res.result_int() == 200);
    json a = json::parse(res.body());
    CHECK(a["id"] == 2);
    CHECK(a["result"]["content"][0]["text"] == "hello");
    std::lock_guard l(ep.server.mutex);
    REQUIRE(ep.server.authorizations.size() == 2);
    CHECK(ep.server.authorizations[1] == "Bearer " + kMcpSecret);
    CHECK(ep.server.sessions[1] == "sess-1");
}

TEST_CASE("mcp endpoint: a denied call never reaches the server; the box reads corral's sentence") {
    Endpoint ep;
    auto res = ep.post(call(7, "danger"));
    CHECK(res.result_int() == 200);  // never a bare 403
    json a = json::parse(res.body());
    CHECK(a["id"] == 7);
    CHECK(a["error"]["code"] == -32001);
    CHECK(a["error"]["data"]["reason"] == "tool_denied");
    CHECK(a["error"]["message"].get<std::string>().starts_with(
        "refused by corral: tool danger is denied for this worker; do not retry it by other means"));
    auto unknown = json::parse(ep.post(call(8, "echo"), "", "elsewhere").body());
    CHECK(unknown["error"]["data"]["reason"] == "unknown_server");
    CHECK(ep.server.count("tools/call") == 0);
}

TEST_CASE("mcp endpoint: Mcp-Method / Mcp-Name disagreeing with the body is -32020, not forwarded") {
    Endpoint ep;
    auto res = ep.post(call(3, "echo", {{"text", "x"}}),
                       "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: big\r\n");
    CHECK(res.result_int() == 200);
    json a = json::parse(res.body());
    CHECK(a["error"]["code"] == -32020);
    CHECK(a["id"] == 3);
    auto ok = ep.post(call(4, "echo", {{"text", "x"}}),
                      "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n");
    CHECK(json::parse(ok.body())["result"]["content"][0]["text"] == "x");
    CHECK(ep.server.count("tools/call") == 1);
}

TEST_CASE("mcp endpoint: a batch with one denied call is refused whole") {
    Endpoint ep;
    auto res = ep.post(json::array({call(1, "echo", {{"text", "a"}}), call(2, "danger")}));
    CHECK(res.result_int() == 200);
    json a = json::parse(res.body());
    REQUIRE(a.is_array());
    REQUIRE(a.size() == 2);
    for (const auto& e : a) CHECK(e["error"]["data"]["reason"] == "batch_denied");
    CHECK(ep.server.count("batch") == 0);
}

TEST_CASE("mcp endpoint: tools/list is filtered; a changed description quarantines the tool") {
    Endpoint ep;
    auto first = json::parse(ep.post(list(1)).body());
    CHECK(tool_names(first) == std::vector<std::string>{"echo", "leak", "big"});
    ep.server.changed = true;
    ep.server.sse = true;  // the answer as an event stream: read and re-framed the same way
    auto res = ep.post(list(2));
    CHECK(res[http::field::content_type] == "text/event-stream");
    std::string body = res.body();
    REQUIRE(body.starts_with("event: message\ndata: "));
    auto second = json::parse(body.substr(body.find("data: ") + 6));
    CHECK(tool_names(second) == std::vector<std::string>{"leak", "big"});
    auto refused = json::parse(ep.post(call(3, "echo", {{"text", "a"}})).body());
    CHECK(refused["error"]["data"]["reason"] == "quarantined");
    CHECK(ep.server.count("tools/call") == 0);
}

TEST_CASE("mcp endpoint: an oversize result is cut with a JSON-RPC error; a secret in a result is masked") {
    Endpoint ep;
    auto big = ep.post(call(5, "big"));
    CHECK(big.result_int() == 200);
    CHECK(big.body().size() < 1024);
    json a = json::parse(big.body());
    CHECK(a["id"] == 5);
    CHECK(a["error"]["data"]["reason"] == "malformed_result");
    CHECK(a["error"]["message"].get<std::string>().find("max_response_bytes") != std::string::npos);
    auto leak = ep.post(call(6, "leak"));
    CHECK(leak.result_int() == 200);
    CHECK(leak.body().find(kMcpSecret) == std::string::npos);
    CHECK(json::parse(leak.body())["result"]["content"][0]["text"].get<std::string>().starts_with("the token is "));
    CHECK(ep.server.count("tools/call") == 2);
}

TEST_CASE("mcp endpoint: a server that cannot be reached is a JSON-RPC error with HTTP 200, not a bare status") {
    Endpoint ep;
    auto res = ep.post(call(11, "echo", {{"text", "a"}}), "", "down");
    CHECK(res.result_int() == 200);
    json a = json::parse(res.body());
    CHECK(a["id"] == 11);
    CHECK(a["error"]["code"] == -32603);
    CHECK(a["error"]["data"]["reason"] == "upstream_connect");
    CHECK(a["error"]["message"].get<std::string>().starts_with("corral gateway: MCP server down could not be reached"));
}

TEST_CASE("mcp endpoint: the ledger has a decision line before and an outcome line after, arguments as digests") {
    Endpoint ep;
    json args = {{"text", "private words"}};
    auto res = ep.post(call(9, "echo", args));
    REQUIRE(res.result_int() == 200);
    ep.post(call(10, "danger"));
    std::string ledger = ep.ledger();
    CHECK(ledger.find("private words") == std::string::npos);
    CHECK(ledger.find(kMcpSecret) == std::string::npos);
    std::vector<json> lines;
    for (std::size_t at = 0, nl; (nl = ledger.find('\n', at)) != std::string::npos; at = nl + 1)
        lines.push_back(json::parse(ledger.substr(at, nl - at)));
    REQUIRE(lines.size() == 3);
    const json& d = lines[0]["tool"];
    CHECK(lines[0]["mode"] == "mcp");
    CHECK(lines[0]["decision"] == "allow");
    CHECK(d["phase"] == "decision");
    CHECK(d["server"] == "remote");
    CHECK(d["tool"] == "echo");
    CHECK(d["rule"] == "allow-echo");
    CHECK(d["arguments_digest"] == "sha256:" + sha256_hex(args.dump()));
    const json& o = lines[1]["tool"];
    CHECK(o["phase"] == "outcome");
    CHECK(lines[1]["status"] == 200);
    CHECK(lines[1]["credential"] == "mcpkey");
    CHECK(o["result_bytes"] == res.body().size());
    CHECK(o["result_digest"] == "sha256:" + sha256_hex(res.body()));
    CHECK(lines[2]["decision"] == "refuse");
    CHECK(lines[2]["reason"] == "tool_denied");
    CHECK(lines[2]["tool"]["rule"] == "deny-danger");
}


TEST_CASE("mcp endpoint: messages share one pooled upstream TLS connection, within and across box connections") {
    Endpoint ep;
    CHECK(ep.post({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", json::object()}}).result_int() ==
          200);
    for (int i = 2; i < 6; ++i) {
        auto res = ep.post(call(i, "echo", {{"text", "n" + std::to_string(i)}}), "Mcp-Session-Id: sess-1\r\n");
        REQUIRE(res.result_int() == 200);
        CHECK(json::parse(res.body())["result"]["content"][0]["text"] == "n" + std::to_string(i));
    }
    CHECK(ep.server.count("tools/call") == 4);
    CHECK(ep.server.connections == 1);  // before pooling: 5, one TLS handshake per message
}

TEST_CASE("mcp endpoint: a pooled connection the server closed while idle is replaced, the call still answered") {
    Endpoint ep;
    ep.server.close_after_answer = true;
    for (int i = 1; i < 4; ++i) {
        auto res = ep.post(call(i, "echo", {{"text", "again"}}));
        REQUIRE(res.result_int() == 200);
        json a = json::parse(res.body());
        CHECK_MESSAGE(a.contains("result"), a.dump());
    }
    CHECK(ep.server.count("tools/call") == 3);  // each call reached the server once
    CHECK(ep.server.connections == 3);
}

TEST_CASE("mcp endpoint: an answer whose id is not the request's is withheld, not passed unfiltered") {
    Endpoint ep;
    ep.server.id_as_string = true;  // tools/list id 4 answered as "4": its unfiltered list would dodge the filter
    auto res = ep.post(list(4));
    REQUIRE(res.result_int() == 200);
    json a = json::parse(res.body());
    CHECK(a["id"] == 4);
    REQUIRE(a.contains("error"));
    CHECK(a["error"]["message"].get<std::string>().find("answers no request") != std::string::npos);
    CHECK(res.body().find("hidden") == std::string::npos);  // no rule allows it: never listed to the box
    CHECK(ep.ledger().find("withheld: ") != std::string::npos);
}

TEST_CASE("mcp ledger: a tool's first sight and its quarantine are recorded once, with the digests") {
    Endpoint ep;
    ep.post(list(1));
    ep.server.changed = true;
    ep.post(list(2));
    ep.post(list(3));  // the same changed tool again: no second quarantine line
    auto first = ep.phase_lines("first_sight");
    REQUIRE(first.size() == 5);  // hidden and denied tools too: every listed tool is pinned
    std::string echo_digest;
    for (const auto& l : first) {
        CHECK(l["decision"] == "allow");
        CHECK(l["tool"]["server"] == "remote");
        CHECK(l["tool"]["method"] == "tools/list");
        CHECK(l["tool"]["digest"].get<std::string>().starts_with("sha256:"));
        if (l["tool"]["tool"] == "echo") echo_digest = l["tool"]["digest"].get<std::string>();
    }
    auto q = ep.phase_lines("quarantine");
    REQUIRE(q.size() == 1);
    CHECK(q[0]["decision"] == "refuse");
    CHECK(q[0]["reason"] == "quarantined");
    CHECK(q[0]["tool"]["tool"] == "echo");
    CHECK(q[0]["tool"]["trusted_digest"] == echo_digest);
    CHECK(q[0]["tool"]["digest"] == mcp::tool_digest(McpStandIn::tools(true)[0]));
    CHECK(q[0]["tool"]["digest"] != echo_digest);
    // Records, not requests: the identity's request count has the three lists' decisions and outcomes only.
    CHECK(ep.gw->ledger().requests("worker-a/run-1") == 6);
    CHECK(ep.gw->ledger().refusals("worker-a/run-1") == 0);
}

TEST_CASE("mcp ledger: log_arguments keeps arguments and results, scrubbed of every secret and capped") {
    Endpoint ep([](mcp::ToolsConfig& t) { t.log_arguments = true; });
    ep.post(call(1, "echo", {{"text", "say " + kMcpSecret + " now"}}));
    ep.post(call(2, "leak"));
    ep.post(call(3, "echo", {{"text", std::string(6000, 'y')}}));
    std::string text = ep.ledger();
    CHECK(text.find(kMcpSecret) == std::string::npos);
    auto decisions = ep.phase_lines("decision");
    auto outcomes = ep.phase_lines("outcome");
    REQUIRE(decisions.size() == 3);
    REQUIRE(outcomes.size() == 3);
    const std::string args = decisions[0]["tool"]["arguments"].get<std::string>();
    CHECK(args.starts_with("{\"text\":\"say "));
    CHECK(args.ends_with(" now\"}"));
    CHECK(args.size() == json({{"text", "say " + kMcpSecret + " now"}}).dump().size());  // masked in place
    const std::string leaked = outcomes[1]["tool"]["result"].get<std::string>();
    CHECK(leaked.find("the token is ") != std::string::npos);
    CHECK(outcomes[1]["tool"]["result_digest"] == "sha256:" + sha256_hex(leaked));
    const std::string cut = decisions[2]["tool"]["arguments"].get<std::string>();
    CHECK(cut.size() < 4096 + 40);
    CHECK(cut.ends_with("...[cut: 6011 bytes]"));
    CHECK(outcomes[2]["tool"]["result"].get<std::string>().find("...[cut: ") != std::string::npos);
}

TEST_CASE("mcp ledger: without log_arguments, neither arguments nor results are kept") {
    Endpoint ep;
    ep.post(call(1, "echo", {{"text", "words"}}));
    for (const auto& l : ep.ledger_lines()) {
        CHECK_FALSE(l["tool"].contains("arguments"));
        CHECK_FALSE(l["tool"].contains("result"));
    }
}

}  // namespace corral::test::loopback

namespace corral::test::loopback {

TEST_CASE("mcp endpoint: corral's built-in server answers report_outcome itself; the last report is kept") {
    Endpoint ep;
    ep.tools->serve_builtin();  // before the first connection
    auto builtin = [&](const json& body) { return json::parse(ep.post(body, "", "corral").body()); };
    auto init = builtin({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"},
                         {"params", {{"protocolVersion", "2025-06-18"}}}});
    CHECK(init["result"]["protocolVersion"] == "2025-06-18");
    CHECK(init["result"]["serverInfo"]["name"] == "corral");
    auto list = builtin({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}});
    REQUIRE(list["result"]["tools"].size() == 1);
    CHECK(list["result"]["tools"][0]["name"] == "report_outcome");

    const std::string run = "worker-a/run-1";
    auto bad = builtin(call(3, "report_outcome", {{"status", "done"}, {"summary", "x"}}));
    CHECK(bad["result"]["isError"] == true);
    CHECK(bad["result"]["content"][0]["text"].get<std::string>().find("not one of completed, failed, needs_review") != std::string::npos);
    CHECK(!ep.tools->report(run));
    auto first = builtin(call(4, "report_outcome", {{"status", "completed"}, {"summary", "done"}}));
    CHECK(first["result"]["isError"] == false);
    auto last = builtin(call(5, "report_outcome", {{"status", "needs_review"}, {"summary", "tests pass; one is flaky"}}));
    CHECK(last["result"]["isError"] == false);
    auto report = ep.tools->report(run);
    REQUIRE(report);
    CHECK(report->status == approval::AgentReport::Status::needs_review);
    CHECK(report->summary == "tests pass; one is flaky");

    // No other tool of the built-in server, and nothing reaches a real server.
    auto other = builtin(call(6, "shell", {{"cmd", "id"}}));
    CHECK(other["error"]["data"]["reason"] == "unknown_tool");
    CHECK(ep.server.count("tools/call") == 0);
    // Recorded like any call: a decision line naming the built-in rule.
    bool decided = false;
    for (const auto& l : ep.ledger_lines())
        if (l.contains("tool") && l["tool"].value("phase", "") == "decision" && l["tool"].value("tool", "") == "report_outcome")
            decided = decided || l["tool"].value("rule", "") == "corral (built-in)";
    CHECK(decided);
}

}  // namespace corral::test::loopback
