#include "gateway/metering/model_policy.hpp"

#include "base/glob.hpp"
#include "base/parse.hpp"
#include "gateway/metering/json_member.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "config/grant_policy.hpp"
#include "gateway/metering/request_facts.hpp"

namespace corral::gateway::metering {

namespace {

using nlohmann::json;

// A value from the request as a message shows it: quoted, control bytes
// replaced, cut short (a detail is one line of bounded size).
std::string shown(std::string_view s) {
    constexpr std::size_t kMax = 80;
    std::string out = "'";
    for (std::size_t i = 0; i < s.size() && i < kMax; ++i) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        out += (c < 0x20 || c == 0x7f || c == '\'') ? '?' : static_cast<char>(c);
    }
    if (s.size() > kMax) out += "...";
    return out + "'";
}

// A JSON value as written (a string keeps its quotes: "64000" is not 64000).
std::string shown_json(const json& v) {
    return shown(v.dump(-1, ' ', false, json::error_handler_t::replace));
}

PolicyRefusal refusal(std::string rule, std::string detail) { return {std::move(rule), std::move(detail)}; }

bool starts_with_ci(std::string_view s, std::string_view prefix) {
    if (s.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        if (c != prefix[i]) return false;
    }
    return true;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// ---- anthropic-beta ----------------------------------------------------------

std::optional<PolicyRefusal> check_betas(const std::vector<std::string>& allowed, std::string_view header,
                                         std::string_view gateway_added) {
    std::size_t pos = 0;
    while (pos <= header.size()) {
        auto comma = header.find(',', pos);
        auto token = header.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
        while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) token.remove_prefix(1);
        while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
        // Case-insensitive, as the gateway's own merge of the header dedupes.
        auto same = [&](std::string_view b) {
            return b.size() == token.size() && starts_with_ci(token, ascii_lower(b));
        };
        if (!token.empty() && !same(gateway_added) && std::none_of(allowed.begin(), allowed.end(), same)) {
            std::string list;
            for (const auto& b : allowed) list += (list.empty() ? "" : ", ") + b;
            return refusal("anthropic_beta", "anthropic-beta " + shown(token) +
                                                 " is not one this grant allows (" +
                                                 (list.empty() ? std::string("none") : list) + ")");
        }
        if (comma == std::string_view::npos) break;
        pos = comma + 1;
    }
    return std::nullopt;
}

// ---- model and output cap ----------------------------------------------------

std::optional<PolicyRefusal> check_model(const std::vector<std::string>& models, const json& d) {
    if (models.empty()) return std::nullopt;
    std::string list;
    for (const auto& m : models) list += (list.empty() ? "" : ", ") + m;
    const json* m = member(d, "model");
    if (!m) return refusal("model", "the request names no model; this grant allows only " + list);
    if (!m->is_string())
        return refusal("model", "model " + shown_json(*m) + " is not a string; this grant allows only " + list);
    const auto& name = m->get_ref<const std::string&>();
    for (const auto& pattern : models)
        if (model_name_matches(pattern, name)) return std::nullopt;
    return refusal("model", "model " + shown(name) + " is not one this grant allows (" + list + ")");
}

std::optional<PolicyRefusal> check_output_cap(std::uint64_t cap, ModelApi api, const json& d) {
    for (const char* field : output_cap_fields(api)) {
        const json* v = member(d, field);
        if (!v) continue;
        if (!v->is_number_unsigned())
            return refusal("max_output_tokens", std::string(field) + " " + shown_json(*v) +
                                                    " is not a non-negative integer; this grant caps output at " +
                                                    std::to_string(cap) + " tokens");
        if (v->get<std::uint64_t>() > cap)
            return refusal("max_output_tokens", std::string(field) + " " + std::to_string(v->get<std::uint64_t>()) +
                                                    " is over this grant's cap of " + std::to_string(cap) +
                                                    " output tokens");
    }
    return std::nullopt;
}

// ---- tools -------------------------------------------------------------------

// How the provider treats one tools[] entry.
enum class ToolKind { client, server, mcp, unreadable };

ToolKind anthropic_tool_kind(const json& tool) {
    if (!tool.is_object()) return ToolKind::unreadable;
    const json* t = member(tool, "type");
    if (!t) return ToolKind::client;  // a custom tool: name, description, input_schema
    if (!t->is_string()) return ToolKind::unreadable;
    const auto& type = t->get_ref<const std::string&>();
    if (type == "custom") return ToolKind::client;
    if (type == "mcp_toolset") return ToolKind::mcp;
    // Anthropic-defined, executed by the client (versioned: bash_20250124).
    for (const char* p : {"bash_", "text_editor_", "computer_", "memory_"})
        if (starts_with(type, p)) return ToolKind::client;
    return ToolKind::server;
}

ToolKind responses_tool_kind(const json& tool) {
    const std::string* type = string_member(tool, "type");
    if (!tool.is_object() || !type) return ToolKind::unreadable;
    if (*type == "function" || *type == "custom" || *type == "local_shell" || *type == "apply_patch")
        return ToolKind::client;
    if (*type == "shell") {  // local unless it asks for a hosted container
        const json* env = member(tool, "environment");
        if (!env) return ToolKind::client;
        const std::string* env_type = string_member(*env, "type");
        return env_type && *env_type == "local" ? ToolKind::client : ToolKind::server;
    }
    if (*type == "mcp") return ToolKind::mcp;
    return ToolKind::server;
}

ToolKind chat_tool_kind(const json& tool) {
    const std::string* type = string_member(tool, "type");
    if (!tool.is_object() || !type) return ToolKind::unreadable;
    return *type == "function" || *type == "custom" ? ToolKind::client : ToolKind::server;
}

std::optional<PolicyRefusal> check_tools(const ModelPolicy& p, const json& d, ToolKind (*kind_of)(const json&)) {
    if (p.server_tools && p.mcp_servers) return std::nullopt;
    const json* tools = member(d, "tools");
    if (!tools) return std::nullopt;
    if (!tools->is_array())
        return refusal(p.server_tools ? "mcp_servers" : "server_tool",
                       "tools is " + shown_json(*tools) + ", not an array; this grant's policy reads every tool");
    std::size_t i = 0;
    for (const auto& tool : *tools) {
        const std::string at = "tools[" + std::to_string(i++) + "]";
        const std::string* type = string_member(tool, "type");
        const std::string named = type ? "tool " + shown(*type) : at;
        switch (kind_of(tool)) {
        case ToolKind::client: break;
        case ToolKind::server:
            if (!p.server_tools)
                return refusal("server_tool",
                               named + " is a provider-hosted tool; this grant allows client tools only");
            break;
        case ToolKind::mcp:
            if (!p.mcp_servers)
                return refusal("mcp_servers",
                               named + " has the provider connect to a remote MCP server; this grant allows none");
            break;
        case ToolKind::unreadable:
            return refusal(p.server_tools ? "mcp_servers" : "server_tool",
                           at + " is not an object with a string type; this grant's policy reads every tool");
        }
    }
    return std::nullopt;
}

// ---- URL sources -------------------------------------------------------------

// Walks content blocks iteratively (a request nests as deep as it likes):
// `visit` sees each object once and returns a refusal or pushes the arrays
// of blocks nested in it.
template <typename Visit>
std::optional<PolicyRefusal> walk_blocks(std::vector<const json*> todo, Visit visit) {
    while (!todo.empty()) {
        const json* j = todo.back();
        todo.pop_back();
        if (j->is_array()) {
            for (const auto& e : *j)
                if (e.is_structured()) todo.push_back(&e);
            continue;
        }
        if (auto r = visit(*j, todo)) return r;
    }
    return std::nullopt;
}

// The blocks under obj[key], whichever shape the API accepts there: a list
// of blocks, or one block given alone as an object (the APIs take both for
// content, system, tool_result content and Responses input; a policy that
// read only lists would wave a lone object through unread).
void push_blocks(const json& obj, const char* key, std::vector<const json*>& todo) {
    if (const json* a = member(obj, key); a && a->is_structured()) todo.push_back(a);
}

// The content of each message in d.messages: a list of messages, or one
// given alone as an object.
void push_message_contents(const json& d, std::vector<const json*>& todo) {
    const json* msgs = member(d, "messages");
    if (msgs && msgs->is_object()) push_blocks(*msgs, "content", todo);
    if (msgs && msgs->is_array())
        for (const auto& m : *msgs)
            if (m.is_object()) push_blocks(m, "content", todo);
}

constexpr const char* kUrlAllowed = "this grant allows inline and uploaded sources only";

std::optional<PolicyRefusal> anthropic_url_source(const json& d) {
    std::vector<const json*> roots;
    push_blocks(d, "system", roots);
    push_message_contents(d, roots);
    return walk_blocks(std::move(roots), [](const json& block, std::vector<const json*>& todo)
                                             -> std::optional<PolicyRefusal> {
        if (const json* source = member(block, "source"); source && source->is_object()) {
            const std::string* st = string_member(*source, "type");
            if (st && *st == "url") {
                const std::string* bt = string_member(block, "type");
                return refusal("url_source", "a " + (bt ? shown(*bt) + " " : std::string()) +
                                                 "block has a source of type 'url' (the provider fetches it); " +
                                                 kUrlAllowed);
            }
            push_blocks(*source, "content", todo);  // a document whose source is content blocks
        }
        push_blocks(block, "content", todo);  // tool_result, search_result, ... hold blocks
        return std::nullopt;
    });
}

bool is_data_url(std::string_view s) { return starts_with_ci(s, "data:"); }

std::optional<PolicyRefusal> responses_url_source(const json& d) {
    std::vector<const json*> roots;
    push_blocks(d, "input", roots);
    // A stored prompt's variables: each may be text or an input part
    // (input_image, input_file) substituted into the template.
    if (const json* prompt = member(d, "prompt"); prompt && prompt->is_object())
        if (const json* vars = member(*prompt, "variables"); vars && vars->is_object())
            for (const auto& v : *vars)
                if (v.is_structured()) roots.push_back(&v);
    return walk_blocks(std::move(roots), [](const json& item, std::vector<const json*>& todo)
                                             -> std::optional<PolicyRefusal> {
        const std::string* type = string_member(item, "type");
        if (type && *type == "input_image")
            if (const json* url = member(item, "image_url"); url && !(url->is_string() && is_data_url(url->get_ref<const std::string&>())))
                return refusal("url_source", std::string("an 'input_image' part takes its image from a URL "
                                                         "(image_url is not a data: URL); ") + kUrlAllowed);
        if (type && *type == "input_file" && member(item, "file_url"))
            return refusal("url_source", std::string("an 'input_file' part takes its file from a URL (file_url); ") +
                                             kUrlAllowed);
        push_blocks(item, "content", todo);  // a message's parts
        push_blocks(item, "output", todo);   // a function_call_output's parts
        return std::nullopt;
    });
}

std::optional<PolicyRefusal> chat_url_source(const json& d) {
    std::vector<const json*> roots;
    push_message_contents(d, roots);
    return walk_blocks(std::move(roots), [](const json& part, std::vector<const json*>&)
                                             -> std::optional<PolicyRefusal> {
        const std::string* type = string_member(part, "type");
        if (!type || *type != "image_url") return std::nullopt;
        const json* image = member(part, "image_url");
        const json* url = image && image->is_object() ? member(*image, "url") : image;
        if (url && url->is_string() && is_data_url(url->get_ref<const std::string&>())) return std::nullopt;
        return refusal("url_source",
                       std::string("an 'image_url' part takes its image from a URL (not a data: URL); ") + kUrlAllowed);
    });
}

// ---- context management --------------------------------------------------------

std::optional<PolicyRefusal> check_context_management(ModelApi api, const json& d) {
    if (const json* cm = member(d, "context_management"))
        return refusal("context_management",
                       "the request asks the provider to edit or compact its context (context_management " +
                           shown_json(*cm) + "); this grant allows no provider-side context management");
    if (api == ModelApi::openai_responses)
        if (const std::string* t = string_member(d, "truncation"); t && *t == "auto")
            return refusal("context_management",
                           "truncation 'auto' lets the provider drop input items to fit its context; this grant "
                           "allows no provider-side context management");
    return std::nullopt;
}

// ---- per API ---------------------------------------------------------------------

std::optional<PolicyRefusal> check_body(const ModelPolicy& p, ModelApi api, const json& d) {
    if (auto r = check_model(p.models, d)) return r;
    if (p.max_output_tokens)
        if (auto r = check_output_cap(*p.max_output_tokens, api, d)) return r;
    ToolKind (*kind_of)(const json&) = nullptr;
    std::optional<PolicyRefusal> (*url_source)(const json&) = nullptr;
    switch (api) {
    case ModelApi::anthropic_messages:
    case ModelApi::anthropic_count_tokens:
        kind_of = anthropic_tool_kind;
        url_source = anthropic_url_source;
        if (!p.mcp_servers)
            if (const json* mcp = member(d, "mcp_servers"); mcp && !(mcp->is_array() && mcp->empty()))
                return refusal("mcp_servers", "the request names remote MCP servers (mcp_servers) for the provider "
                                              "to connect to; this grant allows none");
        break;
    case ModelApi::openai_responses:
        kind_of = responses_tool_kind;
        url_source = responses_url_source;
        break;
    case ModelApi::openai_chat:
        kind_of = chat_tool_kind;
        url_source = chat_url_source;
        if (!p.server_tools && member(d, "web_search_options"))
            return refusal("server_tool", "web_search_options asks for the provider's hosted web search; this grant "
                                          "allows client tools only");
        break;
    case ModelApi::none: return std::nullopt;
    }
    if (auto r = check_tools(p, d, kind_of)) return r;
    if (!p.url_sources)
        if (auto r = url_source(d)) return r;
    if (!p.context_management)
        if (auto r = check_context_management(api, d)) return r;
    return std::nullopt;
}

}  // namespace

