// corral validate --config DIR [--worker NAME] [--skip-secrets]
//
// Reads an organisation directory (org.toml + workers/NAME/worker.toml),
// prints every worker as a run would see it — agent, rootfs, limits, grants
// (the ones the agent implies included), the credential it needs and whether
// that credential is available — and the warnings. Exit 0 when every worker
// could start; 2 with one "FILE:LINE: key '...': ..." line per problem otherwise.
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "base/parse.hpp"
#include "config/org_config.hpp"
#include "agents/agent_profile.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

namespace {

const char* const validate_usage =
    "usage: corral validate --config DIR [--worker NAME] [--skip-secrets]\n"
    "  --config DIR     organisation directory: DIR/org.toml and DIR/workers/NAME/worker.toml\n"
    "  --worker NAME    show only this worker\n"
    "  --skip-secrets   check that needed credentials are defined, not that their secrets are readable here\n";

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

}  // namespace

int cmd_validate(int argc, char** argv) {
    std::string dir, only;
    bool skip_secrets = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        bool takes_value = a == "--config" || a == "--worker";
        if (takes_value && i + 1 >= argc) {
            std::fprintf(stderr, "corral validate: %s needs a value\n%s", a.c_str(), validate_usage);
            return 2;
        }
        if (a == "--config") dir = argv[++i];
        else if (a.rfind("--config=", 0) == 0) dir = a.substr(9);
        else if (a == "--worker") only = argv[++i];
        else if (a.rfind("--worker=", 0) == 0) only = a.substr(9);
        else if (a == "--skip-secrets") skip_secrets = true;
        else if (a == "--help" || a == "-h") {
            std::fputs(validate_usage, stdout);
            return 0;
        } else {
            std::fprintf(stderr, "corral validate: unknown option '%s'\n%s", a.c_str(), validate_usage);
            return 2;
        }
    }
    if (dir.empty()) {
        std::fprintf(stderr, "corral validate: --config DIR is required\n%s", validate_usage);
        return 2;
    }

    config::OrgCheck check = config::check_org(dir);
    for (const auto& w : check.warnings) std::fprintf(stderr, "warning: %s\n", w.text().c_str());
    if (!check.errors.empty()) {
        for (const auto& e : check.errors) std::fprintf(stderr, "corral validate: %s\n", e.text().c_str());
        return 2;
    }
    const config::OrgConfig& org = check.org;
    if (!only.empty() && !org.workers.count(only)) {
        // resolve_worker words the error (names the known workers).
        try {
            config::resolve_worker(org, only);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "corral validate: %s\n", e.what());
        }
        return 2;
    }

    std::printf("organisation %s\n", org.dir.c_str());
    std::printf("  gateway: %zu grant(s), %zu credential(s)\n", org.gateway.grants.size(),
                org.gateway.credentials.size());
    if (org.workers.empty()) std::printf("  no workers (add %s/workers/NAME/worker.toml)\n", org.dir.c_str());

    std::vector<std::string> problems;
    for (const auto& [name, wc] : org.workers) {
        if (!only.empty() && name != only) continue;
        config::ResolvedWorker w = config::resolve_worker(org, name);
        auto required = agents::required_credential(w.agent);
        config::CredentialStatus status = config::credential_status(org.gateway, required.name);
        auto mode = status.defined ? agents::credential_mode_for(status.kind) : agents::CredentialMode::api_key;

        // The CLI as a run of this worker would find it: in the worker's
        // rootfs (the same check `corral run` makes before anything starts),
        // and its installed version next to the pinned one.
        agents::AgentInputs in;
        in.run_id = "validate";
        in.worker = name;
        in.credential = mode;
        auto profile = agents::make_agent_profile(w.agent, in);
        auto cli_missing = agents::cli_missing_in_rootfs(profile, w.rootfs, in.agents_prefix);
        std::string installed_text, cli_note;
        if (cli_missing) {
            installed_text = "NOT FOUND";
            problems.push_back("worker '" + name + "': " + *cli_missing);
        } else {
            auto installed =
                agents::installed_cli_version(profile, in.agents_prefix, w.rootfs == "host" ? "/" : w.rootfs);
            installed_text = installed.version ? *installed.version : "unknown";
            cli_note = agents::cli_version_note(profile, installed);
        }
        std::printf("\nworker %s\n", name.c_str());
        std::printf("  agent:      %s (%s), CLI pinned %s, installed %s (%s)\n",
                    std::string(config::to_string(w.agent)).c_str(), w.agent_source.c_str(),
                    agents::pinned_cli_version(w.agent), installed_text.c_str(),
                    w.rootfs == "host" ? "on this host" : ("in the image " + w.rootfs).c_str());
        if (!cli_note.empty()) {
            std::printf("  warning:    %s\n", cli_note.c_str());
            std::fprintf(stderr, "warning: worker %s: %s\n", name.c_str(), cli_note.c_str());
        }
        if (w.agent == config::AgentKind::codex)
            std::printf("  auth mode:  %s\n", mode == agents::CredentialMode::oauth ? "chatgpt" : "apikey");
        std::printf("  model:      %s\n", w.model.empty() ? "(the CLI's default)" : w.model.c_str());
        std::printf("  rootfs:     %s\n", w.rootfs.c_str());
        std::printf("  limits:     %s\n", limits_text(w.limits).c_str());
        std::string env_names;
        for (const auto& [k, v] : w.env) env_names += (env_names.empty() ? "" : " ") + k;
        std::printf("  env:        %s\n", env_names.empty() ? "(none)" : env_names.c_str());
        std::printf("  channels:   %s\n", w.has_channels ? "yes (sessions run pi)" : "no");
        std::printf("  grants:\n");
        auto implied = agents::implied_grants(w.agent, mode, name);
        for (const auto& g : agents::worker_grants(w, implied)) std::printf("    %s\n", grant_text(g, org.gateway).c_str());
        for (const auto& g : implied) {
            for (const auto& c : w.grants)
                if (c.host == g.host && c.port == g.port)
                    std::printf("    (the grant implied by the agent for %s:%u is replaced by the one at %s)\n",
                                g.host.text().c_str(), static_cast<unsigned>(g.port), c.where.c_str());
        }

        std::string state;
        if (!status.defined) state = "NOT DEFINED";
        else if (skip_secrets) state = "defined (secret not checked)";
        else state = status.available ? "available" : "NOT AVAILABLE";
        std::printf("  credential: %s (%s%s%s): %s\n", required.name.c_str(),
                    status.defined ? std::string(config::to_string(status.kind)).c_str() : "-",
                    status.defined ? ", " : "", status.source.c_str(), state.c_str());
        bool missing = !status.defined || (!skip_secrets && !status.available);
        if (missing) problems.push_back(agents::missing_credential_message(name, w.agent, status));
        for (const auto& d : w.warnings) std::printf("  warning:    %s\n", d.text().c_str());
    }
    if (only.empty()) {
        // What the shared daemon would serve from this organisation.
        try {
            auto plan = agents::org_gateway_config(
                org, skip_secrets ? std::map<std::string, config::CredentialStatus>{}
                                  : agents::agent_credential_status(org));
            std::printf("\ndaemon (corral gateway --org %s): unix:%s, %zu grant(s): org.toml's %zu, then each "
                        "worker's own, for that worker's runs only\n",
                        org.dir.c_str(), plan.config.gateway.listen_unix.c_str(), plan.config.grants.size(),
                        org.gateway.grants.size());
        } catch (const config::ConfigError& e) {
            std::printf("\ndaemon (corral gateway --org %s): cannot start: %s\n", org.dir.c_str(), e.what());
        }
    }
    for (const auto& p : problems) std::fprintf(stderr, "corral validate: %s\n", p.c_str());
    return problems.empty() ? 0 : 2;
}

}  // namespace corral::cli
