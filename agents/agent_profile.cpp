#include "agents/agent_profile.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <regex>
#include <set>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include "base/fd.hpp"
#include "base/regular_file.hpp"
#include "base/sys_error.hpp"
#include "names/box_environment.hpp"
#include "names/run_id.hpp"

namespace corral::agents {

namespace {

using json = nlohmann::json;

// 2100-01-01T00:00:00Z: far enough that no CLI considers refreshing.
constexpr long long far_future_s = 4102444800LL;
constexpr long long far_future_ms = far_future_s * 1000;
// 2026-01-01T00:00:00Z: a fixed "issued at" keeps the golden files stable.
constexpr long long issued_at_s = 1767225600LL;

std::string pkg_path(const AgentInputs& in, const char* rel) {
    return in.agents_prefix + "/node_modules/" + rel;
}

std::string join_path(const std::string& a, const std::string& b) {
    if (a.empty()) return b;
    return a.back() == '/' ? a + b : a + "/" + b;
}

// pi's argument parser has no "--": a message starting with '-' would be read
// as a flag and one starting with '@' as a file to attach. A leading space
// keeps the text (models ignore it) and makes it a message.
std::string pi_safe_message(const std::string& text) {
    if (!text.empty() && (text[0] == '-' || text[0] == '@')) return " " + text;
    return text;
}

config::Route route(const std::string& text) {
    config::Route r;
    r.text = text;
    auto sp = text.find(' ');
    r.method = text.substr(0, sp);
    r.path = text.substr(sp + 1);
    if (!r.path.empty() && r.path.back() == '*') {
        r.path.pop_back();
        r.prefix = true;
    }
    return r;
}

config::Grant inject_grant(const std::string& host, const std::string& credential,
                           const std::vector<std::string>& routes, AgentKind kind, const std::string& worker) {
    config::Grant g;
    g.host = names::builtin_host_pattern(host);
    g.port = 443;
    g.mode = config::GrantMode::inject;
    g.credential = credential;
    for (const auto& r : routes) g.routes.push_back(route(r));
    if (!worker.empty()) g.identities = {worker};
    g.where = "implied by agent = \"" + std::string(config::to_string(kind)) + "\"";
    return g;
}

std::string base64url(const std::string& bytes) {
    std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
    int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
    out.resize(static_cast<std::size_t>(n));
    while (!out.empty() && out.back() == '=') out.pop_back();
    for (char& c : out) {
        if (c == '+') c = '-';
        else if (c == '/') c = '_';
    }
    return out;
}

std::string pretty(const json& j) { return j.dump(2) + "\n"; }

// ---- claude ----

void add_claude(AgentProfile& p, const AgentInputs& in, const std::string& sentinel) {
    const std::string dir_rel = join_path(in.home_rel, ".claude");
    const std::string dir_box = join_path(in.home_in_box, ".claude");
    p.argv = {pkg_path(in, "@anthropic-ai/claude-code/bin/claude.exe"),
              "-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"};
    if (!in.model.empty()) p.argv.insert(p.argv.end(), {"--model", in.model});
    if (!in.system_prompt.empty()) p.argv.insert(p.argv.end(), {"--append-system-prompt", in.system_prompt});
    const std::string mcp_file = "corral-mcp.json";
    const auto mcp_flags = claude_mcp_flags(in.mcp, join_path(dir_box, mcp_file));
    p.argv.insert(p.argv.end(), mcp_flags.begin(), mcp_flags.end());
    p.argv.insert(p.argv.end(), {"--", in.prompt});
    p.version_argv = {p.argv[0], "--version"};

    p.env.emplace_back(names::claude_config_dir_variable, dir_box);
    for (const auto& v : names::claude_switches) p.env.emplace_back(v.name, v.value);
    p.dirs.push_back(dir_rel);
    // With CLAUDE_CONFIG_DIR set claude keeps its state file here, not in ~.
    p.files.push_back({join_path(dir_rel, ".claude.json"), pretty(json{{"hasCompletedOnboarding", true}}), 0600});
    if (!mcp_flags.empty()) p.files.push_back({join_path(dir_rel, mcp_file), claude_mcp_config_json(in.mcp), 0600});
    if (in.credential == CredentialMode::oauth) {
        json cred = {{"claudeAiOauth",
                      {{"accessToken", "sk-ant-oat01-" + sentinel},
                       {"refreshToken", "sk-ant-ort01-" + sentinel},
                       {"expiresAt", far_future_ms},
                       {"refreshTokenExpiresAt", far_future_ms},
                       {"scopes", {"user:inference", "user:profile", "user:sessions:claude_code"}},
                       {"subscriptionType", "max"},
                       {"rateLimitTier", "default_claude_max_20x"}}}};
        p.files.push_back({join_path(dir_rel, ".credentials.json"), pretty(cred), 0600});
    } else {
        p.env.emplace_back(names::claude_api_key_variable, "sk-ant-api03-" + sentinel);
    }
}

// ---- codex ----

std::string codex_config_toml(const AgentInputs& in) {
    std::string t;
    t += "# Written by corral for run " + in.run_id + ".\n";
    t += "# corral is the sandbox and the network policy: codex's own approvals and\n";
    t += "# sandbox are off, and so is everything that phones home (docs/agents.md).\n";
    t += "approval_policy = \"never\"\n";
    t += "sandbox_mode = \"danger-full-access\"\n";
    t += "check_for_update_on_startup = false\n";
    if (!in.model.empty()) t += "model = \"" + in.model + "\"\n";  // model names are [A-Za-z0-9._:/@-]
    t += "\n[analytics]\nenabled = false\n";
    t += "\n[features]\n";
    t += "apps = false\n";
    t += "plugins = false\n";
    t += "api_key_model_discovery = false\n";
    // Plain bodies let the gateway apply body limits without decoding zstd.
    t += "enable_request_compression = false\n";
    t += "\n[otel]\nexporter = \"none\"\nmetrics_exporter = \"none\"\ntrace_exporter = \"none\"\n";
    t += codex_mcp_servers_toml(in.mcp);
    return t;
}

json codex_auth_claim(const AgentInputs& in, const std::string& sentinel, const std::string& account) {
    return {{"chatgpt_account_id", account},
            {"chatgpt_plan_type", in.chatgpt_plan_type},
            {"chatgpt_user_id", "user-" + sentinel},
            {"user_id", "user-" + sentinel}};
}

void add_codex(AgentProfile& p, const AgentInputs& in, const std::string& sentinel) {
    const std::string dir_rel = join_path(in.home_rel, ".codex");
    const std::string dir_box = join_path(in.home_in_box, ".codex");
    // --strict-config: a codex that no longer knows one of the switches in
    // our config.toml (approvals, sandbox, phone-home) refuses to start
    // instead of silently running with its defaults.
    p.argv = {in.node, pkg_path(in, "@openai/codex/bin/codex.js"), "exec", "--json", "--skip-git-repo-check",
              "--strict-config"};
    if (!in.model.empty()) p.argv.insert(p.argv.end(), {"--model", in.model});
    p.argv.insert(p.argv.end(), {"--", compose_codex_prompt(in.system_prompt, in.prompt)});
    p.version_argv = {in.node, p.argv[1], "--version"};

    p.env.emplace_back(names::codex_home_variable, dir_box);
    p.dirs.push_back(dir_rel);
    json auth;
    if (in.credential == CredentialMode::oauth) {
        const std::string account = in.chatgpt_account_id.empty() ? "account-" + sentinel : in.chatgpt_account_id;
        const json claim = codex_auth_claim(in, sentinel, account);
        json id_payload = {{"iss", "https://auth.openai.com"},
                           {"aud", {"app_corral_sentinel"}},
                           {"sub", "user-" + sentinel},
                           {"email", "sentinel@corral.invalid"},
                           {"email_verified", true},
                           {"iat", issued_at_s},
                           {"auth_time", issued_at_s},
                           {"exp", far_future_s},
                           {"https://api.openai.com/auth", claim},
                           {"https://api.openai.com/profile", {{"email", "sentinel@corral.invalid"}, {"email_verified", true}}}};
        json access_payload = {{"iss", "https://auth.openai.com"},
                               {"aud", {"https://api.openai.com/v1"}},
                               {"client_id", "app_corral_sentinel"},
                               {"sub", "user-" + sentinel},
                               {"scp", {"openid", "profile", "email", "offline_access"}},
                               {"iat", issued_at_s},
                               {"exp", far_future_s},
                               {"jti", sentinel},
                               {"https://api.openai.com/auth", claim},
                               {"https://api.openai.com/profile", {{"email", "sentinel@corral.invalid"}, {"email_verified", true}}}};
        auth = {{"auth_mode", "chatgpt"},
                {"OPENAI_API_KEY", nullptr},
                {"tokens",
                 {{"id_token", unsigned_jwt(id_payload.dump())},
                  {"access_token", unsigned_jwt(access_payload.dump())},
                  {"refresh_token", "rt_" + sentinel},
                  {"account_id", account}}},
                {"last_refresh", in.issued_at}};
    } else {
        auth = {{"auth_mode", "apikey"}, {"OPENAI_API_KEY", "sk-" + sentinel}};
    }
    p.files.push_back({join_path(dir_rel, "auth.json"), pretty(auth), 0600});
    p.files.push_back({join_path(dir_rel, "config.toml"), codex_config_toml(in), 0600});
}

// ---- pi ----

void add_pi(AgentProfile& p, const AgentInputs& in, const std::string& sentinel) {
    const std::string dir_rel = join_path(in.home_rel, ".pi/agent");
    const std::string dir_box = join_path(in.home_in_box, ".pi/agent");
    p.argv = {in.node, pkg_path(in, "@mariozechner/pi-coding-agent/dist/cli.js"),
              "-p", "--mode", "json", "--no-session", "--provider", "anthropic"};
    if (!in.model.empty()) p.argv.insert(p.argv.end(), {"--model", in.model});
    if (!in.system_prompt.empty()) {
        // pi reads --append-system-prompt as a file when the text names an
        // existing path; passing our own file makes that unambiguous.
        const std::string file = "corral-system-prompt.md";
        p.files.push_back({join_path(dir_rel, file), in.system_prompt, 0600});
        p.argv.insert(p.argv.end(), {"--append-system-prompt", join_path(dir_box, file)});
    }
    p.argv.push_back(pi_safe_message(in.prompt));
    p.version_argv = {in.node, p.argv[1], "--version"};

    p.env.emplace_back(names::pi_agent_dir_variable, dir_box);
    for (const auto& v : names::pi_switches) p.env.emplace_back(v.name, v.value);
    p.dirs.push_back(join_path(in.home_rel, ".pi"));
    p.dirs.push_back(dir_rel);
    json auth;
    if (in.credential == CredentialMode::oauth) {
        // pi switches to Bearer + the Claude Code headers for any token containing "sk-ant-oat".
        auth = {{"anthropic",
                 {{"type", "oauth"},
                  {"access", "sk-ant-oat01-" + sentinel},
                  {"refresh", "sk-ant-ort01-" + sentinel},
                  {"expires", far_future_ms}}}};
    } else {
        // Never starts with '!' (pi would run it as a shell command) and is no
        // variable name (pi would substitute the variable's value).
        auth = {{"anthropic", {{"type", "api_key"}, {"key", "sk-ant-api03-" + sentinel}}}};
    }
    // auth.json is written before the system prompt file in the list order
    // callers see; keep auth first for readability of the golden files.
    p.files.insert(p.files.begin(), {join_path(dir_rel, "auth.json"), pretty(auth), 0600});
}

}  // namespace

CredentialMode credential_mode_for(config::CredentialKind k) {
    return k == config::CredentialKind::oauth_token ? CredentialMode::oauth : CredentialMode::api_key;
}

const char* pinned_cli_version(AgentKind k) {
    switch (k) {
    case AgentKind::claude: return "2.1.332";
    case AgentKind::codex: return "0.171.0";
    case AgentKind::pi: return "0.73.1";
    }
    return "";
}

InstalledVersion installed_cli_version(const AgentProfile& p, const std::string& agents_prefix,
                                       const std::string& rootfs) {
    const std::string nm = join_path(agents_prefix, "node_modules/");
    for (const auto& a : p.argv) {
        if (a.compare(0, nm.size(), nm) != 0) continue;
        std::string rest = a.substr(nm.size());
        auto slash = rest.find('/');
        if (!rest.empty() && rest[0] == '@' && slash != std::string::npos) slash = rest.find('/', slash + 1);
        if (slash == std::string::npos) continue;
        const std::string pkg = nm + rest.substr(0, slash) + "/package.json";
        std::optional<std::string> text;
        try {
            text = read_regular_file({"the CLI's package.json", pkg, PathWalk::in_root, rootfs, 1u << 20});
        } catch (const std::exception& e) {
            return {std::nullopt, e.what()};
        }
        if (!text) return {std::nullopt, pkg + ": cannot read: " + errno_text(ENOENT)};
        auto j = json::parse(*text, nullptr, false);
        if (j.is_discarded()) return {std::nullopt, pkg + ": not valid JSON"};
        if (!j.is_object() || !j.contains("version") || !j["version"].is_string() ||
            j["version"].get<std::string>().empty())
            return {std::nullopt, pkg + ": no \"version\" string"};
        // It goes into run.json and onto the operator's terminal: a version,
        // nothing else (no control characters, no essay).
        const std::string v = j["version"].get<std::string>();
        static const std::regex shape("[0-9A-Za-z.+-]{1,64}");
        if (!std::regex_match(v, shape))
            return {std::nullopt, pkg + ": \"version\" is not a version (allowed: 1 to 64 of [0-9A-Za-z.+-])"};
        return {v, ""};
    }
    return {std::nullopt, "the command line names no package under " + nm};
}

std::string cli_version_note(const AgentProfile& p, const InstalledVersion& installed) {
    const std::string name(config::to_string(p.kind));
    if (!installed.version)
        return "cli_version: unknown, recorded as null (" + installed.problem + "; corral pins " + name + " " +
               p.cli_version + ")";
    if (*installed.version != p.cli_version)
        return "cli_version: the installed " + name + " is " + *installed.version + ", corral pins " + p.cli_version +
               " (its flags and files were checked against the pinned one; install it with tools/install-npm-deps.sh)";
    return "";
}

std::optional<std::string> cli_missing_in_rootfs(const AgentProfile& p, const names::RootfsSource& rootfs,
                                                 const std::string& prefix) {
    const bool host = std::holds_alternative<names::HostRootfs>(rootfs);
    const std::string image = names::to_string(rootfs);
    for (const auto& program : p.version_argv) {
        if (program.empty() || program[0] != '/') continue;  // flags such as --version
        // Resolved inside the image (or the host's "/"): an existence check
        // only, nothing is read.
        if (is_regular_file_at({"--rootfs", program, PathWalk::in_root, host ? "/" : image})) continue;
        std::string where = host ? "on this host (--rootfs host shows the host's /usr)" : "in the image " + image;
        bool ours = program.compare(0, prefix.size() + 1, prefix + "/") == 0;
        return std::string(config::to_string(p.kind)) + " needs " + program + ", which is not " + where + "; " +
               (ours ? "install the pinned agent CLIs there (tools/install-npm-deps.sh; for an image, "
                       "CORRAL_AGENTS_PREFIX=<image>" + prefix + ")"
                     : "the image must provide it");
    }
    return std::nullopt;
}

std::string sentinel_for(const std::string& run_id) { return "corral-sentinel-" + run_id; }

std::string unsigned_jwt(const std::string& payload_json) {
    return base64url(R"({"alg":"none","typ":"JWT"})") + "." + base64url(payload_json) + "." +
           base64url("corral-sentinel-unsigned");
}

std::string compose_codex_prompt(const std::string& system_prompt, const std::string& prompt) {
    if (system_prompt.empty()) return prompt;
    return "<corral-system-prompt>\n" + system_prompt +
           "\n</corral-system-prompt>\n\nThe instructions above are your system prompt. The task follows.\n\n" + prompt;
}

std::vector<config::Grant> implied_grants(AgentKind kind, CredentialMode mode, const std::string& worker) {
    switch (kind) {
    case AgentKind::claude:
        // /v1/messages is the inference call; the three GETs are what the quiet
        // CLI still asks (OAuth: profile; API key: settings, policy_limits) —
        // granted so a normal run has no refusal in the ledger.
        // platform.claude.com (token refresh) is deliberately not granted.
        return {inject_grant("api.anthropic.com", "anthropic",
                             {"POST /v1/messages", "POST /v1/messages/count_tokens", "GET /api/oauth/profile",
                              "GET /api/claude_code/settings", "GET /api/claude_code/policy_limits"},
                             kind, worker)};
    case AgentKind::codex:
        if (mode == CredentialMode::oauth) {
            // ChatGPT mode: routing discovery (mandatory), models, responses
            // (WebSocket upgrade is a GET, with POST/SSE fallback), user settings.
            // auth.openai.com (token refresh) is deliberately not granted.
            return {inject_grant("chatgpt.com", "openai",
                                 {"GET /backend-api/wham/accounts/check", "GET /backend-api/wham/settings/user",
                                  "GET /backend-api/codex/models", "GET /backend-api/codex/responses",
                                  "POST /backend-api/codex/responses", "POST /backend-api/codex/responses/*"},
                                 kind, worker)};
        }
    {
        // OpenAI reads an API key only as a Bearer token; the api_key default
        // (x-api-key) would get 401 on every call. A [credentials.openai]
        // template still wins (credential_for_grant).
        auto g = inject_grant("api.openai.com", "openai",
                              {"GET /v1/responses", "POST /v1/responses", "POST /v1/responses/*", "GET /v1/models"},
                              kind, worker);
        g.default_headers = {{"authorization", "Bearer {key}"}};
        return {g};
    }
    case AgentKind::pi:
        return {inject_grant("api.anthropic.com", "anthropic", {"POST /v1/messages"}, kind, worker)};
    }
    return {};
}

RequiredCredential required_credential(AgentKind kind) {
    if (kind == AgentKind::codex) {
        return {"openai",
                "add to org.toml: [credentials.openai] kind = \"api_key\" with env = \"OPENAI_API_KEY\" or "
                "file = \"/etc/corral/openai.key\" (root-owned, mode 0600) for an OpenAI API key (injected as "
                "authorization: Bearer on api.openai.com); kind = \"oauth_token\" for a ChatGPT sign-in access token"};
    }
    return {"anthropic",
            "add to org.toml: [credentials.anthropic] kind = \"api_key\" with env = \"ANTHROPIC_API_KEY\" or "
            "file = \"/etc/corral/anthropic.key\" (root-owned, mode 0600); kind = \"oauth_token\" for a "
            "Claude subscription token"};
}

namespace {

// The implied grants no configured grant replaces (same host and port: the operator's wins).
std::vector<config::Grant> implied_not_replaced(const std::vector<config::Grant>& configured,
                                                const std::vector<config::Grant>& implied) {
    std::vector<config::Grant> out;
    for (const auto& g : implied) {
        bool shadowed = false;
        for (const auto& c : configured) shadowed |= c.host == g.host && c.port == g.port;
        if (!shadowed) out.push_back(g);
    }
    return out;
}

void renumber(std::vector<config::Grant>& grants) {
    for (std::size_t i = 0; i < grants.size(); ++i) grants[i].index = i;
}

}  // namespace

std::vector<config::Grant> worker_grants(const config::ResolvedWorker& w, const std::vector<config::Grant>& implied) {
    std::vector<config::Grant> out = implied_not_replaced(w.grants, implied);
    out.insert(out.end(), w.grants.begin(), w.grants.end());
    return out;
}

config::GatewayConfig run_gateway_config(const config::OrgConfig& org, const config::ResolvedWorker& w,
                                         const std::vector<config::Grant>& implied) {
    config::GatewayConfig cfg = org.gateway;
    cfg.grants = worker_grants(w, implied);
    renumber(cfg.grants);
    cfg.metering = w.metering;
    return cfg;
}

std::map<std::string, config::CredentialStatus> agent_credential_status(const config::OrgConfig& org) {
    std::map<std::string, config::CredentialStatus> out;
    for (const auto& [name, wc] : org.workers) {
        config::ResolvedWorker w = config::resolve_worker(org, name);
        if (w.egress_only) continue;
        std::string cred = required_credential(w.agent).name;
        if (!out.count(cred)) out.emplace(cred, config::credential_status(org.gateway, cred));
    }
    return out;
}

OrgGatewayConfig org_gateway_config(const config::OrgConfig& org,
                                    const std::map<std::string, config::CredentialStatus>& credentials) {
    if (org.gateway.gateway.listen_unix.empty())
        throw config::ConfigError(org.org_file +
                                  ": key 'gateway.listen_unix': empty, allowed: an absolute socket path (`corral "
                                  "gateway --org` serves `corral run --gateway unix:PATH` there; with neither "
                                  "listen_unix nor listen_tcp in [gateway] it is " +
                                  std::string(config::default_gateway_socket) + ")");
    OrgGatewayConfig out;
    out.config = org.gateway;
    out.config.metering = config::resolve_metering(org.budget, org.prices, {}, {});
    auto& grants = out.config.grants;  // org.toml's [[grants]] first, with their own identities
    for (const auto& [name, wc] : org.workers) {
        config::ResolvedWorker w = config::resolve_worker(org, name);
        out.config.worker_metering[name] = w.metering;
        if (!w.tools.empty()) out.config.worker_tools[name] = w.tools;
        if (w.egress_only) {
            // No agent: its own grants only, no model grants, no credential to need.
            for (auto g : wc.grants) {
                g.identities = {name};
                grants.push_back(std::move(g));
            }
            continue;
        }
        const std::string cred = required_credential(w.agent).name;
        config::CredentialStatus status;
        if (auto it = credentials.find(cred); it != credentials.end()) {
            status = it->second;
        } else if (auto spec = org.gateway.credentials.find(cred); spec != org.gateway.credentials.end()) {
            status.defined = status.available = true;
            status.kind = spec->second.kind;
        }
        std::vector<config::Grant> implied;
        if (status.defined && status.available)
            implied = implied_grants(w.agent, credential_mode_for(status.kind), name);
        else
            out.left_out.push_back(missing_credential_message(name, w.agent, status) +
                                   "; its agent's model grants are left out (its runs are refused there)");
        // worker_grants(w, implied) without the org grants, which are already
        // in the list once: what only this worker has.
        std::vector<config::Grant> own = implied_not_replaced(w.grants, implied);
        own.insert(own.end(), wc.grants.begin(), wc.grants.end());
        for (auto& g : own) {
            g.identities = {name};
            grants.push_back(std::move(g));
        }
    }
    renumber(grants);
    // Only the credentials a served grant uses are loaded: one nobody can use
    // (e.g. the unavailable one of a worker left out) must not stop the daemon.
    config::keep_used_credentials(out.config);
    return out;
}

AgentProfile make_agent_profile(AgentKind kind, const AgentInputs& in) {
    names::require_run_id(in.run_id, "agent profile");
    AgentProfile p;
    p.kind = kind;
    p.cli_version = pinned_cli_version(kind);
    const std::string sentinel = sentinel_for(in.run_id);
    p.env.emplace_back(names::agent_home_variable, in.home_in_box);
    p.dirs.push_back(in.home_rel);
    switch (kind) {
    case AgentKind::claude: add_claude(p, in, sentinel); break;
    case AgentKind::codex: add_codex(p, in, sentinel); break;
    case AgentKind::pi: add_pi(p, in, sentinel); break;
    }
    p.implied_grants = implied_grants(kind, in.credential, in.worker);
    p.credential = required_credential(kind);
    return p;
}

std::string missing_credential_message(const std::string& worker, AgentKind kind,
                                       const config::CredentialStatus& status) {
    if (status.defined && status.available) return "";
    RequiredCredential rc = required_credential(kind);
    std::string who = "worker '" + worker + "' runs " + std::string(config::to_string(kind));
    if (!status.defined)
        return who + ", which needs the credential '" + rc.name + "': not defined; " + rc.how_to_add;
    return who + ", which needs the credential '" + rc.name + "' (" + status.source +
           "): not available: " + status.problem + (status.fix.empty() ? "" : "; to fix: " + status.fix);
}

void check_agent_credential(const std::string& worker, AgentKind kind, const config::GatewayConfig& gw) {
    auto status = config::credential_status(gw, required_credential(kind).name);
    if (auto msg = missing_credential_message(worker, kind, status); !msg.empty()) throw UsageError(msg);
}

namespace {

// Opens (creating if needed) each component of `rel` below `base_fd` without
// following symlinks; returns the last directory.
Fd open_dir_below(int base_fd, const std::string& rel, const std::string& run_dir,
                  std::optional<std::pair<uid_t, gid_t>> owner) {
    Fd cur(::fcntl(base_fd, F_DUPFD_CLOEXEC, 0));
    std::size_t pos = 0;
    while (pos < rel.size()) {
        std::size_t next = rel.find('/', pos);
        std::string part = rel.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
        pos = next == std::string::npos ? rel.size() : next + 1;
        if (part.empty() || part == ".") continue;
        if (part == "..") throw UsageError("agent home path climbs out of the run dir: " + rel);
        bool created = ::mkdirat(cur.get(), part.c_str(), 0700) == 0;
        if (!created && errno != EEXIST) throw SysError("mkdirat", run_dir + "/" + rel, errno);
        Fd d(::openat(cur.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        if (!d.valid()) throw SysError("openat", run_dir + "/" + rel + " (" + part + ")", errno);
        if (created && owner) check_sys(::fchown(d.get(), owner->first, owner->second), "fchown", run_dir + "/" + rel);
        cur = std::move(d);
    }
    return cur;
}

}  // namespace

void write_agent_home(const AgentProfile& profile, const std::string& run_dir,
                      std::optional<std::pair<uid_t, gid_t>> owner) {
    Fd root(::open(run_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root.valid()) throw SysError("open", run_dir, errno);
    for (const auto& d : profile.dirs) open_dir_below(root.get(), d, run_dir, owner);
    for (const auto& f : profile.files) {
        auto slash = f.path.rfind('/');
        std::string dir = slash == std::string::npos ? "" : f.path.substr(0, slash);
        std::string name = slash == std::string::npos ? f.path : f.path.substr(slash + 1);
        Fd parent = open_dir_below(root.get(), dir, run_dir, owner);
        const std::string full = run_dir + "/" + f.path;
        Fd fd(::openat(parent.get(), name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, f.mode));
        if (!fd.valid()) throw SysError("openat", full, errno);
        check_sys(::fchmod(fd.get(), f.mode), "fchmod", full);
        if (owner) check_sys(::fchown(fd.get(), owner->first, owner->second), "fchown", full);
        std::size_t done = 0;
        while (done < f.content.size()) {
            ssize_t n = ::write(fd.get(), f.content.data() + done, f.content.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw SysError("write", full, errno);
            done += static_cast<std::size_t>(n);
        }
    }
}

std::vector<std::pair<std::string, std::string>> proxy_environment(const std::string& ca_path_in_box, unsigned port) {
    const std::string proxy = "http://127.0.0.1:" + std::to_string(port);
    // Every loopback spelling stays local: the box's own services never go via the gateway.
    const std::string no_proxy = "localhost,localhost.,127.0.0.1,::1,[::1]";
    std::vector<std::pair<std::string, std::string>> env;
    for (const auto& v : names::proxy_variables) {
        switch (v.value) {
        case names::ProxyValue::proxy_url: env.emplace_back(v.name, proxy); break;
        case names::ProxyValue::no_proxy: env.emplace_back(v.name, no_proxy); break;
        case names::ProxyValue::literal: env.emplace_back(v.name, v.literal); break;
        }
    }
    if (ca_path_in_box.empty()) return env;  // nothing is intercepted: the box keeps its own trust store
    for (auto name : names::ca_bundle_variables) env.emplace_back(name, ca_path_in_box);
    return env;
}

}  // namespace corral::agents
