#include "config/grant_policy.hpp"

#include <limits>


namespace corral::config {

namespace {

// Model names on the wire are ASCII words ("claude-sonnet-4-5-20250929",
// "gpt-5-codex", "openai/gpt-4o"); '*' and '?' are the glob characters.
bool is_model_pattern(const std::string& s) {
    if (s.empty() || s.size() > 200) return false;
    for (char c : s)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("._-:/@+*?").find(c) != std::string_view::npos))
            return false;
    return true;
}

// An array of strings each `valid`, each bad element its own diagnostic.
std::vector<std::string> string_list(Table& s, const std::string& k, const std::string& allowed,
                                     bool (*valid)(const std::string&)) {
    std::vector<std::string> out;
    const toml::value* v = s.find(k);
    if (!v->is_array()) {
        s.bad(k, "an array of strings: " + allowed);
        return out;
    }
    std::size_t i = 0;
    for (const auto& item : v->as_array()) {
        const std::string key = s.key(k) + "[" + std::to_string(i++) + "]";
        if (!item.is_string() || !valid(item.as_string().str))
            s.checker().bad_value(item, key, allowed);
        else
            out.push_back(item.as_string().str);
    }
    return out;
}

bool beta_name(const std::string& b) { return is_beta_name(b); }

}  // namespace

GrantPolicy parse_grant_policy(Checker& c, const toml::value& v, const std::string& key) {
    GrantPolicy p;
    if (!v.is_table()) {
        c.bad_value(v, key, "a table ([grants.policy], or policy = { models = [...], server_tools = false })");
        return p;
    }
    p.where = where_of(c.file(), v);
    Table s(c, v, key,
            {"models", "max_output_tokens", "server_tools", "mcp_servers", "url_sources", "context_management",
             "anthropic_betas"});
    if (const toml::value* m = s.find("models")) {
        const std::string allowed =
            "a model name or glob of letters, digits, '._-:/@+' and '*' '?' (\"claude-sonnet-4-5*\")";
        p.models = string_list(s, "models", allowed, is_model_pattern);
        if (m->is_array() && m->as_array().empty())
            s.bad("models", "at least one model name or glob (leave models out to allow any model)");
    }
    if (auto n = s.integer("max_output_tokens", 1, std::numeric_limits<std::int64_t>::max()))
        p.max_output_tokens = static_cast<std::uint64_t>(*n);
    if (auto b = s.boolean("server_tools")) p.server_tools = *b;
    if (auto b = s.boolean("mcp_servers")) p.mcp_servers = *b;
    if (auto b = s.boolean("url_sources")) p.url_sources = *b;
    if (auto b = s.boolean("context_management")) p.context_management = *b;
    if (s.has("anthropic_betas")) p.anthropic_betas = string_list(s, "anthropic_betas", kBetaNameAllowed, beta_name);
    return p;
}

}  // namespace corral::config
