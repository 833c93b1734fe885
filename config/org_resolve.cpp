// Resolution: a worker as a run sees it (worker.toml → org.toml → built-in
// default), and the rules both the schema and the run apply to a worker.
#include "config/org_config.hpp"
#include "names/identity.hpp"


#include <algorithm>
#include <cctype>

#include "config/checker.hpp"
#include "config/mcp_config.hpp"

namespace corral::config {

std::string_view to_string(AgentKind k) {
    switch (k) {
    case AgentKind::pi: return "pi";
    case AgentKind::claude: return "claude";
    case AgentKind::codex: return "codex";
    }
    return "?";
}

std::optional<AgentKind> parse_agent_kind(std::string_view text) {
    if (text == "pi") return AgentKind::pi;
    if (text == "claude") return AgentKind::claude;
    if (text == "codex") return AgentKind::codex;
    return std::nullopt;
}

SandboxLimits overlay_limits(const SandboxLimits& base, const SandboxLimits& over) {
    SandboxLimits r = base;
    if (over.memory_bytes) r.memory_bytes = over.memory_bytes;
    if (over.pids) r.pids = over.pids;
    if (over.cpus) r.cpus = over.cpus;
    if (over.timeout) r.timeout = over.timeout;
    if (over.tmp_bytes) r.tmp_bytes = over.tmp_bytes;
    if (over.scratch_bytes) r.scratch_bytes = over.scratch_bytes;
    return r;
}

bool grant_applies_to_worker(const Grant& g, const std::string& worker) {
    if (g.identities.empty()) return true;
    for (const auto& pattern : g.identities)
        if (names::identity_pattern_may_match_worker(pattern, worker)) return true;
    return false;
}

ResolvedWorker resolve_worker(const OrgConfig& org, const std::string& name) {
    auto it = org.workers.find(name);
    if (it == org.workers.end()) {
        std::vector<std::string> known;
        for (const auto& [n, w] : org.workers) known.push_back(n);
        throw UsageError("no worker " + quote(name) + " in " + org.dir + "/workers, allowed: " +
                         (known.empty() ? std::string("(none defined)") : join(known, " | ")));
    }
    const WorkerConfig& w = it->second;
    ResolvedWorker r;
    r.name = name;
    if (w.egress_only) {
        r.egress_only = true;
        r.agent_source = w.agent_where;
    } else if (w.agent) {
        r.agent = *w.agent;
        r.agent_source = w.agent_where;
    } else if (org.engine.agent) {
        r.agent = *org.engine.agent;
        r.agent_source = org.engine.agent_where + " [engine]";
    } else {
        r.agent = AgentKind::pi;
        r.agent_source = "built-in default";
    }
    r.model = w.model.empty() ? org.engine.model : w.model;
    r.chatgpt_account_id = org.engine.chatgpt_account_id;
    r.rootfs = w.rootfs.value_or(org.rootfs);
    r.review = w.review;
    r.capture = w.capture ? w.capture : org.capture;
    r.limits = overlay_limits(org.limits, w.limits);
    for (const auto& g : org.gateway.grants)
        if (grant_applies_to_worker(g, name)) r.grants.push_back(g);
    r.grants.insert(r.grants.end(), w.grants.begin(), w.grants.end());
    r.env = w.env;
    r.metering = resolve_metering(org.budget, org.prices, w.budget, w.prices);
    r.tools = merge_tools(org.tools, w.tools);
    r.has_channels = w.channels.has_value();
    for (const auto& d : org.warnings)
        if (d.worker == name) r.warnings.push_back(d);
    return r;
}

}  // namespace corral::config
