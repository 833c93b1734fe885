// Fuzz target: the model and tool policy (gateway/metering/model_policy.*) on
// any request body. Input: [api][rules][beta header length][beta header][body].
// What must hold for every input:
//  - the default policy refuses nothing (it never reads the body);
//  - a refusal names one of the known rules, with a one-line detail of
//    bounded size;
//  - "unreadable_body" exactly when the body is not a JSON object;
//  - rules only add refusals: whenever a policy of one of the rules alone
//    refuses, the policy of all the chosen rules refuses too, and a body
//    the combined policy passes passes each rule alone;
//  - the beta list alone never depends on the body.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/metering/model_policy.hpp"

using namespace corral::gateway::metering;

namespace {

const std::set<std::string> kRules = {"model",       "max_output_tokens",  "server_tool",    "mcp_servers",
                                      "url_source",  "context_management", "anthropic_beta", "unreadable_body"};

// The policies of one rule each, chosen by the bits of `rules`.
std::vector<ModelPolicy> single_rules(std::uint8_t rules) {
    std::vector<ModelPolicy> out;
    auto add = [&](int bit, auto set) {
        if (!(rules & (1u << bit))) return;
        ModelPolicy p;
        set(p);
        out.push_back(p);
    };
    add(0, [](ModelPolicy& p) { p.models = {"claude-sonnet-4-5*", "gpt-?", "m"}; });
    add(1, [](ModelPolicy& p) { p.max_output_tokens = 1000; });
    add(2, [](ModelPolicy& p) { p.server_tools = false; });
    add(3, [](ModelPolicy& p) { p.mcp_servers = false; });
    add(4, [](ModelPolicy& p) { p.url_sources = false; });
    add(5, [](ModelPolicy& p) { p.context_management = false; });
    add(6, [](ModelPolicy& p) { p.anthropic_betas = std::vector<std::string>{"a", "oauth-2025-04-20"}; });
    return out;
}

ModelPolicy combined(std::uint8_t rules) {
    ModelPolicy all;
    for (const auto& p : single_rules(rules)) {
        if (!p.models.empty()) all.models = p.models;
        if (p.max_output_tokens) all.max_output_tokens = p.max_output_tokens;
        all.server_tools = all.server_tools && p.server_tools;
        all.mcp_servers = all.mcp_servers && p.mcp_servers;
        all.url_sources = all.url_sources && p.url_sources;
        all.context_management = all.context_management && p.context_management;
        if (p.anthropic_betas) all.anthropic_betas = p.anthropic_betas;
    }
    return all;
}

void check_refusal(const std::optional<PolicyRefusal>& r) {
    if (!r) return;
    if (!kRules.count(r->rule)) std::abort();
    if (r->detail.empty() || r->detail.size() > 600 || r->detail.find('\n') != std::string::npos) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 3) return 0;
    static constexpr ModelApi apis[] = {ModelApi::anthropic_messages, ModelApi::openai_responses,
                                        ModelApi::openai_chat, ModelApi::anthropic_count_tokens};
    const ModelApi api = apis[data[0] % 4];
    const std::uint8_t rules = data[1];
    const std::size_t header_len = std::min<std::size_t>(data[2], size - 3);
    const std::string_view header(reinterpret_cast<const char*>(data) + 3, header_len);
    const std::string_view body(reinterpret_cast<const char*>(data) + 3 + header_len, size - 3 - header_len);
    const std::string_view added = "oauth-2025-04-20";

    if (check_model_request(ModelPolicy{}, api, body, header, added)) std::abort();

    const ModelPolicy all = combined(rules);
    const auto verdict = check_model_request(all, api, body, header, added);
    check_refusal(verdict);
    if (all.reads_body()) {
        // Read as the policy must: a JSON object that no two readers could
        // read differently (a duplicate or case-variant key is unreadable).
        auto d = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
        const bool object = !d.is_discarded() && d.is_object() && !parse_model_body(body).ambiguous;
        const bool unreadable = verdict && verdict->rule == "unreadable_body";
        // A beta refusal comes first and hides what the body is.
        if (!(verdict && verdict->rule == "anthropic_beta") && unreadable == object) std::abort();
    }
    for (const auto& one : single_rules(rules)) {
        const auto r = check_model_request(one, api, body, header, added);
        check_refusal(r);
        if (r && !verdict) std::abort();
    }
    ModelPolicy betas_only;
    betas_only.anthropic_betas = std::vector<std::string>{"a"};
    if (check_model_request(betas_only, api, body, header, added).has_value() !=
        check_model_request(betas_only, api, "{}", header, added).has_value())
        std::abort();
    (void)check_model_route(all, body.substr(0, 64));
    return 0;
}
