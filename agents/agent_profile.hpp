// agents/agent_profile.hpp — what each agent CLI (pi, claude, codex) gets
// in a run: its command line, environment, home files holding SENTINEL
// credentials, the egress grants its model traffic needs and the real
// credential the gateway injects for it.
//
// Everything here is pure (same inputs → same bytes; the golden files in
// tests/agents/golden/ pin them) except write_agent_home(), which puts the
// files on disk, and check_agent_credential(), which asks whether the real
// secret can be read.
//
// Sentinels are obviously fake, unique per run ("corral-sentinel-<run-id>"),
// never derived from a real secret, and expire in 2100 so no CLI ever tries
// to refresh them. The real secret exists only in the gateway, which drops the
// sentinel header and injects the real one in transit. docs/agents.md explains
// each choice; agent-clients.md (research) has the measurements behind it.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agents/mcp_client.hpp"
#include "config/gateway_config.hpp"
#include "config/org_config.hpp"
#include "names/rootfs_source.hpp"

namespace corral::agents {

using AgentKind = config::AgentKind;

// How the real credential authenticates; picks the sentinel's shape.
// For codex, oauth means ChatGPT sign-in (chatgpt.com backend) and api_key
// means an OpenAI API key (api.openai.com).
enum class CredentialMode { api_key, oauth };
CredentialMode credential_mode_for(config::CredentialKind k);

// Where tools/install-npm-deps.sh installs the pinned CLIs.
inline constexpr const char* default_agents_prefix = "/usr/local/lib/corral-agents";
// The versions it pins (and the versions the golden files and flags were checked against).
const char* pinned_cli_version(AgentKind k);

struct AgentInputs {
    std::string run_id;             // [A-Za-z0-9_-]+; every sentinel carries it
    std::string worker;             // scopes the implied grants (identities = {worker}); "" = unscoped
    std::string prompt;             // the task
    std::string system_prompt;      // "" = none
    std::string model;              // "" = the CLI's default
    // The agent's home: `home_rel` relative to the run dir (host side, where
    // write_agent_home puts it, host-visible for debugging) and `home_in_box`,
    // the same directory as the box sees it (what HOME and the CLI's config
    // variables point to).
    std::string home_rel = "home";
    std::string home_in_box = "/home/agent";
    CredentialMode credential = CredentialMode::api_key;
    std::string chatgpt_account_id; // codex ChatGPT mode: the real, non-secret account id; "" = sentinel id
    std::string chatgpt_plan_type = "plus";
    std::string issued_at = "2026-01-01T00:00:00Z";  // codex auth.json last_refresh (RFC 3339)
    std::string agents_prefix = default_agents_prefix;
    std::string node = "/usr/bin/node";
    McpClientInputs mcp;            // the worker's MCP servers, as corral's endpoints (agents/mcp_client.hpp)
};

struct AgentFile {
    std::string path;               // relative to the run dir
    std::string content;
    unsigned mode = 0600;
};

// The real credential an agent kind needs in the gateway.
struct RequiredCredential {
    std::string name;               // key of [credentials.NAME] in org.toml
    std::string how_to_add;         // a ready-to-paste org.toml snippet, one line
};

struct AgentProfile {
    AgentKind kind = AgentKind::pi;
    std::vector<std::string> argv;                            // argv[0] is an absolute path in the box
    std::vector<std::pair<std::string, std::string>> env;     // added to the box's environment
    std::vector<std::string> dirs;                            // relative to the run dir, created 0700, agent-owned
    std::vector<AgentFile> files;
    std::vector<config::Grant> implied_grants;
    RequiredCredential credential;
    bool stdin_null = true;         // every CLI here reads piped stdin into the prompt: give it /dev/null
    std::vector<std::string> version_argv;                    // prints the CLI's version
    std::string cli_version;        // pinned version
};

// The installed CLI's version, read host-side from its package's package.json
// under `agents_prefix` (corral never runs agent code as root on the host).
// Without a readable version, `version` is empty and `problem` says why (never
// the pinned version instead: run.json must say what actually ran).
struct InstalledVersion {
    std::optional<std::string> version;
    std::string problem;
};
// `rootfs` is the tree the box runs the CLI from ("/" for --rootfs host, else
// the image): the package.json is read inside it (links resolved there, no
// FIFO, bounded), so an image's CLI is reported, not the host's.
InstalledVersion installed_cli_version(const AgentProfile& p, const std::string& agents_prefix,
                                       const std::string& rootfs = "/");

// What the operator is told about the installed CLI (cmd_run: stderr and
// run.json's messages; corral validate: a warning): "" when it is the pinned
// version; otherwise why the version is unknown, or that it differs from the
// pin (corral's flags and files were checked against the pinned version only).
std::string cli_version_note(const AgentProfile& p, const InstalledVersion& installed);

// The agent's programs (the CLI, and node for a script) must be in the rootfs
// the box will see (host, or an image directory). nullopt when they are;
// otherwise one line naming the missing path and the fix. An existence check
// only: nothing is read or run. image:NAME's layers are not known here: the
// caller looks in each layer as a DIR (run/agent_run.cpp); given image:NAME
// itself, nothing is found (`corral validate` of an image worker says so).
std::optional<std::string> cli_missing_in_rootfs(const AgentProfile& p, const names::RootfsSource& rootfs,
                                                 const std::string& prefix = default_agents_prefix);

// The sentinel stem every fake credential of a run contains.
std::string sentinel_for(const std::string& run_id);  // "corral-sentinel-<run_id>"

// Throws UsageError on a run_id with characters outside [A-Za-z0-9_-] (it ends
// up inside header values).
AgentProfile make_agent_profile(AgentKind kind, const AgentInputs& in);

// The grants a kind's model traffic needs (the gateway refuses everything
// else, including the token-refresh endpoints: a refresh must get a 403,
// never a 2xx — codex retries a 2xx forever).
std::vector<config::Grant> implied_grants(AgentKind kind, CredentialMode mode, const std::string& worker);

RequiredCredential required_credential(AgentKind kind);

// The grants a worker's runs get: its configured grants (org + worker) and
// the implied ones, except where a configured grant names the same host and
// port — the operator's grant wins (e.g. one with connect_to pointing
// api.anthropic.com at an internal proxy or a test stand-in).
std::vector<config::Grant> worker_grants(const config::ResolvedWorker& w, const std::vector<config::Grant>& implied);

// The gateway configuration for one run of `w` (the embedded gateway): the
// organisation's [gateway] settings and credentials with worker_grants() as
// the grant list, renumbered in order (Grant::index is what the ledger names).
config::GatewayConfig run_gateway_config(const config::OrgConfig& org, const config::ResolvedWorker& w,
                                         const std::vector<config::Grant>& implied);

// What `corral gateway --org DIR` (the shared daemon) serves for an organisation.
struct OrgGatewayConfig {
    // org.toml's [gateway] settings, the [credentials] its grants use, and as
    // grants: org.toml's [[grants]] (with their own identities), then for each
    // worker (by name) the grants only that worker has in worker_grants(): the
    // implied ones not replaced by an operator grant for the same host:port,
    // then its worker.toml grants, each scoped to that worker alone
    // (identities = {"W"}: a glob on the worker part, and worker names hold no
    // glob characters). Renumbered in order (Grant::index). So every identity
    // W/RUN finds through the daemon what an embedded gateway gives W's runs.
    // worker_tools: each worker's [mcp] (org.toml's under worker.toml's), for
    // the workers with MCP servers; the credentials they name are kept too.
    config::GatewayConfig config;
    // One line per worker whose agent's credential is not defined or not
    // available: missing_credential_message(), saying its model grants are left
    // out (as `corral run` leaves them out of a command run of that worker).
    std::vector<std::string> left_out;
};

// The status of the credential each worker's agent needs (credential_status:
// reads the secrets, drops them at once). Keyed by credential name.
std::map<std::string, config::CredentialStatus> agent_credential_status(const config::OrgConfig& org);

// Pure. `credentials` is agent_credential_status(org); a name missing from it
// counts as available if org.toml defines it. Throws config::ConfigError when
// [gateway] listen_unix is empty (the daemon serves `corral run --gateway
// unix:PATH` there; leaving out both listeners gives the default socket).
OrgGatewayConfig org_gateway_config(const config::OrgConfig& org,
                                    const std::map<std::string, config::CredentialStatus>& credentials = {});

// codex has no system-prompt flag: the system prompt goes in front of the
// task behind an unmistakable delimiter. Without a system prompt the task is
// passed unchanged.
std::string compose_codex_prompt(const std::string& system_prompt, const std::string& prompt);

// An unsigned JWT (header.payload.signature, base64url) for sentinel tokens.
std::string unsigned_jwt(const std::string& payload_json);

// "" when the worker's agent can start; otherwise one line naming the worker,
// the agent, the missing credential and how to add it.
std::string missing_credential_message(const std::string& worker, AgentKind kind,
                                       const config::CredentialStatus& status);

// Checks the credential `kind` needs is defined in `gw` and its secret
// readable; throws UsageError(missing_credential_message) otherwise. Call it
// before anything of the run starts.
void check_agent_credential(const std::string& worker, AgentKind kind, const config::GatewayConfig& gw);

// Creates profile.dirs and writes profile.files under run_dir (which must
// exist). Directories 0700, files with their mode; with `owner` set both are
// chowned to it (the agent writes to its home). Never follows a symlink.
void write_agent_home(const AgentProfile& profile, const std::string& run_dir,
                      std::optional<std::pair<uid_t, gid_t>> owner);

// The box's proxy environment: every tool sends through the bridge on
// 127.0.0.1:PORT and trusts corral's CA at `ca_path_in_box`. An empty
// `ca_path_in_box` (no grant of the run intercepts TLS) leaves out the CA
// variables: the box then keeps its image's own trust store.
std::vector<std::pair<std::string, std::string>> proxy_environment(const std::string& ca_path_in_box,
                                                                  unsigned port = 3128);

}  // namespace corral::agents