bool model_name_matches(std::string_view pattern, std::string_view name) { return glob_match(pattern, name); }

std::optional<PolicyRefusal> check_model_request(const ModelPolicy& policy, ModelApi api, const ModelBody& body,
                                                 std::string_view anthropic_beta_header,
                                                 std::string_view gateway_added_beta) {
    if (!policy.strict()) return std::nullopt;  // the default: nothing to check, the body is not read
    if (policy.anthropic_betas && provider_of(api) == Provider::anthropic)
        if (auto r = check_betas(*policy.anthropic_betas, anthropic_beta_header, gateway_added_beta)) return r;
    if (!policy.reads_body() || api == ModelApi::none) return std::nullopt;
    if (body.too_large || body.bytes > kMaxPolicyBodyBytes)
        return refusal("unreadable_body", "the request body is over " + std::to_string(kMaxPolicyBodyBytes) +
                                              " bytes; this grant's policy reads every model request");
    if (body.ambiguous)
        return refusal("unreadable_body", "the request body could be read as two different requests (" +
                                              body.ambiguous->detail.substr(0, 300) +
                                              "); this grant's policy reads every model request");
    if (!body.object)
        return refusal("unreadable_body",
                       "the request body is not a JSON object; this grant's policy reads every model request");
    return check_body(policy, api, *body.object);
}

std::optional<PolicyRefusal> check_model_request(const ModelPolicy& policy, ModelApi api, std::string_view body,
                                                 std::string_view anthropic_beta_header,
                                                 std::string_view gateway_added_beta) {
    // Parsed only when a body rule would read it, as the gateway's one parse would be.
    const ModelBody parsed = policy.reads_body() && api != ModelApi::none ? parse_model_body(body)
                                                                          : ModelBody{body.size(), false, std::nullopt};
    return check_model_request(policy, api, parsed, anthropic_beta_header, gateway_added_beta);
}

std::optional<PolicyRefusal> check_model_route(const ModelPolicy& policy, std::string_view path) {
    if (policy.context_management) return std::nullopt;
    if (auto cut = path.find_first_of("?#"); cut != std::string_view::npos) path = path.substr(0, cut);
    if (path == "/v1/responses/compact" || path == "/backend-api/codex/responses/compact")
        return refusal("context_management", "route " + shown(path) +
                                                 " has the provider compact the context; this grant allows no "
                                                 "provider-side context management");
    return std::nullopt;
}

}  // namespace corral::gateway::metering
