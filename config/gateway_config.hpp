// config/gateway_config.hpp — the gateway's TOML sections as plain typed structs.
//
// The sections ([gateway], [gateway.limits], [credentials.NAME], [[grants]])
// are written so they can sit unchanged inside the organisation's org.toml:
// parse_gateway_sections() reads only them and ignores other top-level keys,
// while load_gateway_config() reads a stand-alone file and refuses unknown
// top-level keys too. Inside the gateway sections every unknown key is an error.
//
// Every validation error is a Diagnostic (config/checker.hpp): one line naming
// the file, the line, the key and what is allowed, e.g.
//   /etc/corral/gateway.toml:14: key 'grants[2].mode': got "x", allowed: tunnel | inject
// Every problem is reported, not only the first: each unknown key, each bad
// value of [gateway], [gateway.limits], every [credentials.NAME] and every
// [[grants]] entry (each bad route and identity); a ConfigError holds them one
// per line. Checks that depend on another value are made only when that value
// is good (no "routes need inject" after a bad mode; no "credential not
// defined" for a [credentials.NAME] section that itself has an error).
// Secrets are never read by the parsers; load_credential_secrets() reads them
// and never puts a secret into an error message.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "names/host.hpp"

#include "base/sys_error.hpp"
#include "config/budget_config.hpp"
#include "config/checker.hpp"
#include "config/grant_policy.hpp"
#include "mcp/servers.hpp"

#include <toml.hpp>

