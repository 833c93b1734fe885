// Model traffic through `corral gateway`, metered and budgeted: a stand-in
// model API (model_upstream.js) that streams real-shape responses with known
// usage, real clients (curl, node's ws) through a daemon of the test's own.
// The daemon's counts must equal the stand-in's numbers exactly; a budget
// must refuse before anything is forwarded, in the provider's error shape,
// and never be overspent by concurrent streams.
#include <doctest/doctest.h>

#include <csignal>
#include <chrono>
#include <functional>
#include <filesystem>
#include <sstream>
#include <thread>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/gateway_e2e/fixture.hpp"
#include "tests/gateway_e2e/model_upstream.hpp"
#include "tests/support/ledger.hpp"
#include "tests/support/process.hpp"

using namespace corral::test;
using namespace corral::test::gw;
using nlohmann::json;

namespace {

// Eight clients at once post `body` (held at the stand-in: variant "hold") to
// `path`; once `held` are held there and `refusals` refused, they are
// released. How many got 200, how many 400, and how many were held.
struct HeldRace {
    int ok = 0, refused = 0;
    json held;
};
HeldRace race_eight(const OwnDaemon& d, const ModelUpstream& m, const std::string& path, const json& body, int held,
                    int refusals) {
    std::vector<std::unique_ptr<Background>> clients;
    for (int i = 0; i < 8; ++i) {
        RunOptions o;
        o.env["NO_PROXY"] = "";
        o.env["no_proxy"] = "";
        clients.push_back(std::make_unique<Background>(
            std::vector<std::string>{"sh", "-c",
                                     "curl -sS --max-time 60 --proxy http://127.0.0.1:" + std::to_string(d.port) +
                                         " --cacert " + d.ca + " -H 'content-type: application/json' --data-binary '" +
                                         body.dump() + "' -w '\\nstatus=%{http_code}\\n' " + url(m, path) + "; echo END"},
            o));
    }
    HeldRace r;
    json s;
    for (int i = 0; i < 250; ++i) {
        s = m.stats();
        if (s.value("held", 0) >= held && model_counts(d).value("budget_refusals", 0) >= refusals) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    r.held = s["held"];
    m.stats("/release");
    for (auto& c : clients) {
        REQUIRE(c->wait_for_stdout("END", std::chrono::seconds(60)));
        auto out = c->drain_stdout();
        r.ok += out.find("status=200") != std::string::npos;
        r.refused += out.find("status=400") != std::string::npos;
    }
    return r;
}

}  // namespace

TEST_CASE("metering: every API's usage, counted exactly, priced with its source" * doctest::timeout(120)) {
    if (auto why = missing_prerequisite(); !why.empty()) {
        MESSAGE("skipped: " << why);
        return;
    }
    ModelUpstream m;
    OwnDaemon d("meter-sums", "", "5s", "meter/run-1", grant_for(m, kPrices));

    CHECK(post(d, m, "/v1/messages", anthropic_body(true)).status == 200);
    CHECK(post(d, m, "/v1/messages?beta=true", anthropic_body(false)).status == 200);
    CHECK(post(d, m, "/v1/messages/count_tokens", {{"model", "claude-test"}, {"messages", json::array()}}).status == 200);
    CHECK(post(d, m, "/v1/responses", {{"model", "gpt-test"}, {"stream", true}, {"input", "hi"}}).status == 200);
    CHECK(post(d, m, "/v1/chat/completions",
               {{"model", "gpt-test"}, {"stream", true}, {"stream_options", {{"include_usage", true}}},
                {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}})
              .status == 200);
    // codex's transport: two responses on one WebSocket.
    json ws = node_client_via(d.port, d.ca,
                              {{"host", "upstream.test"}, {"port", m.main}, {"mode", "ws-turns"}, {"path", "/v1/responses"},
                               {"messages", json::array({json{{"type", "response.create"}, {"model", "gpt-test"}}.dump(),
                                                         json{{"type", "response.create"}, {"model", "gpt-test"}}.dump()})}});
    CHECK(ws.value("closeCode", 0) == 1005);
    CHECK(ws["messages"].size() == 6);

    // Usage as the stand-in reports it: Anthropic 25 in (+3 cache write, +7
    // cache read), 11 out, twice; Responses 40 in (8 cached), 13 out (5
    // reasoning), three times (SSE + 2 WebSocket); Chat 30 in (4 cached), 9 out.
    json t = model_counts(d, 7);
    REQUIRE(t.is_object());
    CHECK(t["requests"] == 7);  // count_tokens is a request with no tokens
    CHECK(t["input_tokens"] == 25 * 2 + 40 * 3 + 30);
    CHECK(t["output_tokens"] == 11 * 2 + 13 * 3 + 9);
    CHECK(t["cache_write_tokens"] == 3 * 2);
    CHECK(t["cache_read_tokens"] == 7 * 2);
    CHECK(t["cached_input_tokens"] == 8 * 3 + 4);
    CHECK(t["reasoning_tokens"] == 5 * 3);
    CHECK(t["usage_unavailable"] == 0);
    CHECK(t["cost_unavailable"] == 0);
    // Micro-dollars, each response rounded up once:
    //   claude-test: 25×3 + 11×15 + 3×3.75 + 7×0.30 = 253.35 → 254, twice
    //   gpt-test Responses: (40-8)×1.25 + 8×0.125 + 13×10 = 171 → 171, three times
    //   gpt-test Chat: (30-4)×1.25 + 4×0.125 + 9×10 = 123 → 123
    CHECK(t["usd_micros"] == 254 * 2 + 171 * 3 + 123);

    auto lines = metered_lines(d, [](const std::vector<json>& v) { return v.size() >= 7; });
    REQUIRE(lines.size() >= 7);
    const json& first = lines.front()["metering"];
    CHECK(first["api"] == "anthropic_messages");
    CHECK(first["model"] == "claude-test");
    CHECK(first["usage"]["state"] == "reported");
    CHECK(first["usage"]["output_tokens"] == 11);
    CHECK(first["cost"]["state"] == "computed");
    CHECK(first["cost"]["usd_micros"] == 254);
    CHECK(first["cost"]["source"] == "stand-in price list");
    CHECK(first["cost"]["date"] == "2026-11-30");
    int ws_lines = 0;
    for (const auto& l : lines) ws_lines += l["method"] == "WS";
    CHECK(ws_lines == 2);
}

TEST_CASE("metering: a response without usage under a token budget refuses the next request" * doctest::timeout(120)) {
    if (auto why = missing_prerequisite(); !why.empty()) {
        MESSAGE("skipped: " << why);
        return;
    }
    ModelUpstream m;
    OwnDaemon d("meter-failclosed", "", "5s", "meter/run-2",
                grant_for(m, std::string(kPrices) + "[budget]\noutput_tokens = 100000\n"));
    CHECK(post(d, m, "/v1/messages", anthropic_body(true, "nousage")).status == 200);
    Answer refused = post(d, m, "/v1/messages", anthropic_body(true));
    CHECK(refused.status == 400);
    CHECK(refused.headers.find("x-should-retry: false") != std::string::npos);
    json err = json::parse(refused.body, nullptr, false);
    REQUIRE(err.is_object());
    CHECK(err["type"] == "error");
    CHECK(err["error"]["type"] == "invalid_request_error");
    CHECK(err["error"]["message"].get<std::string>().find("usage unavailable") != std::string::npos);
    CHECK(m.stats()["byPath"]["/v1/messages"] == 1);  // the refused one never left
    json t = model_counts(d, 1);
    CHECK(t["usage_unavailable"] == 1);
    CHECK(t["budget_refusals"] == 1);
}

TEST_CASE("metering: budgets refuse before forwarding, in each provider's error shape" * doctest::timeout(120)) {
    if (auto why = missing_prerequisite(); !why.empty()) {
        MESSAGE("skipped: " << why);
        return;
    }
    ModelUpstream m;
    OwnDaemon d("meter-budget", "", "5s", "meter/run-3", grant_for(m, std::string(kPrices) + "[budget]\nrequests = 2\n"));
    CHECK(post(d, m, "/v1/messages", anthropic_body(false)).status == 200);
    CHECK(post(d, m, "/v1/responses", {{"model", "gpt-test"}, {"stream", true}}).status == 200);
    Answer a = post(d, m, "/v1/messages", anthropic_body(false));
    CHECK(a.status == 400);
    CHECK(json::parse(a.body, nullptr, false)["error"]["message"].get<std::string>().find("budget requests") !=
          std::string::npos);
    Answer o = post(d, m, "/v1/responses", {{"model", "gpt-test"}, {"stream", true}});
    CHECK(o.status == 400);
    json oe = json::parse(o.body, nullptr, false);
    CHECK(oe["error"]["code"] == "corral_model_budget");
    // Under a budget, codex's WebSocket is refused (each response could not
    // be reserved before it is sent): the CLI falls back to HTTP streaming.
    json ws = node_client_via(d.port, d.ca,
                              {{"host", "upstream.test"}, {"port", m.main}, {"mode", "ws-turns"}, {"path", "/v1/responses"},
                               {"messages", json::array({"{}"})}});
    CHECK(ws["status"] == 426);
    CHECK(m.stats()["requests"] == 2);
    auto lines = metered_lines(d, [](const std::vector<json>& v) {
        return !v.empty() && v.back()["reason"] == "model_websocket";
    });
    REQUIRE(!lines.empty());
    CHECK(lines.back()["reason"] == "model_websocket");
    CHECK(lines.back()["metering"]["limit"] == "websocket");
}

TEST_CASE("metering: a USD budget refuses a model without a price" * doctest::timeout(120)) {
    if (auto why = missing_prerequisite(); !why.empty()) {
        MESSAGE("skipped: " << why);
        return;
    }
    ModelUpstream m;
    OwnDaemon d("meter-noprice", "", "5s", "meter/run-4", grant_for(m, std::string(kPrices) + "[budget]\nusd = 1.0\n"));
    json b = anthropic_body(false);
    CHECK(post(d, m, "/v1/messages", b).status == 200);
    b["model"] = "claude-unpriced";
    Answer a = post(d, m, "/v1/messages", b);
    CHECK(a.status == 400);
    CHECK(a.body.find("no price for model 'claude-unpriced'") != std::string::npos);
    CHECK(m.stats()["requests"] == 1);
}

TEST_CASE("metering: eight concurrent streams never spend past the budget" * doctest::timeout(180)) {
    if (auto why = missing_prerequisite(); !why.empty()) {
        MESSAGE("skipped: " << why);
        return;
    }
    ModelUpstream m;
    // Each request may use up to 100 output tokens: five fit in 500.
    OwnDaemon d("meter-concurrent", "", "5s", "meter/run-5",
                grant_for(m, std::string(kPrices) + "[budget]\noutput_tokens = 500\n"));
    // Five reach the stand-in and are held there; three are refused at once.
    HeldRace r = race_eight(d, m, "/v1/messages", anthropic_body(true, "hold"), 5, 3);
    CHECK(r.held == 5);
    const int ok = r.ok, refused = r.refused;
    CHECK(ok == 5);
    CHECK(refused == 3);
    json t = model_counts(d, 5);
    CHECK(t["requests"] == 5);
    CHECK(t["output_tokens"] == 55);
    CHECK(t["budget_refusals"] == 3);
    CHECK(m.stats()["byPath"]["/v1/messages"] == 5);
}

TEST_CASE("metering: Chat Completions n reserves n completions, so concurrent requests never spend past the budget" *
          doctest::timeout(180)) {
    if (auto why = missing_prerequisite(); !why.empty()) {
        MESSAGE("skipped: " << why);
        return;
    }
    ModelUpstream m;
    // Each request may use 4 × 100 output tokens: two fit in 1000 (one would
    // have been counted before, and all eight let through).
    OwnDaemon d("meter-n", "", "5s", "meter/run-7",
                grant_for(m, std::string(kPrices) + "[budget]\noutput_tokens = 1000\n"));
    const json body = {{"model", "gpt-test"}, {"max_tokens", 100}, {"n", 4}, {"stream", true},
                       {"stream_options", {{"include_usage", true}}}, {"metadata", {{"standin", "hold"}}},
                       {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}};
    HeldRace r = race_eight(d, m, "/v1/chat/completions", body, 2, 6);
    CHECK(r.held == 2);
    const int ok = r.ok, refused = r.refused;
    CHECK(ok == 2);
    CHECK(refused == 6);
    json t = model_counts(d, 2);
    CHECK(t["output_tokens"] == 2 * 36);  // 4 choices of 9 each, twice
    CHECK(t["over_reservations"] == 0);
}

TEST_CASE("metering: a response that spends past its reservation is ledgered over_reservation, with the overshoot" *
          doctest::timeout(120)) {
    if (auto why = missing_prerequisite(); !why.empty()) {
        MESSAGE("skipped: " << why);
        return;
    }
    ModelUpstream m;
    // max_tokens 5 reserves 5 output tokens; the stand-in answers with 11.
    OwnDaemon d("meter-over", "", "5s", "meter/run-8",
                grant_for(m, std::string(kPrices) + "[budget]\noutput_tokens = 8\n"));
    CHECK(post(d, m, "/v1/messages", anthropic_body(false, "", 5)).status == 200);
    auto lines = metered_lines(d, [](const std::vector<json>& l) { return !l.empty(); });
    REQUIRE(lines.size() == 1);
    const json metering = lines[0]["metering"];
    INFO(metering.dump());
    CHECK(metering.value("over_reservation", false));
    CHECK(metering.value("/remaining/output_tokens"_json_pointer, -1) == 0);
    CHECK(metering.value("/overspent/output_tokens"_json_pointer, -1) == 3);  // 11 spent against a limit of 8
    json t = model_counts(d, 1);
    CHECK(t["over_reservations"] == 1);
}

TEST_CASE("a box that goes away while its model request is held: the exchange ends and settles then, said client_gone" *
          doctest::timeout(120)) {
    if (auto why = missing_prerequisite(); !why.empty()) {
        MESSAGE("skipped: " << why);
        return;
    }
    ModelUpstream m;
    OwnDaemon d("meter-gone", "", "5s", "meter/run-7", grant_for(m, kPrices));
    RunOptions o;
    o.env["NO_PROXY"] = "";
    o.env["no_proxy"] = "";
    Background client({"curl", "-sS", "--max-time", "60", "--proxy", "http://127.0.0.1:" + std::to_string(d.port),
                       "--cacert", d.ca, "-H", "content-type: application/json", "--data-binary",
                       anthropic_body(false, "hold").dump(), url(m, "/v1/messages")},
                      o);
    // The stand-in holds its answer (no head yet): the model is thinking.
    json s = json::object();
    for (int i = 0; i < 250 && s.value("held", 0) < 1; ++i) {
        s = m.stats();
        if (!s.is_object()) s = json::object();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    REQUIRE(s["held"] == 1);
    client.kill_now();  // its socket closes: a FIN reaches the gateway
    // Seconds, not idle_timeout (120 s): the line, and the request settled.
    auto gone = wait_for_ledger_lines(d.ledger, [](const json& l) { return l.value("reason", "") == "client_gone"; });
    REQUIRE(gone.size() == 1);
    CHECK(gone[0]["path"] == "/v1/messages");
    CHECK(gone[0]["decision"] == "allow");  // allowed and forwarded; nobody was left to answer
    CHECK(gone[0]["status"] == 0);
    CHECK(gone[0]["metering"]["usage"]["state"] == "unavailable");
    CHECK(gone[0].value("duration_ms", 0) < 30'000);
    CHECK(model_counts(d, 1)["requests"] == 1);
    m.stats("/release");
}

TEST_CASE("policy: each refused form answers 400 in the provider's shape before anything is forwarded" *
          doctest::timeout(120)) {
    if (auto why = missing_prerequisite(); !why.empty()) {
        MESSAGE("skipped: " << why);
        return;
    }
    ModelUpstream m;
    OwnDaemon d("policy", "", "5s", "policy/run-1",
                grant_for(m, "[grants.policy]\nmodels = [\"claude-test\", \"gpt-*\"]\nmax_output_tokens = 1000\n"
                             "server_tools = false\nmcp_servers = false\nurl_sources = false\n"
                             "context_management = false\nanthropic_betas = [\"fine-beta-2025\"]\n") +
                    kPrices);
    struct Case {
        const char* name;
        std::string path;
        json body;
        std::vector<std::string> headers;
        const char* rule_words;
    };
    json tools_web = anthropic_body(false);
    tools_web["tools"] = json::array({{{"type", "web_search_20250305"}, {"name", "web_search"}}});
    json other_model = anthropic_body(false);
    other_model["model"] = "claude-other";
    json too_long = anthropic_body(false, "", 4000);
    json mcp = anthropic_body(false);
    mcp["mcp_servers"] = json::array({{{"type", "url"}, {"url", "https://mcp.example.invalid/sse"}, {"name", "x"}}});
    json url_image = anthropic_body(false);
    url_image["messages"] = json::array(
        {{{"role", "user"},
          {"content", json::array({{{"type", "image"}, {"source", {{"type", "url"}, {"url", "https://img.invalid/a.png"}}}}})}}});
    json ctx = anthropic_body(false);
    ctx["context_management"] = {{"edits", json::array({{{"type", "clear_tool_uses_20250919"}}})}};
    json openai_tool = {{"model", "gpt-test"}, {"stream", true}, {"tools", json::array({{{"type", "web_search"}}})}};
    // Issue 37 item 3: shapes a list-only reader missed.
    const json url_block = {{"type", "image"}, {"source", {{"type", "url"}, {"url", "https://img.invalid/a.png"}}}};
    json lone_block = anthropic_body(false);
    lone_block["messages"] = json::array({{{"role", "user"}, {"content", url_block}}});
    json lone_tool_result = anthropic_body(false);
    lone_tool_result["messages"] = json::array(
        {{{"role", "user"},
          {"content", json::array({{{"type", "tool_result"}, {"tool_use_id", "t"}, {"content", url_block}}})}}});
    json lone_system = anthropic_body(false);
    lone_system["system"] = url_block;
    json prompt_vars = {{"model", "gpt-test"},
                        {"stream", true},
                        {"prompt", {{"id", "pmpt_1"},
                                    {"variables", {{"pic", {{"type", "input_image"}, {"image_url", "https://img.invalid/a.png"}}}}}}}};
    std::vector<Case> cases = {
        {"server tool", "/v1/messages", tools_web, {}, "web_search_20250305"},
        {"model", "/v1/messages", other_model, {}, "claude-other"},
        {"max_tokens", "/v1/messages", too_long, {}, "4000"},
        {"mcp", "/v1/messages", mcp, {}, "mcp_servers"},
        {"url source", "/v1/messages", url_image, {}, "url"},
        {"context management", "/v1/messages", ctx, {}, "context_management"},
        {"beta", "/v1/messages", anthropic_body(false), {"anthropic-beta: bad-beta-2025"}, "bad-beta-2025"},
        {"openai server tool", "/v1/responses", openai_tool, {}, "web_search"},
        {"compaction route", "/v1/responses/compact", {{"model", "gpt-test"}}, {}, "compact"},
        {"url source in a lone content object", "/v1/messages", lone_block, {}, "url"},
        {"url source in a lone tool_result content", "/v1/messages", lone_tool_result, {}, "url"},
        {"url source in a lone system block", "/v1/messages", lone_system, {}, "url"},
        {"url source in prompt variables", "/v1/responses", prompt_vars, {}, "input_image"},
    };
    for (const auto& c : cases) {
        CAPTURE(c.name);
        std::vector<std::string> args{"-D", "-", "-H", "content-type: application/json"};
        for (const auto& h : c.headers) args.insert(args.end(), {"-H", h});
        args.insert(args.end(), {"--data-binary", c.body.dump(), url(m, c.path)});
        auto r = d.curl_args(args);
        CHECK(r.out.find("\nstatus=400\n") != std::string::npos);
        CHECK(r.out.find("X-Corral-Reason: model_policy") != std::string::npos);
        CHECK(r.out.find("x-should-retry: false") != std::string::npos);
        CHECK(r.out.find(c.rule_words) != std::string::npos);
        const bool anthropic = c.path == "/v1/messages";
        CHECK(r.out.find(anthropic ? "\"invalid_request_error\"" : "\"code\":\"corral_model_policy\"") !=
              std::string::npos);
    }
    // What the policy allows still passes, the OAuth-style beta included.
    auto ok = d.curl_args({"-H", "content-type: application/json", "-H", "anthropic-beta: fine-beta-2025",
                           "--data-binary", anthropic_body(true).dump(), url(m, "/v1/messages")});
    CHECK(ok.out.find("\nstatus=200\n") != std::string::npos);
    CHECK(post(d, m, "/v1/responses", {{"model", "gpt-test"}, {"stream", true}}).status == 200);
    CHECK(m.stats()["requests"] == 2);  // nothing refused reached the stand-in
    json t = model_counts(d, 2);
    CHECK(t["policy_refusals"] == cases.size());
    CHECK(t["requests"] == 2);
    auto count_refusals = [](const std::vector<json>& v) {
        std::size_t n = 0;
        for (const auto& l : v) n += l["reason"] == "model_policy";
        return n;
    };
    const std::size_t refusal_lines = count_refusals(
        metered_lines(d, [&](const std::vector<json>& v) { return count_refusals(v) >= cases.size(); }));
    CHECK(refusal_lines == cases.size());
}

TEST_CASE("metering: a worker's budget across runs survives a daemon restart; corral budget shows and resets it" *
          doctest::timeout(180)) {
    if (auto why = missing_prerequisite(); !why.empty()) {
        MESSAGE("skipped: " << why);
        return;
    }
    ModelUpstream m;
    const std::string more = grant_for(m, std::string(kPrices) + "[budget.worker]\nrequests = 3\n");
    auto budget = [](const OwnDaemon& d, const std::string& action) {
        return run({corral_bin(), "budget", action, "persist", "--gateway", "unix:" + d.socket});
    };
    // `show` once `spent` requests are settled (a settlement follows the
    // client's last byte by a moment), bounded.
    auto shown = [&](const OwnDaemon& d, std::uint64_t spent) {
        json j;
        for (int i = 0; i < 250; ++i) {
            j = json::parse(budget(d, "show").out, nullptr, false);
            if (j.is_object() && j["spent"].value("requests", 0ull) >= spent) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return j;
    };
    {
        OwnDaemon d("meter-persist", "", "5s", "persist/run-1", more);
        CHECK(post(d, m, "/v1/messages", anthropic_body(false)).status == 200);
        CHECK(post(d, m, "/v1/messages", anthropic_body(false)).status == 200);
        CHECK(budget(d, "show").exit_code == 0);
        json j = shown(d, 2);
        REQUIRE(j.is_object());
        CHECK(j["spent"]["requests"] == 2);
        CHECK(j["remaining"]["requests"] == 1);
        CHECK(j["limits"]["requests"] == 3);
        d.proc->signal(SIGTERM);
        CHECK(d.proc->wait_exit(std::chrono::seconds(15)) == 0);
    }
    // A new daemon on the same state dir, and a new run of the same worker.
    OwnDaemon d("meter-persist", "", "5s", "persist/run-2", more);
    CHECK(post(d, m, "/v1/messages", anthropic_body(false)).status == 200);
    Answer refused = post(d, m, "/v1/messages", anthropic_body(false));
    CHECK(refused.status == 400);
    CHECK(refused.body.find("worker persist across its runs") != std::string::npos);
    CHECK(m.stats()["byPath"]["/v1/messages"] == 3);
    auto reset = budget(d, "reset");
    CHECK(reset.exit_code == 0);
    CHECK(json::parse(reset.out, nullptr, false)["spent"]["requests"] == 0);
    CHECK(post(d, m, "/v1/messages", anthropic_body(false)).status == 200);
    CHECK(shown(d, 1)["spent"]["requests"] == 1);
    // A stand-alone gateway file's [budget.worker] holds for each worker on
    // its own: another worker has spent nothing.
    auto other = run({corral_bin(), "budget", "show", "other", "--gateway", "unix:" + d.socket});
    CHECK(other.exit_code == 0);
    CHECK(json::parse(other.out, nullptr, false)["spent"]["requests"] == 0);
    auto bad = run({corral_bin(), "budget", "show", "../x", "--gateway", "unix:" + d.socket});
    CHECK(bad.exit_code == 2);
}
