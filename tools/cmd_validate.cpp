// corral validate --config DIR [--worker NAME] [--skip-secrets]
//
// Reads an organisation directory (org.toml + workers/NAME/worker.toml),
// prints every worker as a run would see it — agent, rootfs, limits, grants
// (the ones the agent implies included), its MCP servers, rules and pins, the
// credential it needs and whether that credential is available — and the
// warnings. Exit 0 when every worker could start; 2 with one
// "FILE:LINE: key '...': ..." line per problem otherwise.
// With --json: the same findings as one JSON object on stdout (the exit status
// unchanged): every diagnostic with its Diagnostic fields, every worker.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/parse.hpp"
#include "base/terminal_text.hpp"
#include "config/org_config.hpp"
#include "agents/agent_profile.hpp"
#include "base/sys_error.hpp"
#include "cli/admin_args.hpp"
#include "mcp/servers.hpp"
#include "names/rootfs_source.hpp"
#include "run/prepare.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

namespace {

std::string limits_text(const config::SandboxLimits& l) {
    std::string s;
    auto add = [&](const char* k, const std::string& v) { s += (s.empty() ? "" : " ") + std::string(k) + "=" + v; };
    if (l.memory_bytes) add("memory", format_size(*l.memory_bytes));
    if (l.pids) add("pids", std::to_string(*l.pids));
    if (l.cpus) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", *l.cpus);
        add("cpus", buf);
    }
    if (l.timeout) add("timeout", format_duration(*l.timeout));
    if (l.tmp_bytes) add("tmp_size", format_size(*l.tmp_bytes));
    if (l.scratch_bytes) add("scratch_size", format_size(*l.scratch_bytes));
    return s.empty() ? "(none)" : s;
}

// The rules a grant's policy sets, comma-separated ("none" for a policy
// table that sets none).
std::string policy_text(const config::GrantPolicy& p) {
    std::string s;
    auto add = [&](const std::string& item) { s += (s.empty() ? "" : ",") + item; };
    auto list = [](const std::vector<std::string>& items) {
        std::string out;
        for (const auto& i : items) out += (out.empty() ? "" : "|") + i;
        return out;
    };
    if (!p.models.empty()) add("models=" + list(p.models));
    if (p.max_output_tokens) add("max_output_tokens=" + std::to_string(*p.max_output_tokens));
    if (!p.server_tools) add("no_server_tools");
    if (!p.mcp_servers) add("no_mcp_servers");
    if (!p.url_sources) add("no_url_sources");
    if (!p.context_management) add("no_context_management");
    if (p.anthropic_betas) add("anthropic_betas=" + (p.anthropic_betas->empty() ? "(none)" : list(*p.anthropic_betas)));
    return s.empty() ? "none" : s;
}

std::string grant_text(const config::Grant& g, const config::GatewayConfig& gw) {
    std::string s = g.host.text() + ":" + std::to_string(g.port) + " " + std::string(config::to_string(g.mode));
    if (!g.credential.empty()) s += " credential=" + g.credential;
    if (!g.routes.empty()) {
        s += " routes=";
        for (std::size_t i = 0; i < g.routes.size(); ++i) s += (i ? "," : "") + g.routes[i].text;
    }
    if (!g.connect_to.empty()) s += " connect_to=" + g.connect_to;
    if (g.allow_private) s += " allow_private";
    if (!g.policy.where.empty()) s += " policy=" + policy_text(g.policy);
    // The header templates it injects (the credential's, or the grant's own
    // when the credential has no template): what the upstream will see.
    if (auto c = gw.credentials.find(g.credential); !g.credential.empty() && c != gw.credentials.end()) {
        s += " injects=";
        const auto spec = config::credential_for_grant(c->second, g);
        for (std::size_t i = 0; i < spec.headers.size(); ++i)
            s += (i ? "," : "") + spec.headers[i].first + ": " + spec.headers[i].second;
    }
    s += "  [" + g.where + "]";
    return s;
}

using nlohmann::json;