namespace corral::config {

// [gateway.limits]. Sizes accept base/parse.hpp forms ("16KiB"), durations
// "30s"; plain integers are bytes / seconds.
struct GatewayLimits {
    std::uint64_t max_header_bytes = 16 * 1024;
    std::uint64_t max_body_bytes = 1024 * 1024;
    std::uint64_t max_response_bytes = 256ull * 1024 * 1024;
    std::chrono::milliseconds read_timeout{30'000};
    std::chrono::milliseconds idle_timeout{120'000};
    std::uint64_t max_connections = 1024;
    // Open connections one identity may hold, so one box cannot take the
    // whole of max_connections from every other box on a shared daemon.
    // When the key is omitted: 256, or max_connections if that is lower.
    std::uint64_t max_connections_per_identity = 256;
    std::uint64_t requests_per_identity = 0;  // 0 = unlimited
    // Refusal lines the ledger writes per identity; later refusals are still
    // refused and counted, and summarised (see Ledger). 0 = every one written.
    std::uint64_t ledger_refusals_per_identity = 10'000;
};

enum class CredentialKind { api_key, oauth_token };
std::string_view to_string(CredentialKind k);

// [credentials.NAME]. Exactly one of `file` / `env` is set.
struct CredentialSpec {
    std::string name;                 // NAME from [credentials.NAME]
    CredentialKind kind = CredentialKind::api_key;
    std::string file;                 // root-only file holding the secret (owner = gateway's euid, no group/other bits)
    std::string env;                  // or: environment variable holding it
    // Header name (lowercase) → value template, in file order. {key} and {token}
    // both render the secret; no other braces are accepted. Defaults:
    // api_key → x-api-key: {key}; oauth_token → authorization: Bearer {token}.
    std::vector<std::pair<std::string, std::string>> headers;
    bool template_given = false;      // `template` was written; false: `headers` are the kind's default
    std::string anthropic_beta;       // "" = leave anthropic-beta alone; else make sure this token is present
    std::string where;                // "FILE:LINE" of the section, for later messages
};

enum class GrantMode { tunnel, inject };
std::string_view to_string(GrantMode m);

// One entry of a grant's `routes`: "METHOD /path" or "METHOD /prefix/*".
// METHOD "*" matches any method. A trailing "*" (only after a '/') matches
// any remainder, including further segments and the empty remainder
// ("/v1/models/*" matches "/v1/models/" and "/v1/models/a/b", not "/v1/models").
struct Route {
    std::string method;   // uppercase token or "*"
    std::string path;     // normalised path without the trailing '*'
    bool prefix = false;  // true when the route ended in '*'
    std::string text;     // as written, for messages
};

// One [[grants]] entry.
struct Grant {
    names::HostPattern host;            // "*.example.com", an exact name or an IP literal, normalised at load
    std::uint16_t port = 443;
    GrantMode mode = GrantMode::tunnel;
    std::string credential;             // name in [credentials]; inject only ("" = inject nothing)
    std::vector<Route> routes;          // inject only; empty = any route
    std::vector<std::string> identities;// empty = every identity; else globs on "worker" or "worker/run"
    bool allow_private = false;         // special-purpose addresses allowed for this host
    std::string connect_to;             // "" or "host:port" / "[v6]:port" as written: dial this instead of resolving `host`
    std::optional<names::HostName> connect_host;  // parsed host of connect_to; set iff connect_to is
    std::uint16_t connect_port = 0;     // parsed port of connect_to
    std::string upstream_ca_file;       // "" = [gateway].upstream_ca_file
    std::string upstream_ca_file_where; // "FILE:LINE: key '...'" of upstream_ca_file, for errors found when it is read
    // Header templates this grant injects when its credential has no
    // `template` of its own, instead of the credential kind's default. Not a
    // TOML key: the grants an agent implies set it (api.openai.com reads an
    // API key as "authorization: Bearer", not as the api_key default x-api-key).
    std::vector<std::pair<std::string, std::string>> default_headers;
    // The `policy` sub-table: which models, output caps, tools and sources
    // a request may ask for (inject only; the default allows everything).
    GrantPolicy policy;
    // A person approves each connection first (docs/approvals.md): the box's
    // request waits, held, up to approval_timeout for `corral approve`.
    bool approval = false;
    std::chrono::seconds approval_timeout{300};
    std::size_t index = 0;              // position in [[grants]] (0-based), for the duplicate-grant message
    std::string where;                  // "FILE:LINE"
};

// [gateway]
struct GatewaySettings {
    std::string listen_unix;            // "" = no Unix listener. Socket made mode 0600.
    std::string listen_tcp;             // "" = none; else "127.x.y.z:PORT" or "[::1]:PORT" (loopback only; PORT may be 0)
    std::string listen_tcp_host;        // parsed address text of listen_tcp (no brackets)
    std::uint16_t listen_tcp_port = 0;  // parsed port of listen_tcp
    std::string tcp_identity = "tcp/0"; // "worker/run" identity given to TCP clients
    std::string ledger = "/var/lib/corral/ledger.jsonl";
    std::string state_dir = "/var/lib/corral";  // CA in <state_dir>/ca/{ca.crt,ca.key}
    std::string upstream_ca_file;       // "" = system trust store
    std::string hosts_file;             // "" = none; else /etc/hosts-format file consulted before DNS
    // The notifier hook (docs/approvals.md "The notifier"): argv (an
    // absolute path first) run for each new approval request as
    // approval_command_user, the request as JSON on its stdin. Empty: none.
    std::vector<std::string> approval_command;
    std::string approval_command_user = "nobody";
    // `corral run --ask` (not a TOML key): a host:port no grant names asks a
    // person instead of being refused (gateway/grants.hpp asked_grant).
    bool ask_unlisted = false;
    // The daemon's signed journal (docs/journal.md "The daemon's journal").
    // false: decisions are in the ledger only, unsigned; said at every start.
    // Only `corral gateway` reads it: a run's journal cannot be turned off.
    bool journal = true;
    // "FILE:LINE: key '...'" of the two files above: the parser does not read
    // them, so the gateway names where they were set when reading one fails.
    std::string upstream_ca_file_where;
    std::string hosts_file_where;
    GatewayLimits limits;
};

struct GatewayConfig {
    GatewaySettings gateway;
    std::map<std::string, CredentialSpec> credentials;
    std::vector<Grant> grants;
    // Budgets and prices (config/budget_config.hpp): per worker (the part of
    // an identity before '/'), and for identities no entry names. An
    // embedded gateway has its one worker's as the default; the daemon has
    // one entry per worker of the organisation.
    MeteringConfig metering;
    std::map<std::string, MeteringConfig> worker_metering;
    // An embedded gateway's one worker's governed tools (its [mcp]: servers,
    // policy, pins), served on the box's MCP listener (run/egress.cpp); empty
    // for the daemon, which has worker_tools instead.
    mcp::ToolsConfig tools;
    // The daemon's (`corral gateway --org`): each worker's governed tools, by
    // worker name, for the workers that have MCP servers.
    std::map<std::string, mcp::ToolsConfig> worker_tools;
    std::string file;                   // where it came from
};

// The credential names a grant's `credential` is checked against: every
// [credentials.NAME] written (also those with a problem of their own, which is
// reported once, at the section). complete = false when [credentials] was
// unreadable as a whole: then no grant's credential name is refused.
struct CredentialNames {
    std::set<std::string> names;
    bool complete = true;
};

// Everything found in the gateway sections: `config` is meaningful only when
// `errors` is empty.
struct GatewaySectionsCheck {
    GatewayConfig config;
    std::vector<Diagnostic> errors;
    CredentialNames credentials;
};

// Reads the gateway sections of an already parsed TOML document, collecting
// every problem. `file` is used in messages. Other top-level keys are ignored
// (org.toml reuse). Cross-checks: a grant's credential must exist, credential
// and routes only with mode = "inject", at least one of listen_unix/listen_tcp.
GatewaySectionsCheck check_gateway_sections(const toml::value& root, const std::string& file);

// A [[grants]] array on its own (a worker.toml's), its credentials checked
// against `known`; records every problem in `c`.
std::vector<Grant> check_grants(const toml::value& grants, const CredentialNames& known, Checker& c);

// Drops every credential no grant of `cfg` uses and no MCP server of
// cfg.tools or cfg.worker_tools names (a remote server's `credential`, a stdio server's
// `secret_env` values): only those are loaded, so one nobody can use
// (unrelated, or a left-out agent's) cannot stop a run or the daemon by
// being unreadable.
void keep_used_credentials(GatewayConfig& cfg);

// The credential as `grant` injects it: `c` itself, or, when `c` has no
// `template` of its own and the grant has default_headers, `c` with those.
CredentialSpec credential_for_grant(const CredentialSpec& c, const Grant& grant);

// check_gateway_sections, throwing a ConfigError holding every problem, one per line.
GatewayConfig parse_gateway_sections(const toml::value& root, const std::string& file);

// Parses `path` (TOML syntax errors become one-line ConfigErrors with
// file:line) and refuses any top-level key other than gateway, credentials, budget, prices,
// grants; every problem is reported (one per line of the ConfigError).
GatewayConfig load_gateway_config(const std::string& path);

// load_gateway_config on a file's text (`file` names it in messages), for
// tests and fuzzing (fuzz/gateway_toml.cpp).
GatewayConfig parse_gateway_config(std::string_view text, const std::string& file);

// Reads each credential's secret: `file` must be a regular file owned by the
// gateway's effective uid (root in production) with no group/other permission
// bits (0600/0400), opened without following symlinks; or `env` must be set
// and non-empty. One trailing newline / surrounding whitespace is trimmed; a
// secret containing control characters or spaces is refused (it would let a
// secret split a header). Returns name → secret. Throws ConfigError that names
// the credential, the file or variable and the rule, never the secret.
std::map<std::string, std::string> load_credential_secrets(const GatewayConfig& cfg);

}  // namespace corral::config
