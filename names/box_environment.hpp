// names/box_environment.hpp — the environment variables corral itself sets
// in a box, as tables: the code that sets them (agents::proxy_environment,
// the agent profiles) reads them, and so does is_reserved_env, so a variable
// corral starts setting is reserved without a second list to keep in step.
#pragma once

#include <string_view>

namespace corral::names {

// ---- the proxy environment (every box with egress; agents::proxy_environment)

// What a proxy variable carries.
enum class ProxyValue {
    proxy_url,  // the bridge's "http://127.0.0.1:PORT"
    no_proxy,   // the loopback names that never go through the bridge
    literal,    // `literal`, as is
};
struct ProxyVariable {
    std::string_view name;
    ProxyValue value;
    std::string_view literal = {};
};
// In the order the box's environment lists them.
inline constexpr ProxyVariable proxy_variables[] = {
    {"HTTP_PROXY", ProxyValue::proxy_url},
    {"HTTPS_PROXY", ProxyValue::proxy_url},
    {"ALL_PROXY", ProxyValue::proxy_url},
    {"NO_PROXY", ProxyValue::no_proxy},
    {"http_proxy", ProxyValue::proxy_url},
    {"https_proxy", ProxyValue::proxy_url},
    {"all_proxy", ProxyValue::proxy_url},
    {"no_proxy", ProxyValue::no_proxy},
    {"npm_config_proxy", ProxyValue::proxy_url},
    {"npm_config_https_proxy", ProxyValue::proxy_url},
    {"PIP_PROXY", ProxyValue::proxy_url},
    // git reads GIT_CONFIG_KEY_<n>/GIT_CONFIG_VALUE_<n> for n < GIT_CONFIG_COUNT.
    {"GIT_CONFIG_COUNT", ProxyValue::literal, "1"},
    {"GIT_CONFIG_KEY_0", ProxyValue::literal, "http.proxy"},
    {"GIT_CONFIG_VALUE_0", ProxyValue::proxy_url},
    // Node >= 24 (and 22.21+) honour HTTP(S)_PROXY in fetch/http only with this set.
    {"NODE_USE_ENV_PROXY", ProxyValue::literal, "1"},
};
// Each names the CA bundle path in the box (only when some grant intercepts TLS).
inline constexpr std::string_view ca_bundle_variables[] = {
    "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO", "CODEX_CA_CERTIFICATE", "PIP_CERT",
};

// ---- the agent profiles (agents/agent_profile.cpp)

struct FixedVariable {
    std::string_view name;
    std::string_view value;
};
// Every agent: its home directory in the box.
inline constexpr std::string_view agent_home_variable = "HOME";
// claude: its config directory, the sentinel API key (api_key mode), and its
// phone-home switches. NONESSENTIAL_TRAFFIC alone removes bootstrap, eval,
// event_logging, penguin_mode and server-urls (docs/agents.md); the rest are
// belt and braces.
inline constexpr std::string_view claude_config_dir_variable = "CLAUDE_CONFIG_DIR";
inline constexpr std::string_view claude_api_key_variable = "ANTHROPIC_API_KEY";
inline constexpr FixedVariable claude_switches[] = {
    {"DISABLE_TELEMETRY", "1"},
    {"DISABLE_ERROR_REPORTING", "1"},
    {"DISABLE_AUTOUPDATER", "1"},
    {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"},
};
// codex: its home (auth.json and config.toml hold the rest).
inline constexpr std::string_view codex_home_variable = "CODEX_HOME";
// pi: its agent directory and its phone-home switches.
inline constexpr std::string_view pi_agent_dir_variable = "PI_CODING_AGENT_DIR";
inline constexpr FixedVariable pi_switches[] = {
    {"PI_OFFLINE", "1"},
    {"PI_TELEMETRY", "0"},
};

// ---- refused although corral never sets them

// Variables the agent CLIs read a REAL credential from. corral gives a box
// only sentinels (the gateway injects the real secret in transit), so a
// worker's [env] or `--env` naming one would put a real key in the box:
// refused whether or not some profile sets a sentinel under that name today.
inline constexpr std::string_view credential_variables[] = {
    "ANTHROPIC_API_KEY",        // claude, pi
    "ANTHROPIC_AUTH_TOKEN",     // claude: a bearer token
    "ANTHROPIC_OAUTH_TOKEN",    // pi
    "CLAUDE_CODE_OAUTH_TOKEN",  // claude: a `claude setup-token` token
    "OPENAI_API_KEY",           // codex
};

// True for every variable in the tables above, compared without case (tools
// read both spellings of the proxy variables, and a worker has no business
// setting either), and for every GIT_CONFIG_KEY_<n> / GIT_CONFIG_VALUE_<n>
// (with GIT_CONFIG_COUNT reserved, another index could only shift git's view
// of corral's own entries). A worker's [env] and `corral run --env` refuse them.
bool is_reserved_env(std::string_view name);

// True for a name in proxy_variables (the exact spelling corral sets): what
// `corral run --capture-only` leaves out of the box's environment.
bool is_proxy_variable(std::string_view name);

}  // namespace corral::names
