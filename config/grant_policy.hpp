// config/grant_policy.hpp — an inject grant's model and tool policy as
// written: the `policy` sub-table of a [[grants]] entry,
//
//   [grants.policy]            (or policy = { ... } inline)
//   models = ["claude-sonnet-4-5*"]   # exact names or globs ('*', '?'); omitted: any model
//   max_output_tokens = 32000         # a cap on max_tokens / max_output_tokens / max_completion_tokens
//   server_tools = false              # refuse provider-hosted tools
//   mcp_servers = false               # refuse remote MCP servers the provider dials
//   url_sources = false               # refuse document/image sources the provider fetches
//   context_management = false        # refuse provider-side compaction and context edits
//   anthropic_betas = ["oauth-2025-04-20"]  # omitted: any anthropic-beta
//
// Every key is optional and the defaults allow everything; what each rule
// refuses is gateway/metering/model_policy.hpp's (docs/gateway.md). A
// policy is for mode = "inject" only (a tunnel never sees a request).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/checker.hpp"

#include <toml.hpp>

namespace corral::config {

// The one type of the policy: the config holds it as parsed and the
// gateway decides on the same value (gateway/metering/model_policy.hpp calls
// it ModelPolicy), never a copy converted field by field.
struct GrantPolicy {
    // Exact names or globs ('*' any run, '?' one character; nothing else is
    // special). Empty: any model.
    std::vector<std::string> models;
    // A cap on the output the request names (max_tokens, max_output_tokens,
    // max_completion_tokens). A request naming more is refused; one naming
    // none is not (the budget reserves the cap for it). Unset: no cap.
    std::optional<std::uint64_t> max_output_tokens;
    bool server_tools = true;        // false: refuse provider-hosted tools
    bool mcp_servers = true;         // false: refuse remote MCP servers the provider dials
    bool url_sources = true;         // false: refuse document/image sources the provider fetches
    bool context_management = true;  // false: refuse provider-side compaction and context edits
    // Set: every anthropic-beta token must be in it (or be the one the
    // gateway adds itself). Unset: any beta.
    std::optional<std::vector<std::string>> anthropic_betas;
    std::string where;  // "FILE:LINE" of the policy table; "" when the grant has none

    bool strict() const { return reads_body() || anthropic_betas.has_value(); }  // any rule set
    // A rule that needs the body (all but anthropic_betas).
    bool reads_body() const {
        return !models.empty() || max_output_tokens || !server_tools || !mcp_servers || !url_sources ||
               !context_management;
    }
};

// grants[N].policy: `v` is the value of the key, `key` its name in messages
// ("grants[3].policy"). Every problem (unknown key, bad value) is recorded
// in `c`; the result is meaningful only when none was.
GrantPolicy parse_grant_policy(Checker& c, const toml::value& v, const std::string& key);

}  // namespace corral::config
