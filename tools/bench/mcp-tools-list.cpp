// tools/bench/mcp-tools-list.cpp — what corral adds to a tools/list answer of
// 100 tools: the strict parse of the body, the policy filter and the pin of
// every tool (mcp/tools_list.hpp), and writing the filtered answer back.
// Not a test: prints medians of per-answer microseconds (docs/tools.md "Cost").
//   mcp-tools-list [TOOLS]   (default 100)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "mcp/strict_json.hpp"
#include "mcp/tools_list.hpp"

using namespace corral::mcp;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double median_us(int rounds, int n, const std::function<void()>& body) {
    std::vector<double> per;
    for (int r = 0; r < rounds; ++r) {
        auto t0 = Clock::now();
        for (int i = 0; i < n; ++i) body();
        per.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n);
    }
    std::sort(per.begin(), per.end());
    return per[per.size() / 2];
}

// A tool the size of a real one: ~400 characters of description, a schema of
// four typed properties, annotations.
json make_tool(int i) {
    json props = json::object();
    for (const char* p : {"path", "pattern", "limit", "mode"})
        props[p] = {{"type", std::string(p) == "limit" ? "integer" : "string"},
                    {"description", std::string("The ") + p + " argument of this tool, described at some length."}};
    return {{"name", "tool_" + std::to_string(i)},
            {"description", std::string(400, 'd')},
            {"inputSchema", {{"type", "object"}, {"properties", props}, {"required", {"path"}}}},
            {"annotations", {{"readOnlyHint", i % 2 == 0}, {"title", "Tool " + std::to_string(i)}}}};
}

}  // namespace

int main(int argc, char** argv) {
    const int tools = argc > 1 ? std::atoi(argv[1]) : 100;
    json list = json::array();
    for (int i = 0; i < tools; ++i) list.push_back(make_tool(i));
    const std::string body =
        json{{"jsonrpc", "2.0"}, {"id", 1}, {"result", {{"tools", list}}}}.dump();
    Policy policy;
    policy.servers = {"s"};
    policy.rules = {{"a", "s", "tool_*", Action::allow, {}}, {"d", "s", "tool_1?", Action::deny, {}}};
    if (!validate_rules(policy).empty()) return 1;
    PinBook pins;
    const json parsed = json::parse(body);

    const double plain = median_us(21, 200, [&] { (void)json::parse(body).dump(); });
    const double strict = median_us(21, 200, [&] { (void)parse_mcp_json(body).value.dump(); });
    const double copy = median_us(21, 200, [&] { json c = parsed["result"]; });
    const double filter = median_us(21, 200, [&] { (void)filter_tools_list(parsed["result"], "s", policy, pins); });
    const double first = median_us(21, 20, [&] {
        PinBook fresh;
        (void)filter_tools_list(parsed["result"], "s", policy, fresh);
    });
    const double whole = median_us(21, 200, [&] {
        auto doc = parse_mcp_json(body);
        auto f = filter_tools_list(std::move(doc.value["result"]), "s", policy, pins);
        doc.value["result"] = std::move(f.result);
        (void)doc.value.dump();
    });
    std::printf("tools/list of %d tools, %zu bytes\n", tools, body.size());
    std::printf("  nlohmann parse + dump            %8.1f us\n", plain);
    std::printf("  strict parse + dump              %8.1f us\n", strict);
    std::printf("  copy of the parsed result        %8.1f us\n", copy);
    std::printf("  filter + pin, first sight        %8.1f us  (includes that copy)\n", first);
    std::printf("  filter + pin, unchanged answer   %8.1f us  (includes that copy)\n", filter);
    std::printf("  strict parse + filter/pin + dump %8.1f us  (added over nothing)\n", whole);
    return 0;
}