// One config Diagnostic as --json shows it: its fields, and the line the text
// output prints as "detail".
json diagnostic_json(const config::Diagnostic& d, const char* status) {
    return json{{"name", d.key.empty() ? std::string("file") : d.key},
                {"status", status},
                {"detail", d.text()},
                {"file", d.file},
                {"line", d.line},
                {"key", d.key},
                {"got", d.got},
                {"allowed", d.allowed},
                {"message", d.message},
                {"worker", d.worker}};
}

// A problem found about a worker beyond the files (a missing credential, a
// missing CLI): no file position.
json problem_json(const std::string& name, const std::string& worker, const std::string& detail) {
    return json{{"name", name}, {"status", "error"}, {"detail", detail}, {"file", ""}, {"line", 0}, {"key", ""},
                {"got", ""}, {"allowed", ""}, {"message", detail}, {"worker", worker}};
}

// One MCP server as validate shows it: its transport and what it runs or
// reaches (never an environment value), and where it is defined.
std::string mcp_server_text(const mcp::Server& s) {
    std::string t = s.name + ": ";
    if (const auto* stdio = std::get_if<mcp::StdioServer>(&s.transport)) {
        t += "stdio " + terminal_text(stdio->argv.empty() ? std::string() : stdio->argv[0]);
        if (!stdio->secret_env.empty()) {
            t += " secret_env=";
            std::size_t i = 0;
            for (const auto& [var, cred] : stdio->secret_env) t += (i++ ? "," : "") + var + "<-" + cred;
        }
    } else {
        const auto& http = std::get<mcp::HttpServer>(s.transport);
        t += "http " + http.url;
        if (!http.credential.empty()) t += " credential=" + http.credential;
        if (!http.connect_to.empty()) t += " connect_to=" + http.connect_to;
    }
    if (s.allow_server_requests) t += " allow_server_requests";
    return t + "  [" + s.where + "]";
}

json mcp_json(const mcp::ToolsConfig& tools) {
    json servers = json::array();
    for (const auto& [name, s] : tools.servers) {
        const bool stdio = std::holds_alternative<mcp::StdioServer>(s.transport);
        servers.push_back(json{{"name", name}, {"transport", stdio ? "stdio" : "http"}, {"where", s.where},
                               {"text", mcp_server_text(s)}});
    }
    return json{{"servers", servers}, {"rules", tools.policy.rules.size()}, {"pins", tools.pins.size()},
                {"log_arguments", tools.log_arguments}};
}

json limits_json(const config::SandboxLimits& l) {
    json j = json::object();
    if (l.memory_bytes) j["memory_bytes"] = *l.memory_bytes;
    if (l.pids) j["pids"] = *l.pids;
    if (l.cpus) j["cpus"] = *l.cpus;
    if (l.timeout) j["timeout_ms"] = l.timeout->count();
    if (l.tmp_bytes) j["tmp_bytes"] = *l.tmp_bytes;
    if (l.scratch_bytes) j["scratch_bytes"] = *l.scratch_bytes;
    return j;
}

}  // namespace

namespace {

// The report as it is made: text on stdout as it goes, or (--json) one
// object on stdout at the end; problems and warnings on stderr either way.
class ValidateReport {
public:
    ValidateReport(const ValidateArgs& args, const config::OrgConfig& org) : args_(args), org_(org) {
        report_ = json{{"config", args.dir}, {"diagnostics", json::array()}, {"workers", json::array()}, {"daemon", nullptr}};
    }

    template <typename... Args>
    void say(const char* fmt, Args... args) {
        if (args_.as_json) return;
        if constexpr (sizeof...(args) == 0) std::fputs(fmt, stdout);
        else std::fprintf(stdout, fmt, args...);
    }
    json& report() { return report_; }
    std::vector<std::string>& problems() { return problems_; }

    int finish(int status) {
        if (args_.as_json) {
            report_["ok"] = status == 0;
            report_["exit_status"] = status;
            std::printf("%s\n", report_.dump(2).c_str());
        }
        return status;
    }

