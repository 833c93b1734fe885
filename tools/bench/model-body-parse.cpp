// tools/bench/model-body-parse.cpp — what the strict reading of a model request's body
// (base/strict_json: duplicate and case-variant keys refused) costs against
// nlohmann's own parse, for a small Messages body (gateway.sh (e1)'s shape) and
// a 62 KiB one (a turn with 40 tool round trips and 20 tools). Three rounds each.
#include <chrono>
#include <cstdio>
#include <string>
#include <algorithm>
#include <vector>
#include <nlohmann/json.hpp>
#include "base/strict_json.hpp"
int main() {
    // A small Messages body (the bench's e1 shape) and a 60 KiB one (a real turn with history and tools).
    nlohmann::json small = {{"model","claude-bench-1"},{"max_tokens",64},{"messages",{{{"role","user"},{"content","hi"}}}}};
    nlohmann::json big = small;
    for (int i = 0; i < 40; ++i) {
        big["messages"].push_back({{"role","assistant"},{"content",{{{"type","tool_use"},{"id","t"+std::to_string(i)},{"name","Read"},{"input",{{"file_path","/src/x"+std::to_string(i)}}}}}}});
        big["messages"].push_back({{"role","user"},{"content",{{{"type","tool_result"},{"tool_use_id","t"+std::to_string(i)},{"content",std::string(1200,'x')}}}}});
    }
    for (int i = 0; i < 20; ++i) {
        nlohmann::json schema = nlohmann::json::parse(R"({"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}}})");
        big["tools"].push_back({{"name","tool"+std::to_string(i)},{"description",std::string(200,'d')},{"input_schema",schema}});
    }
    for (auto* doc : {&small, &big}) {
        const std::string text = doc->dump();
        const int n = doc == &small ? 200000 : 3000;
        for (int round = 0; round < 3; ++round) {
            std::vector<double> t(2);
            for (int which = 0; which < 2; ++which) {
                auto s = std::chrono::steady_clock::now();
                std::size_t sink = 0;
                for (int i = 0; i < n; ++i) {
                    if (which == 0) { auto d = nlohmann::json::parse(text, nullptr, false); sink += d.size(); }
                    else { auto d = corral::parse_strict_json(text, {8u<<20, (8u<<20)+1}); sink += d.value.size(); }
                }
                t[which] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count() / n;
                if (sink == 42) std::puts("");
            }
            std::printf("%s body %zu B: nlohmann %.2f us, strict %.2f us, ratio %.2f\n", doc == &small ? "small" : "large", text.size(), t[0], t[1], t[1]/t[0]);
        }
    }
}
