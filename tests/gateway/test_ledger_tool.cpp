// The MCP endpoint's `tool` object on a ledger line (gateway/ledger.hpp
// ToolLine): its documented key order, the new keys last, and a tool's
// first_sight and quarantine lines written but not counted as requests.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/ledger.hpp"

using namespace corral::gateway;

namespace {

LedgerEntry tool_entry(std::string phase) {
    LedgerEntry e;
    e.time = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'796'016'579'123));
    e.identity = "worker-a/run-1";
    e.mode = "mcp", e.method = "POST", e.host = "mcp.example.com", e.port = 443, e.path = "/mcp/search";
    ToolLine t;
    t.phase = std::move(phase), t.server = "search", t.method = "tools/list", t.tool = "query";
    e.tool = std::move(t);
    return e;
}

}  // namespace

TEST_CASE("a tool line's keys in the documented order, digests and logged texts last") {
    auto e = tool_entry("outcome");
    e.tool->method = "tools/call";
    e.tool->result_bytes = 12;
    e.tool->result_digest = "sha256:" + std::string(64, 'b');
    e.tool->arguments = "{\"q\":\"x\"}";
    e.tool->result = "{\"jsonrpc\":\"2.0\"}";
    auto line = format_ledger_line(e);
    auto j = nlohmann::ordered_json::parse(line);
    std::vector<std::string> keys;
    for (const auto& it : j["tool"].items()) keys.push_back(it.key());
    CHECK(keys == std::vector<std::string>{"phase", "server", "method", "tool", "result_bytes", "result_digest",
                                           "arguments", "result"});
    auto q = tool_entry("quarantine");
    q.decision = Decision::refuse, q.reason = "quarantined";
    q.tool->digest = "sha256:" + std::string(64, 'c');
    q.tool->trusted_digest = "sha256:" + std::string(64, 'a');
    CHECK(format_ledger_line(q).find(",\"tool\":{\"phase\":\"quarantine\",\"server\":\"search\",\"method\":\"tools/list\","
                                     "\"tool\":\"query\",\"digest\":\"sha256:" + std::string(64, 'c') +
                                     "\",\"trusted_digest\":\"sha256:" + std::string(64, 'a') + "\"}}\n") !=
          std::string::npos);
    e.tool->arguments = "the key is hunter2-secret";
    CHECK(format_ledger_line(e, {"hunter2-secret"}).find("hunter2-secret") == std::string::npos);
}

TEST_CASE("first_sight and quarantine lines are written, and are records, not requests or refusals") {
    char tmpl[] = "/tmp/corral-ledger-tool-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    const std::filesystem::path dir = tmpl;
    {
        Ledger l((dir / "ledger.jsonl").string(), 1);
        l.append(tool_entry("decision"));
        l.append(tool_entry("first_sight"));
        auto q = tool_entry("quarantine");
        q.decision = Decision::refuse, q.reason = "quarantined";
        l.append(q);
        l.append(q);
        CHECK(l.requests("worker-a/run-1") == 1);
        CHECK(l.refusals("worker-a/run-1") == 0);
        l.sync();
    }
    std::ifstream f(dir / "ledger.jsonl");
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string text = ss.str();
    CHECK(std::count(text.begin(), text.end(), '\n') == 4);  // past a refusal cap of 1: still every record
    std::filesystem::remove_all(dir);
}
