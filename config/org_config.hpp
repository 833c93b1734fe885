// config/org_config.hpp — an organisation directory: org.toml plus
// workers/NAME/worker.toml, read into plain structs and resolved per worker.
//
//   ORG/org.toml                [engine] [sandbox] rootfs [budget] [prices] [mcp], and the gateway's own
//                               sections ([gateway], [credentials.NAME], [[grants]],
//                               parsed by parse_gateway_sections, unchanged)
//   ORG/workers/NAME/worker.toml  agent, model, rootfs, [sandbox], [env], [[grants]], [budget], [prices], [mcp],
//                               [channels] (passed through untouched)
//
// Resolution per worker, key by key: worker.toml → org.toml → built-in default
// (agent: worker `agent` → [engine] agent → "pi").
//
// Validation fails closed: every problem is a Diagnostic (config/checker.hpp)
// naming FILE:LINE, the key and what is allowed; unknown keys are errors at
// every level. check_org() collects all of them (so `corral validate` can show
// every mistake at once); load_org() throws a ConfigError holding them, one
// per line. The files: org_files.cpp (the directory walk and reading),
// org_schema.cpp (the per-file checks), org_resolve.cpp (resolve_worker and
// the overlays), org_secrets.cpp (credential_status), mcp_config.cpp and
// mcp_rules.cpp ([mcp], config/mcp_config.hpp).
// docs/configuration.md is the reference for every key.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/budget_config.hpp"
#include "config/checker.hpp"
#include "config/gateway_config.hpp"
#include "mcp/servers.hpp"
#include "names/rootfs_source.hpp"

#include <toml.hpp>

