// tools/bench/strict-json-parse.cpp — base/strict_json's parse of an MCP
// tools/list answer shaped as tests/mcp_e2e/test_server.mjs --tools 100
// sends it (108 tools, ~22 KB) and of one tools/call, against nlohmann's
// plain parse, and the reference (SAX) reader and the outlined read
// (result.tools' objects built with their names only); and a model's
// answer read for its usage (read_json_selected with the usage meter's
// selection, gateway/metering/usage_meter.cpp) against nlohmann's parse of
// it whole, as the meter read it before session 46. Not a test: prints the minimum over rounds of the microseconds
// per parse (docs/benchmarks.md, "MCP calls through corral vs direct",
// session 35). Built and run by tools/bench/strict-json-parse.sh.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>
#include "base/strict_json.hpp"
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
template <class F> double min_us(int rounds, int n, F f) {
    double best = 1e18;
    for (int r = 0; r < rounds; ++r) {
        auto t0 = Clock::now();
        for (int i = 0; i < n; ++i) f();
        best = std::min(best, std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n);
    }
    return best;
}
int main() {
    json tools = json::array();
    auto obj = [](json props) { json req = json::array(); for (auto& [k, v] : props.items()) req.push_back(k); return json{{"type","object"},{"properties",props},{"required",req}}; };
    for (const char* n : {"echo","drifting","slow","big","echo_header","echo_env","ask_sampling","ask_elicitation"})
        tools.push_back({{"name", n}, {"description", std::string("Some description of ") + n}, {"inputSchema", obj({{"text", {{"type","string"}}}})}});
    for (int i = 1; i <= 100; ++i) {
        char name[32]; std::snprintf(name, sizeof name, "tool_%04d", i);
        tools.push_back({{"name", name}, {"description", "Filler tool number " + std::to_string(i) + ": echoes its value."},
                         {"inputSchema", obj({{"value", {{"type","string"}}}})}, {"annotations", {{"readOnlyHint", true}}}});
    }
    std::string body = json{{"result", {{"tools", tools}}}, {"jsonrpc","2.0"}, {"id", 5}}.dump();
    std::string call = R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"call 17"}}})";
    double a = min_us(15, 200, [&] { auto r = corral::parse_strict_json(body); if (!r.ok()) std::abort(); });
    double b = min_us(15, 200, [&] { auto r = json::parse(body); });
    double c = min_us(15, 5000, [&] { auto r = corral::parse_strict_json(call); if (!r.ok()) std::abort(); });
    double d = min_us(15, 200, [&] { auto r = corral::parse_strict_json_reference(body); if (!r.ok()) std::abort(); });
    double e = min_us(15, 200, [&] { auto r = corral::parse_strict_json_outline(body, "/result/tools", "name"); if (!r.outlined) std::abort(); });
    double f = min_us(15, 5000, [&] { auto r = corral::parse_strict_json_reference(call); if (!r.ok()) std::abort(); });
    std::printf("list %zu bytes: strict %.1f us (reference reader %.1f us, outlined %.1f us), nlohmann %.1f us;"
                " call %zu bytes: strict %.2f us (reference %.2f us)\n", body.size(), a, d, e, b, call.size(), c, f);
    const corral::JsonSelection message{{{"model"}, {"usage"}}}, response{{{"model"}, {"usage"}, {"error"}}};
    const corral::JsonSelection usage_members{
        {{"type"}, {"model"}, {"usage"}, {"error"}, {"code"}, {"message", &message}, {"response", &response}}};
    const std::string small = R"({"id":"msg_bench","type":"message","role":"assistant","model":"claude-bench-1",)"
                              R"("content":[{"type":"text","text":"Hello, benchmark."}],"stop_reason":"end_turn",)"
                              R"("stop_sequence":null,"usage":{"input_tokens":14,"output_tokens":5}})";
    const std::string big = R"({"id":"msg_bench","type":"message","role":"assistant","model":"claude-bench-1",)"
                            R"("content":[{"type":"text","text":")" + std::string(2000, 'a') +
                            R"("},{"type":"tool_use","id":"t1","name":"bash","input":{"command":"ls -la","timeout":30}}],)"
                            R"("stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":3}})";
    for (const std::string* answer : {&small, &big}) {
        double sel = min_us(15, 5000, [&] { json d; if (!corral::read_json_selected(*answer, usage_members, d)) std::abort(); });
        double whole = min_us(15, 5000, [&] { auto d = json::parse(*answer); });
        std::printf("model answer %zu bytes: selected members %.2f us, nlohmann whole %.2f us\n", answer->size(), sel, whole);
    }
}
