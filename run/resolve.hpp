// run/resolve.hpp — one resolution of a run: the request (run/request.hpp),
// the organisation and the worker become the sandbox spec, the gateway's
// configuration and the record's asked-for fields, the same way for every kind
// of run (an agent run and `-- CMD` alike).
//
// Each setting is taken from the first that has it: the command line, then
// the worker's worker.toml, then org.toml, then corral's default.
//
// resolve_run is pure: whatever it needs from the host (the organisation as
// loaded, the credential status the agent's grants depend on, the run's
// directories) the caller found out first and passes in RunInputs. What can
// only be read once the run's egress exists (the trust files, the agent's
// CLI and argv: run/trust.hpp, run/agent_run.hpp) is read by those steps
// without touching the plan; finish_plan (run/final_plan.hpp) then makes the
// final plan, the one launch_sandbox gets, composing the environment once.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/gateway_config.hpp"
#include "config/org_config.hpp"
#include "image/store.hpp"
#include "names/identity.hpp"
#include "run/request.hpp"
#include "supervisor/run_record.hpp"
#include "supervisor/sandbox.hpp"

namespace corral::run {

using EnvList = std::vector<std::pair<std::string, std::string>>;

struct RunInputs {
    std::string run_id;
    std::string run_dir;    // made, real path
    std::string state_dir;  // made, real path
    // With --config: the organisation as loaded and the worker resolved in it.
    std::optional<config::OrgConfig> org;
    std::optional<config::ResolvedWorker> worker;
    // The status of the credential the worker's agent needs, as found now
    // (config::credential_status): its model grants are in the run only when
    // it is available.
    config::CredentialStatus agent_credential;
    // --tty: the box's TERM, from the caller's (supervisor::box_terminal_type).
    std::string terminal_type = "xterm-256color";
    // --rootfs image:NAME (or the worker's rootfs): the image as stored, and
    // its layers' directories, bottom first.
    std::optional<image::StoredImage> image;
    std::vector<std::string> image_layer_dirs;
    // The run's hold on that image, kept as long as the inputs live (the
    // whole run): `corral image rm` refuses a held image.
    std::optional<image::ImageHold> image_hold;
};

// What the box trusts and where its traffic goes (run/trust.hpp).
struct TrustFiles {
    std::vector<rootfs::ExtraFile> files;  // corral's CA, and every bundle with it appended
    EnvList proxy_env;                     // first in the box's environment (compose_environment)
};

struct RunPlan {
    supervisor::SandboxSpec spec;  // env: empty until finish_plan (compose_environment)
    std::string worker = "adhoc";  // run.json's "worker"
    names::Identity identity;      // WORKER/RUN-ID: the gateway's name for the run's traffic
    std::string state_dir;         // the run's state dir (real path): its approvals socket is there
    // An agent run's agent; a session's that can run `corral exec --prompt`.
    std::optional<config::AgentKind> agent;
    // A session without an agent: why `corral exec --prompt` is refused in it.
    std::string no_session_agent;
    // The environment's layers, in the order they are applied (later wins):
    // the worker's [env], then (an agent run) the agent's, then --env.
    EnvList worker_env, cli_env;
    // The gateway this run's box talks to. Embedded: run_gateway_config() (or,
    // without --config, no grants), its ledger in the run dir and only the
    // credentials its grants use. With --gateway the daemon holds the grants:
    // only [gateway] state_dir (where its CA is) is read from it.
    config::GatewayConfig gateway;
    std::optional<std::string> daemon_socket;        // --gateway unix:PATH
    // The box trusts corral's CA (an inject grant, or a daemon whose grants
    // are unknown here); otherwise its own trust store is kept.
    bool intercepts = false;
    // An agent run (--prompt) with the embedded gateway: its agent gets
    // corral's own MCP server, report_outcome (gateway/mcp_builtin.hpp).
    bool builtin_tools = false;
    // An agent run's own variables (HOME, sentinel credentials, telemetry
    // switches), from its profile (finish_plan).
    EnvList agent_env;
    // --capture-only: the proxy variables left out (compose_environment).
    bool proxy_variables = true;
    // Why the agent's model grants are not in this run ("" = they are, or
    // there is no worker).
    std::string left_out;
    // What the operator is told before the run starts (an image's settings
    // corral does not honour), one line each.
    std::vector<std::string> notes;
};

// Throws UsageError for a bad combination found only with the organisation
// (the identity WORKER/RUN-ID not made of [A-Za-z0-9._-]), or no command for
// an image without Entrypoint and Cmd.
RunPlan resolve_run(const RunRequest& request, const RunInputs& inputs);

// --rootfs (host, image:NAME, or a directory made absolute when parsed),
// else the worker's (worker.toml, else org.toml), else host.
names::RootfsSource requested_rootfs(const RunRequest& request, const std::optional<config::ResolvedWorker>& worker);

// Whether the run's (or session's) --workspace is reviewed
// (docs/workspace.md): --review, or the worker's review = true (which the
// command line cannot turn off). False without --workspace.
bool reviewed_workspace(const RunRequest& request, const std::optional<config::ResolvedWorker>& worker);

// The box's environment, one order for every run: corral's proxy (and CA)
// variables first, then the worker's [env], the agent's, and --env last (the
// sandbox applies them in order; later wins). Under --capture-only
// (plan.proxy_variables false) the proxy variables are left out; the CA's stay.
EnvList compose_environment(const RunPlan& plan, const EnvList& proxy_env);

// The agent a run asks for: with a worker, --prompt (an agent run) or
// interactive_agent_run; nullopt for a `-- CMD` run and for a session (whose
// agent resolve_run decides from the credential's presence).
std::optional<config::AgentKind> requested_agent(const RunRequest& request,
                                                 const std::optional<config::ResolvedWorker>& worker);

// `--tty --config DIR --worker W -- CLI [ARGS...]` where CLI is the name of
// the worker's agent (claude, codex, pi): the agent's own interactive
// terminal UI, run with what an agent run gives it (its home, sentinel
// credentials, environment and model grants) and ARGS instead of a prompt.
bool interactive_agent_run(const RunRequest& request, const std::optional<config::ResolvedWorker>& worker);

// --hostname, else "corral-<the run id's last six characters>".
std::string box_hostname(const RunRequest& request, const std::string& run_id);

// The record's asked-for fields (argv, rootfs, workspace, hostname, limits,
// timeout, log limit): what the plan's spec says once the run is resolved
// (`spec`), else what the command line asked for (a run refused before).
void record_requested(supervisor::RunRecord& record, const RunRequest& request, const supervisor::SandboxSpec* spec);

}  // namespace corral::run