    void worker(const std::string& name);
    void daemon();

private:
    // A warning about a worker: in the text, on stderr and in --json's diagnostics.
    void warn(const char* key, const std::string& worker, const std::string& why, const std::string& stderr_line);
    void agent_of(const std::string& name, const config::ResolvedWorker& w, agents::CredentialMode mode, json& wj,
                  std::vector<std::string>& own_problems);
    void settings_of(const config::ResolvedWorker& w, const std::vector<config::Grant>& implied, json& wj);
    void tools_of(const config::ResolvedWorker& w, json& wj);
    void credential_of(const std::string& name, const config::ResolvedWorker& w, const config::CredentialStatus& status,
                       json& wj, std::vector<std::string>& own_problems);

    const ValidateArgs& args_;
    const config::OrgConfig& org_;
    json report_;
    std::vector<std::string> problems_;
};

void ValidateReport::warn(const char* key, const std::string& worker, const std::string& why,
                          const std::string& stderr_line) {
    say("  warning:    %s\n", why.c_str());
    std::fprintf(stderr, "warning: %s\n", stderr_line.c_str());
    json d = problem_json(key, worker, why);
    d["status"] = "warning";
    report_["diagnostics"].push_back(d);
}

// The CLI as a run of this worker would find it: in the worker's rootfs (the
// same check `corral run` makes before anything starts), and its installed
// version next to the pinned one.
void ValidateReport::agent_of(const std::string& name, const config::ResolvedWorker& w, agents::CredentialMode mode,
                              json& wj, std::vector<std::string>& own_problems) {
    agents::AgentInputs in;
    in.run_id = "validate";
    in.worker = name;
    in.credential = mode;
    auto profile = agents::make_agent_profile(w.agent, in);
    auto cli_missing = agents::cli_missing_in_rootfs(profile, w.rootfs, in.agents_prefix);
    const bool host = std::holds_alternative<names::HostRootfs>(w.rootfs);
    const std::string rootfs = names::to_string(w.rootfs);
    std::string installed_text, cli_note;
    std::optional<std::string> installed_version;
    if (cli_missing) {
        installed_text = "NOT FOUND";
        own_problems.push_back("worker '" + name + "': " + *cli_missing);
    } else {
        auto installed = agents::installed_cli_version(profile, in.agents_prefix, host ? "/" : rootfs);
        installed_version = installed.version;
        installed_text = installed.version ? *installed.version : "unknown";
        cli_note = agents::cli_version_note(profile, installed);
    }
    say("  agent:      %s (%s), CLI pinned %s, installed %s (%s)\n", std::string(config::to_string(w.agent)).c_str(),
        w.agent_source.c_str(), agents::pinned_cli_version(w.agent), installed_text.c_str(),
        host ? "on this host" : ("in the image " + rootfs).c_str());
    wj["agent"] = json{{"kind", std::string(config::to_string(w.agent))}, {"source", w.agent_source},
                       {"cli_pinned", agents::pinned_cli_version(w.agent)}, {"cli_found", !cli_missing},
                       {"cli_installed", installed_version ? json(*installed_version) : json(nullptr)},
                       {"cli_note", cli_note}};
    if (!cli_note.empty()) warn("agent.cli_version", name, cli_note, "worker " + name + ": " + cli_note);
    if (w.agent == config::AgentKind::codex)
        say("  auth mode:  %s\n", mode == agents::CredentialMode::oauth ? "chatgpt" : "apikey");
}

// Model, rootfs, limits, env names, channels and the grants a run of it gets.
void ValidateReport::settings_of(const config::ResolvedWorker& w, const std::vector<config::Grant>& implied, json& wj) {
    say("  model:      %s\n", w.model.empty() ? "(the CLI's default)" : w.model.c_str());
    say("  rootfs:     %s\n", names::to_string(w.rootfs).c_str());
    say("  limits:     %s\n", limits_text(w.limits).c_str());
    std::string env_names;
    for (const auto& [k, v] : w.env) {
        env_names += (env_names.empty() ? "" : " ") + k;
        wj["env"].push_back(k);
    }
    say("  env:        %s\n", env_names.empty() ? "(none)" : env_names.c_str());
    say("  channels:   %s\n", w.has_channels ? "yes (sessions run pi)" : "no");
    say("  grants:\n");
    for (const auto& g : agents::worker_grants(w, implied)) {
        say("    %s\n", grant_text(g, org_.gateway).c_str());
        wj["grants"].push_back(json{{"host", g.host.text()}, {"port", g.port}, {"mode", std::string(config::to_string(g.mode))},
                                    {"credential", g.credential}, {"where", g.where}, {"text", grant_text(g, org_.gateway)}});
    }
    for (const auto& g : implied)
        for (const auto& c : w.grants)
            if (c.host == g.host && c.port == g.port)
                say("    (the grant implied by the agent for %s:%u is replaced by the one at %s)\n", g.host.text().c_str(),
                    static_cast<unsigned>(g.port), c.where.c_str());
}

// The worker's MCP servers, rules and pins; nothing at all (text and JSON
// alike) for a worker without any.
void ValidateReport::tools_of(const config::ResolvedWorker& w, json& wj) {
    const auto& t = w.tools;
    if (t.servers.empty() && t.policy.rules.empty() && t.pins.empty()) return;
    say("  mcp:        %zu server(s), %zu rule(s), %zu pin(s)%s\n", t.servers.size(), t.policy.rules.size(),
        t.pins.size(), t.log_arguments ? ", log_arguments" : "");
    for (const auto& [name, s] : t.servers) say("    %s\n", mcp_server_text(s).c_str());
    wj["mcp"] = mcp_json(t);
    // What a run of it would refuse (run::mcp_not_served), with the run's
    // embedded gateway (tool_calls_per_worker) and relayed to the daemon (a
    // stdio server).
    std::vector<std::string> refused;
    for (const auto& why : run::mcp_not_served(w.name, t, false)) refused.push_back("corral run: " + why);
    for (const auto& why : run::mcp_not_served(w.name, t, true))
        refused.push_back("corral run --gateway unix:PATH: " + why);
    for (const auto& why : refused) warn("mcp.servers", w.name, why, why);
}

// The credential the worker's agent needs: defined, and (unless
// --skip-secrets) available now.
void ValidateReport::credential_of(const std::string& name, const config::ResolvedWorker& w,
                                   const config::CredentialStatus& status, json& wj,
                                   std::vector<std::string>& own_problems) {
    const auto required = agents::required_credential(w.agent);
    std::string state;
    if (!status.defined) state = "NOT DEFINED";
    else if (args_.skip_secrets) state = "defined (secret not checked)";
    else state = status.available ? "available" : "NOT AVAILABLE";
    say("  credential: %s (%s%s%s): %s\n", required.name.c_str(),
        status.defined ? std::string(config::to_string(status.kind)).c_str() : "-", status.defined ? ", " : "",
        status.source.c_str(), state.c_str());
    wj["credential"] = json{{"name", required.name}, {"defined", status.defined},
                            {"kind", status.defined ? json(std::string(config::to_string(status.kind))) : json(nullptr)},
                            {"source", status.source}, {"state", state}};
    bool missing = !status.defined || (!args_.skip_secrets && !status.available);
    if (missing) own_problems.push_back(agents::missing_credential_message(name, w.agent, status));
}

void ValidateReport::worker(const std::string& name) {
    config::ResolvedWorker w = config::resolve_worker(org_, name);
    json wj{{"name", name}, {"egress_only", w.egress_only}, {"model", w.model}, {"rootfs", names::to_string(w.rootfs)},
            {"limits", limits_json(w.limits)}, {"env", json::array()}, {"grants", json::array()},
            {"channels", w.has_channels}, {"agent", nullptr}, {"credential", nullptr}};
    std::vector<std::string> own_problems;
    say("\nworker %s\n", name.c_str());
    if (w.egress_only) {
        say("  agent:      none (%s): egress only, for `corral run --config %s --worker %s -- CMD`\n",
            w.agent_source.c_str(), org_.dir.c_str(), name.c_str());
        wj["agent"] = json{{"kind", "none"}, {"source", w.agent_source}};
    }
    config::CredentialStatus status;
    std::vector<config::Grant> implied;
    if (!w.egress_only) {
        status = config::credential_status(org_.gateway, agents::required_credential(w.agent).name);
        const auto mode = status.defined ? agents::credential_mode_for(status.kind) : agents::CredentialMode::api_key;
        agent_of(name, w, mode, wj, own_problems);
        implied = agents::implied_grants(w.agent, mode, name);
    }
    settings_of(w, implied, wj);
    tools_of(w, wj);
    if (w.metering.worker.any()) {
        // A run without --gateway is refused (run/egress.cpp): say so before one is tried.
        const std::string why = "corral run: " + run::worker_budget_refusal(name);
        warn("budget.worker", name, why, why);
    }
    if (!w.egress_only) credential_of(name, w, status, wj, own_problems);
    for (const auto& d : w.warnings) say("  warning:    %s\n", d.text().c_str());
    wj["status"] = own_problems.empty() ? "ok" : "error";
    for (const auto& p : own_problems) {
        report_["diagnostics"].push_back(
            problem_json(p.find("credential") != std::string::npos ? "credential" : "agent.cli", name, p));
        problems_.push_back(p);
    }
    report_["workers"].push_back(wj);
}

// What the shared daemon would serve from this organisation.
void ValidateReport::daemon() {
    try {
        auto plan = agents::org_gateway_config(org_, args_.skip_secrets
                                                         ? std::map<std::string, config::CredentialStatus>{}
                                                         : agents::agent_credential_status(org_));
        say("\ndaemon (corral gateway --org %s): unix:%s, %zu grant(s): org.toml's %zu, then each "
            "worker's own, for that worker's runs only\n",
            org_.dir.c_str(), plan.config.gateway.listen_unix.c_str(), plan.config.grants.size(),
            org_.gateway.grants.size());
        report_["daemon"] = json{{"status", "ok"}, {"listen_unix", plan.config.gateway.listen_unix},
                                 {"grants", plan.config.grants.size()}, {"org_grants", org_.gateway.grants.size()}};
    } catch (const config::ConfigError& e) {
        say("\ndaemon (corral gateway --org %s): cannot start: %s\n", org_.dir.c_str(), e.what());
        report_["daemon"] = json{{"status", "cannot start"}, {"detail", e.what()}};
    }
}

// The organisation's own errors and warnings; false when it has errors.
bool report_org_check(const config::OrgCheck& check, ValidateReport& r) {
    for (const auto& w : check.warnings) {
        std::fprintf(stderr, "warning: %s\n", w.text().c_str());
        r.report()["diagnostics"].push_back(diagnostic_json(w, "warning"));
    }
    for (const auto& e : check.errors) {
        std::fprintf(stderr, "corral validate: %s\n", e.text().c_str());
        r.report()["diagnostics"].push_back(diagnostic_json(e, "error"));
    }
    return check.errors.empty();
}

}  // namespace

