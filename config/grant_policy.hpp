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

struct GrantPolicy {
    std::vector<std::string> models;                 // empty = any model
    std::optional<std::uint64_t> max_output_tokens;  // unset = no cap
    bool server_tools = true;
    bool mcp_servers = true;
    bool url_sources = true;
    bool context_management = true;
    std::optional<std::vector<std::string>> anthropic_betas;  // unset = any beta
    std::string where;  // "FILE:LINE" of the policy table; "" when the grant has none
};

// grants[N].policy: `v` is the value of the key, `key` its name in messages
// ("grants[3].policy"). Every problem (unknown key, bad value) is recorded
// in `c`; the result is meaningful only when none was.
GrantPolicy parse_grant_policy(Checker& c, const toml::value& v, const std::string& key);

}  // namespace corral::config
