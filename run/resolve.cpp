#include "run/resolve.hpp"

#include <algorithm>
#include <filesystem>

#include "agents/agent_profile.hpp"
#include "base/sys_error.hpp"
#include "gateway/identity.hpp"
#include "names/box_environment.hpp"

namespace corral::run {

namespace {

std::string absolute(const std::string& path) {
    return std::filesystem::absolute(path).lexically_normal().string();
}

}  // namespace

names::RootfsSource requested_rootfs(const RunRequest& r, const std::optional<config::ResolvedWorker>& w) {
    if (r.rootfs) return *r.rootfs;
    if (w) return w->rootfs;
    return names::HostRootfs{};
}

bool reviewed_workspace(const RunRequest& r, const std::optional<config::ResolvedWorker>& w) {
    return r.workspace && (r.review || (w && w->review));
}

namespace {

// image:NAME: its layers under the overlay, its Env under corral's, its
// WorkingDir as the start (the workspace wins), its Entrypoint + Cmd as the
// command when none is given; what it asks and corral does not do is said.
void apply_image(const RunRequest& r, const RunInputs& in, RunPlan& plan) {
    const image::StoredImage& im = *in.image;
    auto& spec = plan.spec;
    spec.rootfs.image_layers = in.image_layer_dirs;
    for (const auto& e : im.config.env) {
        auto eq = e.find('=');
        spec.image_env.emplace_back(e.substr(0, eq), eq == std::string::npos ? std::string() : e.substr(eq + 1));
    }
    if (!r.workspace && !im.config.working_dir.empty()) {
        spec.cwd = std::filesystem::path(im.config.working_dir).lexically_normal().string();
        if (spec.cwd.size() > 1 && spec.cwd.back() == '/') spec.cwd.pop_back();
        spec.rootfs.image_working_dir = spec.cwd == "/" ? std::string() : spec.cwd;
    }
    if (spec.argv.empty() && !r.agent() && !r.session) {
        spec.argv = im.config.entrypoint;
        spec.argv.insert(spec.argv.end(), im.config.cmd.begin(), im.config.cmd.end());
        if (spec.argv.empty())
            throw UsageError("--rootfs image:" + im.name + ": the image has no Entrypoint or Cmd; give the command: "
                             "`corral run --rootfs image:" + im.name + " -- CMD [ARGS...]`");
    }
    for (const auto& n : im.config.ignored) plan.notes.push_back("image " + im.name + ": " + n);
}

// Each limit: --memory/--pids/--cpus/--timeout, else the worker's [sandbox]
// (which already holds org.toml's where worker.toml sets nothing), else none.
void resolve_limits(const RunRequest& r, const std::optional<config::ResolvedWorker>& w, supervisor::SandboxSpec& spec) {
    config::SandboxLimits from_worker = w ? w->limits : config::SandboxLimits{};
    spec.limits.memory_bytes = r.memory_bytes ? r.memory_bytes : from_worker.memory_bytes;
    spec.limits.pids = r.pids ? r.pids : from_worker.pids;
    spec.limits.cpus = r.cpus ? r.cpus : from_worker.cpus;
    spec.timeout = r.timeout ? r.timeout : from_worker.timeout;
    if (auto tmp = r.tmp_bytes ? r.tmp_bytes : from_worker.tmp_bytes) spec.rootfs.tmp_size_bytes = *tmp;
    if (auto scratch = r.scratch_bytes ? r.scratch_bytes : from_worker.scratch_bytes)
        spec.rootfs.scratch_size_bytes = *scratch;
}

// --allow HOST[:PORT]: a tunnel grant each, after the organisation's. A grant
// the organisation already has for the same host and port is kept as it is
// (it may inject, or be scoped): the command line only adds.
void add_allowed_hosts(const RunRequest& r, config::GatewayConfig& gw) {
    for (const auto& a : r.allow) {
        bool known = std::any_of(gw.grants.begin(), gw.grants.end(),
                                 [&](const config::Grant& g) { return g.host == a.host && g.port == a.port; });
        if (known) continue;
        config::Grant g;
        g.host = a.host;
        g.port = a.port;
        g.mode = config::GrantMode::tunnel;
        // An address typed on the command line is that address, by consent:
        // the same as a grant's allow_private for it. A name must still
        // resolve to public addresses only.
        auto literal = a.host.is_wildcard() ? names::HostCheck{} : names::normalize_host(a.host.text());
        g.allow_private = literal.host && literal.host->is_ip_literal();
        g.index = gw.grants.size();
        g.where = "--allow " + a.text;
        gw.grants.push_back(std::move(g));
    }
}

// The embedded gateway's grants: the worker's (org + worker.toml) and, when
// its agent's credential is available, the agent's model grants.
void resolve_gateway(const RunRequest& r, const RunInputs& in, RunPlan& plan) {
    if (in.org && in.worker) {
        const config::ResolvedWorker& w = *in.worker;
        const auto& cred = in.agent_credential;
        std::vector<config::Grant> implied;
        if (w.egress_only)
            ;  // no agent, no model grants: only the organisation's and the worker's own
        else if (cred.available)
            implied = agents::implied_grants(w.agent, agents::credential_mode_for(cred.kind), w.name);
        else
            plan.left_out = "worker " + w.name + ": credential '" + agents::required_credential(w.agent).name +
                            "' not available (" + cred.problem + "); the agent's model grants are left out of this run";
        plan.gateway = agents::run_gateway_config(*in.org, w, implied);
        // The worker's MCP servers and their policy, served by the embedded
        // gateway on the box's MCP listener (a daemon run is refused with
        // them: check_run_can_start).
        plan.gateway.tools = w.tools;
    } else {
        plan.gateway.gateway.state_dir = in.state_dir;
    }
    add_allowed_hosts(r, plan.gateway);
    plan.gateway.gateway.ask_unlisted = r.ask;
    plan.proxy_variables = !r.capture_only;
    // Transparent capture (docs/capture.md): on by default when the run has
    // grants (it reaches nothing they do not: every captured connection is
    // the gateway's CONNECT check), off without (nothing would resolve); on
    // with --ask (an unlisted name's connection is asked, as its CONNECT is);
    // with a daemon, whose grants are not known here, on (the stub asks the
    // daemon which names are granted: CORRAL-GRANTED).
    std::optional<bool> asked = r.capture ? r.capture : (in.worker ? in.worker->capture : std::nullopt);
    plan.spec.capture = asked.value_or(r.gateway.has_value() || r.ask || !plan.gateway.grants.empty());
    if (r.gateway) {
        plan.daemon_socket = *r.gateway;
        plan.intercepts = true;  // a daemon's grants are unknown here: assume it intercepts
        return;
    }
    // The embedded gateway's ledger is the run's own: one file per run in
    // the run dir, next to run.json (a shared ledger is the daemon's job).
    plan.gateway.gateway.ledger = in.run_dir + "/ledger.jsonl";
    // Only the credentials this run's grants and MCP servers use are loaded
    // (an unrelated unreadable credential must not stop the run).
    config::keep_used_credentials(plan.gateway);
    // Only an inject grant makes the gateway speak TLS to the box with
    // corral's CA; without one the box's trust store stays the image's and
    // the CA is not even loaded (a plain `corral run` has no grants).
    plan.intercepts = std::any_of(plan.gateway.grants.begin(), plan.gateway.grants.end(),
                                  [](const config::Grant& g) { return g.mode == config::GrantMode::inject; });
}

// The run's identity, worker/run id; both parts of [A-Za-z0-9._-] or refused.
gateway::Identity run_identity(const std::string& worker, const std::string& run_id) {
    auto identity = gateway::parse_identity(worker + "/" + run_id);
    if (!identity)
        throw UsageError("identity " + worker + "/" + run_id + ": worker and run id must be made of [A-Za-z0-9._-]");
    return *identity;
}

}  // namespace

RunPlan resolve_run(const RunRequest& r, const RunInputs& in) {
    RunPlan plan;
    if (in.worker) plan.worker = in.worker->name;
    else if (r.worker) plan.worker = *r.worker;
    plan.identity = run_identity(plan.worker, in.run_id);
    if (r.agent() && in.worker && in.worker->egress_only)
        throw UsageError("worker " + in.worker->name + " has no agent (agent = \"none\" at " + in.worker->agent_source +
                         "): run a command with `corral run --config DIR --worker " + in.worker->name +
                         " -- CMD`, or give it an agent to use --prompt");
    plan.agent = requested_agent(r, in.worker);
    plan.builtin_tools = r.agent() && !r.gateway;
    // A session of a worker with an agent runs it on each `corral exec
    // --prompt` when the agent's credential is there; without it the session
    // still runs commands, and says once why a prompt would be refused.
    if (r.session) {
        if (!in.worker) {
            plan.no_session_agent = "the session has no worker (start it with --config DIR --worker NAME)";
        } else if (in.worker->egress_only) {
            plan.no_session_agent = "worker " + in.worker->name + " has no agent";
        } else if (auto msg = agents::missing_credential_message(plan.worker, in.worker->agent, in.agent_credential);
                   !msg.empty()) {
            plan.no_session_agent = msg;
            plan.notes.push_back("corral exec --prompt is refused in this session: " + msg);
        } else {
            plan.agent = in.worker->agent;
        }
    }

    auto& spec = plan.spec;
    spec.run_id = in.run_id;
    plan.state_dir = in.state_dir;
    spec.run_dir = in.run_dir;
    spec.rootfs.source = requested_rootfs(r, in.worker);
    if (r.workspace) spec.rootfs.workspace = absolute(*r.workspace);
    spec.rootfs.review = reviewed_workspace(r, in.worker);
    for (const auto& b : r.binds)
        spec.rootfs.binds.push_back(
            {absolute(b.source), b.target, b.read_only, b.read_only ? "--ro-bind" : "--bind", b.noexec});
    spec.rootfs.tmpfs = r.tmpfs;
    spec.stacked_seccomp = r.stacked_seccomp;
    spec.argv = r.command;  // an agent run's: its CLI's, set by finish_plan
    // A session's box serves invocations; so does an OCI container's (its
    // process is the first, `exec` adds more: oci/runtime/container_control.hpp).
    spec.session = r.session || r.oci_container.has_value();
    spec.hostname = box_hostname(r, in.run_id);
    resolve_limits(r, in.worker, spec);
    spec.uid_range = r.uid_range;
    spec.pass_stdin = r.pass_stdin;
    spec.tty = r.tty;
    if (r.tty) spec.terminal_type = in.terminal_type;
    spec.open_files = r.open_files;
    spec.log_limit_bytes = r.log_limit_bytes;
    if (r.grace) spec.stop_grace = *r.grace;
    if (in.worker)
        for (const auto& kv : in.worker->env) plan.worker_env.emplace_back(kv.first, kv.second);
    plan.cli_env = r.env;
    if (in.image) apply_image(r, in, plan);
    if (r.cwd) {
        spec.cwd = *r.cwd;
        // An image's or a DIR's root may lack it: made in the overlay, as a WorkingDir is.
        if (!std::holds_alternative<names::HostRootfs>(spec.rootfs.source))
            spec.rootfs.image_working_dir = *r.cwd == "/" ? std::string() : *r.cwd;
    }
    if (plan.agent) spec.rootfs.home_dir = in.run_dir + "/home";
    if (r.agent()) spec.stdout_log_name = "stdout.jsonl";  // the CLI's JSON lines, streamed live and kept once

    resolve_gateway(r, in, plan);
    // The workspace may not be, contain or lie in these (checked again on the
    // workspace's one fd by inode, so aliases and renames cannot slip by): the
    // run's own directories, the gateway's CA, and what decides the next
    // run's grants (an agent that could edit worker.toml would grant itself
    // hosts next time).
    spec.rootfs.protected_dirs = {in.state_dir, in.run_dir, "/run/corral", "/proc", "/sys", "/dev",
                                  plan.gateway.gateway.state_dir};
    if (r.config_dir) spec.rootfs.protected_dirs.push_back(absolute(*r.config_dir));
    return plan;
}

std::optional<config::AgentKind> requested_agent(const RunRequest& r, const std::optional<config::ResolvedWorker>& worker) {
    if (worker && (r.agent() || interactive_agent_run(r, worker))) return worker->agent;
    return std::nullopt;
}

bool interactive_agent_run(const RunRequest& r, const std::optional<config::ResolvedWorker>& worker) {
    return r.tty && worker && !worker->egress_only && !r.command.empty() && r.command.front() == config::to_string(worker->agent);
}

std::string box_hostname(const RunRequest& r, const std::string& run_id) {
    return r.hostname.value_or("corral-" + run_id.substr(run_id.size() - std::min<std::size_t>(6, run_id.size())));
}

EnvList compose_environment(const RunPlan& plan, const EnvList& proxy_env) {
    EnvList env;
    for (const auto& kv : proxy_env)
        if (plan.proxy_variables || !names::is_proxy_variable(kv.first)) env.push_back(kv);
    for (const EnvList* layer : {&plan.worker_env, &plan.agent_env, &plan.cli_env})
        env.insert(env.end(), layer->begin(), layer->end());
    return env;
}

void record_requested(supervisor::RunRecord& record, const RunRequest& r, const supervisor::SandboxSpec* spec) {
    record.workspace = r.workspace;
    record.log_limit_bytes = r.log_limit_bytes;
    if (spec == nullptr) {
        record.argv = r.command;
        record.rootfs = names::text_as_given(r.rootfs.value_or(names::HostRootfs{}));
        record.limits = supervisor::CgroupLimits{r.memory_bytes, r.pids, r.cpus};
        record.timeout = r.timeout;
        record.hostname = box_hostname(r, record.id);
        return;
    }
    record.argv = spec->argv;
    record.rootfs = names::to_string(spec->rootfs.source);
    record.hostname = spec->hostname;
    record.limits = spec->limits;
    record.timeout = spec->timeout;
}

}  // namespace corral::run