int cmd_validate(int argc, char** argv) {
    std::optional<ValidateArgs> args;
    try {
        args = parse_validate_args(argc, argv);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "corral validate: %s\n%s", e.what(), validate_help().c_str());
        return 2;
    }
    if (args->help) return std::fputs(validate_help().c_str(), stdout), 0;
    const config::OrgCheck check = config::check_org(args->dir);
    const config::OrgConfig& org = check.org;
    ValidateReport r(*args, org);
    if (!report_org_check(check, r)) return r.finish(2);
    if (!args->only.empty() && !org.workers.count(args->only)) {
        // resolve_worker words the error (names the known workers).
        try {
            config::resolve_worker(org, args->only);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "corral validate: %s\n", e.what());
            r.report()["diagnostics"].push_back(problem_json("worker", args->only, e.what()));
        }
        return r.finish(2);
    }
    r.report()["organisation"] = org.dir;
    r.say("organisation %s\n", org.dir.c_str());
    r.say("  gateway: %zu grant(s), %zu credential(s)\n", org.gateway.grants.size(), org.gateway.credentials.size());
    if (org.workers.empty()) r.say("  no workers (add %s/workers/NAME/worker.toml)\n", org.dir.c_str());
    for (const auto& [name, wc] : org.workers)
        if (args->only.empty() || name == args->only) r.worker(name);
    if (args->only.empty()) r.daemon();
    for (const auto& p : r.problems()) std::fprintf(stderr, "corral validate: %s\n", p.c_str());
    return r.finish(r.problems().empty() ? 0 : 2);
}

}  // namespace corral::cli
