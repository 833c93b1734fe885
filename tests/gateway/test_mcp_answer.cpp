// tests/gateway/test_mcp_answer.cpp — govern_answer's tools/list path on
// its own (no server): the visible tools go to the box as the server wrote
// them when that reads to the scrubber as a dump would, dumped otherwise
// (a secret behind "\u" escapes or "\/" is still masked), the same tools
// either way; pins compare the tools' bytes and still see every change.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/mcp_endpoint.hpp"
#include "gateway/mcp_response.hpp"
#include "mcp/message.hpp"

using namespace corral;
using json = nlohmann::json;

namespace {

const std::string kSecret = "sk-answer-secret-0123456789";

mcp::ToolsConfig answer_tools() {
    mcp::ToolsConfig t;
    mcp::Server s;
    s.name = "s";
    mcp::HttpServer h;
    h.url = "https://mcp.example.com/mcp";
    h.host = "mcp.example.com";
    h.path = "/mcp";
    s.transport = h;
    t.servers.emplace("s", s);
    t.policy.servers = {"s"};
    mcp::Rule allow;
    allow.name = "allow";
    allow.server = "s";
    allow.tool = "tool_*";
    allow.action = mcp::Action::allow;
    t.policy.rules.push_back(allow);
    return t;
}

std::vector<mcp::Message> list_request() {
    auto r = mcp::read_message(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", mcp::Era::sessions_2025_11_25, {});
    REQUIRE(r.ok());
    return r.messages;
}

struct Governor {
    gateway::McpTools tools{answer_tools()};
    std::shared_ptr<const gateway::ScrubPatterns> patterns = tools.scrub_patterns({{"c", kSecret}});
    std::vector<mcp::Message> requests = list_request();
    const std::string server = "s";

    gateway::McpAnswer govern(const std::string& body, bool sse = false) {
        gateway::McpUpstreamAnswer in;
        in.status = 200;
        in.content_type = sse ? "text/event-stream" : "application/json";
        in.body = sse ? "event: message\ndata: " + body + "\n\n" : body;
        const gateway::McpAnswerContext ctx{server, requests, false, false, 1 << 20, patterns};
        return gateway::govern_answer(std::move(in), ctx, tools);
    }
};

std::string answer(const std::vector<std::string>& tools) {
    std::string out = R"({"jsonrpc":"2.0", "id":1, "result":{"tools":[)";
    for (std::size_t i = 0; i < tools.size(); ++i) out += (i ? ", " : "") + tools[i];
    return out + R"(], "nextCursor":"c2"}})";
}

const std::string kA = R"({"name":"tool_a","description":"Says \"a\".\nTwo lines.\u001f","inputSchema":{"type":"object"}})";
const std::string kHidden = R"({"name":"other","description":"never listed","inputSchema":{"type":"object"}})";

}  // namespace

TEST_CASE("mcp answer: a tools/list's visible tools go to the box as the server wrote them, hidden ones do not") {
    Governor g;
    for (bool sse : {false, true}) {
        const auto a = g.govern(answer({kA, kHidden}), sse);
        REQUIRE(a.withheld.empty());
        CHECK(a.body.find(kA) != std::string::npos);   // byte for byte
        CHECK(a.body.find("other") == std::string::npos);
        const std::string data = sse ? a.body.substr(a.body.find("data: ") + 6) : a.body;
        const json doc = json::parse(data);
        CHECK(doc == json::parse(R"({"jsonrpc":"2.0","id":1,"result":{"tools":[)" + kA + R"(],"nextCursor":"c2"}})"));
        CHECK(a.outcomes.at(0).result_bytes == (sse ? data.size() - 2 : data.size()));
    }
}

TEST_CASE("mcp answer: a secret hidden by escapes in a listed tool is dumped and masked, never passed as sent") {
    Governor g;
    std::string hidden;   // the secret with every letter as \u00XX
    for (char c : kSecret) {
        char esc[8];
        std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned char>(c));
        hidden += esc;
    }
    int n = 0;
    for (const std::string& description : {hidden, std::string("sk-answer\\/x ") + kSecret}) {
        const std::string t = R"({"name":"tool_)" + std::to_string(++n) + R"(","description":")" + description +
                              R"(","inputSchema":{"type":"object"}})";
        const auto a = g.govern(answer({t}));
        REQUIRE(a.withheld.empty());
        CHECK(a.body.find(kSecret) == std::string::npos);
        CHECK(a.body.find(description) == std::string::npos);   // dumped, not as sent
        CHECK(a.body.find("tool_" + std::to_string(n)) != std::string::npos);
        CHECK(a.secrets_masked >= 1);
    }
}

TEST_CASE("mcp answer: pins compare a tool's bytes: the same bytes are unchanged, any change is seen") {
    Governor g;
    auto a = g.govern(answer({kA}));
    REQUIRE(a.first_seen.size() == 1);
    const std::string digest = a.first_seen[0].second;
    a = g.govern(answer({kA}));
    CHECK(a.first_seen.empty());
    CHECK(a.quarantined.empty());
    // The same tool written otherwise (members reordered, spaces): not a change.
    const std::string reordered =
        R"({ "inputSchema":{"type":"object"}, "description":"Says \"a\".\nTwo lines.\u001F", "name":"tool_a" })";
    a = g.govern(answer({reordered}));
    CHECK(a.quarantined.empty());
    CHECK(a.body.find("tool_a") != std::string::npos);
    // One byte of its schema changed: quarantined, not listed, whichever form came before.
    const std::string changed = R"({"name":"tool_a","description":"Says \"a\".\nTwo lines.\u001f","inputSchema":{"type":"objecT"}})";
    a = g.govern(answer({changed}));
    REQUIRE(a.quarantined.size() == 1);
    CHECK(a.quarantined[0].trusted_digest == digest);
    CHECK(a.body.find("tool_a") == std::string::npos);
    a = g.govern(answer({changed}));   // remembered as bytes: still quarantined
    CHECK(a.quarantined.size() == 1);
    a = g.govern(answer({kA}));        // back to the trusted bytes
    CHECK(a.quarantined.empty());
    CHECK(a.body.find(kA) != std::string::npos);
}
