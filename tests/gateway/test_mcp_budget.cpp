// The MCP endpoint's tool-call budgets (gateway/mcp_budget.hpp) through a
// real Gateway on 127.0.0.1 (tests/gateway/mcp_endpoint_fixture.hpp): per
// run, per tool, per batch, one worker's tools serving several runs, and
// tool_calls_per_worker kept on disk across a restart; the pins hook the
// daemon keeps its pins store with.
#include <sys/stat.h>

#include <atomic>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include <doctest/doctest.h>

#include "gateway/mcp_endpoint.hpp"
#include "gateway/metering/budget_store.hpp"
#include "tests/gateway/mcp_endpoint_fixture.hpp"
#include "tests/support/temp_dir.hpp"

namespace corral::test::loopback {

using json = nlohmann::json;

TEST_CASE("mcp budget: tool_calls_per_run refuses the call past it before it is forwarded; refused calls do not count") {
    Endpoint ep([](mcp::ToolsConfig& t) { t.budgets.per_run = 2; });
    CHECK(json::parse(ep.post(call(1, "danger")).body())["error"]["data"]["reason"] == "tool_denied");
    CHECK(json::parse(ep.post(call(2, "echo", {{"text", "a"}})).body())["result"]["content"][0]["text"] == "a");
    CHECK(json::parse(ep.post(call(3, "leak")).body()).contains("result"));
    auto res = ep.post(call(4, "echo", {{"text", "b"}}));
    CHECK(res.result_int() == 200);
    json a = json::parse(res.body());
    CHECK(a["id"] == 4);
    CHECK(a["error"]["code"] == -32001);
    CHECK(a["error"]["data"]["reason"] == "budget_exhausted");
    CHECK(a["error"]["message"].get<std::string>().starts_with(
        "refused by corral: the tool-call budget of this run (2 calls) is spent; do not retry"));
    CHECK(ep.server.count("tools/call") == 2);
    auto refusal = ep.ledger_lines().back();
    CHECK(refusal["decision"] == "refuse");
    CHECK(refusal["reason"] == "budget_exhausted");
    CHECK(refusal["tool"]["phase"] == "decision");
    CHECK(gateway::tool_counts_json(ep.tools->counts("worker-a/run-1")) ==
          json{{"calls", 4}, {"allowed", 2}, {"refused", {{"budget_exhausted", 1}, {"tool_denied", 1}}},
               {"per_tool", {{"remote/danger", {{"calls", 1}, {"refused", 1}}},
                             {"remote/echo", {{"calls", 2}, {"refused", 1}}},
                             {"remote/leak", {{"calls", 1}, {"refused", 0}}}}}});
}

TEST_CASE("mcp budget: a per_tool cap refuses that tool only") {
    Endpoint ep([](mcp::ToolsConfig& t) { t.budgets.per_tool["remote/echo"] = 1; });
    CHECK(json::parse(ep.post(call(1, "echo", {{"text", "a"}})).body()).contains("result"));
    json a = json::parse(ep.post(call(2, "echo", {{"text", "b"}})).body());
    CHECK(a["error"]["data"]["reason"] == "budget_exhausted");
    CHECK(a["error"]["data"]["subject"] == "tool remote/echo in this run (1 call)");
    CHECK(a["error"]["message"].get<std::string>().find("per_tool.\"remote/echo\" = 1, 0 left") != std::string::npos);
    CHECK(json::parse(ep.post(call(3, "leak")).body()).contains("result"));
    CHECK(ep.server.count("tools/call") == 2);
}

TEST_CASE("mcp budget: a batch that would go over is refused whole and reserves nothing") {
    Endpoint ep([](mcp::ToolsConfig& t) { t.budgets.per_run = 2; });
    auto over = ep.post(json::array({call(1, "echo", {{"text", "a"}}), call(2, "echo", {{"text", "b"}}), call(3, "leak")}));
    json a = json::parse(over.body());
    REQUIRE(a.is_array());
    REQUIRE(a.size() == 3);
    for (const auto& e : a) CHECK(e["error"]["data"]["reason"] == "budget_exhausted");
    CHECK(a[0]["error"]["message"].get<std::string>().find("a batch of 3 calls; [mcp.budget] tool_calls_per_run = 2, 2 left") !=
          std::string::npos);
    CHECK(ep.server.count("batch") == 0);
    ep.post(json::array({call(4, "echo", {{"text", "a"}}), call(5, "leak")}));  // both fit: nothing was reserved
    CHECK(ep.server.count("batch") == 1);
    auto counts = ep.tools->counts("worker-a/run-1");
    CHECK(counts.calls == 5);
    CHECK(counts.allowed == 2);
    CHECK(counts.refused["budget_exhausted"] == 3);
}

TEST_CASE("mcp budget: connections racing for the last calls get exactly the budget") {
    Endpoint ep([](mcp::ToolsConfig& t) { t.budgets.per_run = 3; });
    std::atomic<int> allowed{0}, exhausted{0};
    std::vector<std::thread> racers;
    for (int i = 0; i < 8; ++i)
        racers.emplace_back([&, i] {
            json a = json::parse(ep.post(call(i, "echo", {{"text", "r"}})).body());
            if (a.contains("result")) ++allowed;
            else if (a["error"]["data"]["reason"] == "budget_exhausted") ++exhausted;
        });
    for (auto& t : racers) t.join();
    CHECK(allowed.load() == 3);
    CHECK(exhausted.load() == 5);
    CHECK(ep.server.count("tools/call") == 3);
}

TEST_CASE("mcp budget: one worker's tools serve several runs, each counted and capped per run on its own") {
    Endpoint ep([](mcp::ToolsConfig& t) { t.budgets.per_run = 1; });
    CHECK(json::parse(ep.post(call(1, "echo", {{"text", "a"}})).body()).contains("result"));
    CHECK(json::parse(ep.post(call(2, "echo", {{"text", "b"}})).body())["error"]["data"]["reason"] == "budget_exhausted");
    ep.run_number = 2;
    CHECK(json::parse(ep.post(call(3, "echo", {{"text", "c"}})).body()).contains("result"));
    CHECK(ep.tools->counts("worker-a/run-1").allowed == 1);
    CHECK(ep.tools->counts("worker-a/run-1").refused.at("budget_exhausted") == 1);
    CHECK(ep.tools->counts("worker-a/run-2").allowed == 1);
    CHECK(ep.tools->counts("worker-a/run-2").refused.empty());
    CHECK(ep.tools->counts("worker-a/run-3").calls == 0);  // never seen: nothing
}

TEST_CASE("mcp budget: tool_calls_per_worker counts every run's calls, kept on disk across a restart") {
    test::TempDir dir("corral-mcp-worker-budget");
    auto store = std::make_shared<gateway::metering::BudgetStore>(dir / "budgets");
    auto across = std::make_shared<gateway::WorkerCalls>("worker-a", 3, store);
    CHECK(across->used() == 0);
    CHECK(across->broken() == "");
    {
        Endpoint ep([](mcp::ToolsConfig& t) { t.budgets.per_worker = 3; }, across);
        CHECK(json::parse(ep.post(call(1, "echo", {{"text", "a"}})).body()).contains("result"));
        CHECK(json::parse(ep.post(call(2, "leak")).body()).contains("result"));
        ep.run_number = 2;
        // A batch of two would go over: refused whole, nothing taken.
        json batch = json::parse(ep.post(json::array({call(3, "echo", {{"text", "b"}}), call(4, "leak")})).body());
        REQUIRE(batch.is_array());
        CHECK(batch[0]["error"]["data"]["reason"] == "budget_exhausted");
        CHECK(json::parse(ep.post(call(5, "echo", {{"text", "c"}})).body()).contains("result"));
        json over = json::parse(ep.post(call(6, "echo", {{"text", "d"}})).body());
        CHECK(over["error"]["data"]["reason"] == "budget_exhausted");
        CHECK(over["error"]["data"]["subject"] == "worker worker-a across its runs (3 calls)");
        CHECK(over["error"]["message"].get<std::string>().find(
                  "[mcp.budget] tool_calls_per_worker = 3, 0 left") != std::string::npos);
        CHECK(ep.server.count("tools/call") == 3);
        CHECK(ep.tools->counts("worker-a/run-1").allowed == 2);
        CHECK(ep.tools->counts("worker-a/run-2").allowed == 1);
        CHECK(ep.tools->counts("worker-a/run-2").refused.at("budget_exhausted") == 3);
    }
    auto file = json::parse(slurp(dir / "budgets/tool_calls/worker-a.json"));
    CHECK(file["worker"] == "worker-a");
    CHECK(file["tool_calls"] == 3);
    struct stat st{};
    REQUIRE(::stat((dir / "budgets/tool_calls/worker-a.json").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);

    // A restarted daemon goes on from what was used, never from 0.
    gateway::WorkerCalls again("worker-a", 3, store);
    CHECK(again.used() == 3);
    REQUIRE(again.reserve(1, "").has_value());
    gateway::WorkerCalls raised("worker-a", 5, store);  // the operator raised the limit
    CHECK_FALSE(raised.reserve(2, "").has_value());
    CHECK(store->load_tool_calls("worker-a") == 5);

    // The operator's reset: nothing used, on disk at once.
    CHECK(raised.state_json() == json{{"limit", 5}, {"used", 5}, {"remaining", 0},
                                      {"file", dir / "budgets/tool_calls/worker-a.json"}});
    raised.reset();
    CHECK(raised.used() == 0);
    CHECK(store->load_tool_calls("worker-a") == 0);
    CHECK_FALSE(raised.reserve(5, "").has_value());

    // A file that cannot be read refuses every call (fail closed), saying why.
    dir.write("budgets/tool_calls/worker-a.json", "{\"worker\":\"worker-a\",\"tool_calls\":-1}\n", 0600);
    gateway::WorkerCalls broken("worker-a", 100, store);
    CHECK(broken.broken().find("tool_calls' missing or not an unsigned integer") != std::string::npos);
    auto d = broken.reserve(1, "");
    REQUIRE(d.has_value());
    CHECK(d->reason == mcp::Reason::budget_exhausted);
    CHECK(d->detail.find("its count cannot be kept") != std::string::npos);
    CHECK(broken.state_json().contains("broken"));
    broken.reset();  // the operator's reset writes a good file again
    CHECK(broken.broken() == "");
    CHECK_FALSE(broken.reserve(1, "").has_value());
}

TEST_CASE("mcp pins: the on_sight hook hears of a first sight and of a run's first quarantine, with the run id") {
    Endpoint ep;
    std::vector<std::string> heard;
    std::mutex m;
    ep.tools->on_sight([&](const std::string& run) {
        std::lock_guard l(m);
        heard.push_back(run);
    });
    ep.post(list(1));
    ep.post(list(2));  // nothing new
    ep.server.changed = true;
    ep.run_number = 2;
    ep.post(list(3));
    ep.post(list(4));  // the same quarantine again
    std::lock_guard l(m);
    CHECK(heard == std::vector<std::string>{"run-1", "run-2"});
}

}  // namespace corral::test::loopback