namespace corral::config {

// Where `corral gateway` listens when org.toml's [gateway] names no listener.
inline constexpr std::string_view default_gateway_socket = "/run/corral/gateway.sock";

// Which agent CLI a worker's task runs use. An enum, never a command string: a
// free-form command would bypass the provisioning (sentinels, grants, env).
enum class AgentKind { pi, claude, codex };
inline constexpr std::string_view agent_kinds_allowed = "pi | claude | codex";
// worker.toml's `agent` may also say "none": an egress-only worker, whose
// runs are `-- CMD` runs under its grants and limits (no agent, no agent
// credential, no model grants).
inline constexpr std::string_view no_agent = "none";
inline constexpr std::string_view worker_agent_allowed =
    "pi | claude | codex | none (an egress-only worker: `corral run --worker NAME -- CMD` with its grants)";
std::string_view to_string(AgentKind k);
std::optional<AgentKind> parse_agent_kind(std::string_view text);  // exact lowercase names

// The whole text of the warning for a non-pi worker with [channels].
inline constexpr std::string_view channels_warning = "sessions run pi; agent applies to task runs";

// The bounds of a tmpfs of the box (/tmp, the scratch): worker/org
// tmp_size/scratch_size and `corral run --tmp-size/--scratch-size` alike. Its
// pages are the host's memory until the run ends.
inline constexpr std::uint64_t kMinBoxTmpfsBytes = 1ull << 20;   // 1 MiB
inline constexpr std::uint64_t kMaxBoxTmpfsBytes = 64ull << 30;  // 64 GiB

// [sandbox] in org.toml and in worker.toml. Unset = no limit / built-in default.
struct SandboxLimits {
    std::optional<std::uint64_t> memory_bytes;          // memory = "2GiB"
    std::optional<std::uint64_t> pids;                  // pids = 512
    std::optional<double> cpus;                         // cpus = 1.5
    std::optional<std::chrono::milliseconds> timeout;   // timeout = "30m"
    std::optional<std::uint64_t> tmp_bytes;             // tmp_size = "1GiB"
    std::optional<std::uint64_t> scratch_bytes;         // scratch_size = "1GiB"
};
// Each field of `over` that is set replaces the one in `base`.
SandboxLimits overlay_limits(const SandboxLimits& base, const SandboxLimits& over);

// [engine] in org.toml: organisation-wide agent defaults.
struct EngineSettings {
    std::optional<AgentKind> agent;
    std::string agent_where;          // "FILE:LINE" when set
    std::string model;                // "" = the CLI's default
    // codex in ChatGPT mode: the (non-secret) ChatGPT account id the sentinel
    // credentials carry; the real backend's routing discovery lists only the
    // real account. "" = a sentinel account id (fine for stand-ins).
    std::string chatgpt_account_id;
};

struct WorkerConfig {
    std::string name;                 // directory name under workers/
    std::string file;                 // path of its worker.toml
    std::optional<AgentKind> agent;
    bool egress_only = false;         // agent = "none"
    std::string agent_where;
    std::string model;                // "" = inherit
    std::optional<names::RootfsSource> rootfs;  // unset = inherit
    std::string description;
    // review = true: a run's --workspace is reviewed, as with --review
    // (docs/workspace.md); the command line cannot turn it off.
    bool review = false;
    std::optional<bool> capture;      // capture = true|false (docs/capture.md); unset = org.toml's
    SandboxLimits limits;
    std::vector<Grant> grants;        // scoped to this worker (identities = {name})
    std::map<std::string, std::string> env;
    std::optional<toml::value> channels;  // passthrough: sessions are not corral's concern
    std::string channels_where;
    BudgetConfig budget;              // [budget], [budget.worker]
    PriceList prices;                 // [prices."MODEL"]
    mcp::ToolsConfig tools;           // [mcp] (config/mcp_config.hpp)
};

struct OrgConfig {
    std::string dir;
    std::string org_file;             // DIR/org.toml
    EngineSettings engine;
    names::RootfsSource rootfs;       // host (the default), image:NAME or an absolute directory
    std::optional<bool> capture;      // capture = true|false: every worker's default (docs/capture.md)
    SandboxLimits limits;
    GatewayConfig gateway;            // [gateway], [credentials.NAME], [[grants]]
    BudgetConfig budget;              // [budget], [budget.worker]: every worker's defaults
    PriceList prices;                 // [prices."MODEL"]
    mcp::ToolsConfig tools;           // [mcp]: every worker's servers, rules, pins and call budgets
    std::map<std::string, WorkerConfig> workers;
    std::vector<Diagnostic> warnings;
};

// Everything check_org found: `org` is meaningful only when `errors` is empty.
struct OrgCheck {
    OrgConfig org;
    std::vector<Diagnostic> errors;
    std::vector<Diagnostic> warnings;
};

// Reads DIR/org.toml (required) and every DIR/workers/NAME/worker.toml,
// collecting every error and warning.
OrgCheck check_org(const std::string& dir);

// What check_org does with the text of one org.toml, and of one worker.toml
// (w.name set by the caller), without reading the directory: the same parse
// and checks, every problem appended to `errors`, `file` naming the text in
// them. For tests and fuzzing (fuzz/org_toml.cpp, fuzz/worker_toml.cpp).
CredentialNames check_org_toml(std::string_view text, const std::string& file, OrgConfig& org,
                               std::vector<Diagnostic>& errors);
void check_worker_toml(std::string_view text, const std::string& file, const CredentialNames& org_credentials,
                       const std::string& org_dir, WorkerConfig& w, std::vector<Diagnostic>& errors);

// check_org, then throws ConfigError (one Diagnostic per line) if anything is wrong.
OrgConfig load_org(const std::string& dir);

// A worker as a run sees it, every inherited value filled in.
struct ResolvedWorker {
    std::string name;
    AgentKind agent = AgentKind::pi;  // meaningless when egress_only
    bool egress_only = false;         // worker.toml: agent = "none"; only `-- CMD` runs
    std::string agent_source;         // "workers/w/worker.toml:3", "org.toml:2 [engine]" or "built-in default"
    std::string model;                // "" = the CLI's default
    std::string chatgpt_account_id;
    names::RootfsSource rootfs;       // host, image:NAME or an absolute directory
    bool review = false;              // worker.toml's review: --workspace is reviewed
    std::optional<bool> capture;      // worker.toml's capture, else org.toml's; unset: the run's default
    SandboxLimits limits;
    // The org grants that apply to this worker (identities empty or naming it)
    // followed by the worker's own. The grants the agent kind implies are added
    // by the agent profile (agents/agent_profile.hpp), not here.
    std::vector<Grant> grants;
    std::map<std::string, std::string> env;
    MeteringConfig metering;          // its budgets and prices (config/budget_config.hpp)
    mcp::ToolsConfig tools;           // org.toml's [mcp] with worker.toml's on top (config::merge_tools)
    bool has_channels = false;
    std::vector<Diagnostic> warnings; // this worker's share of OrgConfig::warnings
};

// Throws UsageError naming the known workers when `name` is not one of them.
ResolvedWorker resolve_worker(const OrgConfig& org, const std::string& name);

// True when a grant's `identities` (globs on "worker" or "worker/run") can
// match some run of `worker`.
bool grant_applies_to_worker(const Grant& g, const std::string& worker);

// Whether credential NAME is defined and its secret can be read right now
// (same rules as the gateway: load_credential_secrets). Never returns the secret.
struct CredentialStatus {
    bool defined = false;
    bool available = false;
    CredentialKind kind = CredentialKind::api_key;
    std::string source;               // "env ANTHROPIC_API_KEY" / "file /etc/corral/anthropic.key"
    std::string problem;              // why not available
    std::string fix;                  // when defined but not available: what to set (variable, file, owner, mode)
};
CredentialStatus credential_status(const GatewayConfig& gw, const std::string& name);

}  // namespace corral::config
