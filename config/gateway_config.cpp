// The GatewayConfig helpers and the stand-alone gateway file's loader (the
// public boundary where the checker's diagnostics become a ConfigError).
#include "config/gateway_config.hpp"

#include <set>
#include <variant>

#include "config/checker.hpp"
#include "config/toml_text.hpp"

namespace corral::config {

std::string_view to_string(CredentialKind k) { return k == CredentialKind::api_key ? "api_key" : "oauth_token"; }
std::string_view to_string(GrantMode m) { return m == GrantMode::tunnel ? "tunnel" : "inject"; }

void keep_used_credentials(GatewayConfig& cfg) {
    std::set<std::string> used;
    for (const auto& g : cfg.grants)
        if (!g.credential.empty()) used.insert(g.credential);
    auto servers_use = [&](const mcp::ToolsConfig& tools) {
        for (const auto& [name, server] : tools.servers) {
            if (const auto* http = std::get_if<mcp::HttpServer>(&server.transport)) {
                if (!http->credential.empty()) used.insert(http->credential);
            } else {
                for (const auto& [var, credential] : std::get<mcp::StdioServer>(server.transport).secret_env)
                    used.insert(credential);
            }
        }
    };
    servers_use(cfg.tools);
    for (const auto& [worker, tools] : cfg.worker_tools) servers_use(tools);
    for (auto it = cfg.credentials.begin(); it != cfg.credentials.end();)
        it = used.count(it->first) ? std::next(it) : cfg.credentials.erase(it);
}

CredentialSpec credential_for_grant(const CredentialSpec& c, const Grant& grant) {
    CredentialSpec out = c;
    if (!c.template_given && !grant.default_headers.empty()) out.headers = grant.default_headers;
    return out;
}

GatewayConfig parse_gateway_sections(const toml::value& root, const std::string& file) {
    GatewaySectionsCheck c = check_gateway_sections(root, file);
    throw_if_any(c.errors);
    return std::move(c.config);
}

namespace {

// A stand-alone gateway file's text: TOML syntax errors become one-line
// ConfigErrors with file:line; only the gateway's top-level keys (and the
// budget and prices) are allowed.
GatewayConfig parse_standalone(TomlDocument doc, const std::string& path) {
    if (!doc.root)
        throw ConfigError(path + (doc.line ? ":" + std::to_string(doc.line) : std::string()) + ": " + doc.problem);
    const toml::value& root = *doc.root;
    std::vector<Diagnostic> errors;
    Checker top(path, errors);
    top.unknown_keys(root, "", {"gateway", "credentials", "grants", "budget", "prices"}, Diagnostic::Form::unknown_key);
    GatewaySectionsCheck c = check_gateway_sections(root, path);
    errors.insert(errors.end(), c.errors.begin(), c.errors.end());
    // A stand-alone gateway's [budget] and [prices] apply to every identity
    // it serves (per run: per "worker/run"; [budget.worker]: per worker).
    BudgetConfig budget;
    PriceList prices;
    if (auto b = root.as_table().find("budget"); b != root.as_table().end()) budget = check_budget_table(b->second, top);
    if (auto p = root.as_table().find("prices"); p != root.as_table().end()) prices = check_prices_table(p->second, top);
    c.config.metering = resolve_metering(budget, prices, {}, {});
    throw_if_any(errors);
    return std::move(c.config);
}

}  // namespace

GatewayConfig load_gateway_config(const std::string& path) {
    return parse_standalone(parse_toml_file(path), path);
}

GatewayConfig parse_gateway_config(std::string_view text, const std::string& file) {
    return parse_standalone(parse_toml_text(text, file), file);
}


}  // namespace corral::config
