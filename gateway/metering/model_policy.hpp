// gateway/metering/model_policy.hpp — what an inject grant lets a model
// request ask for: which models, how much output, which tools and inputs the
// provider would act on by itself. Checked on the request body before
// anything is forwarded; pure (no I/O).
//
// The default policy allows everything and never reads the body, so the
// implied grants of every agent kind work unchanged; each rule is opt-in.
//
// Client tools and server tools. A tool the CLI executes itself is already
// inside the box's walls; a provider-hosted tool runs on the provider's
// machines, fetches or runs what the model asks for there, and bills per use,
// out of reach of the box's grants. So server_tools = false refuses:
//  - Anthropic Messages: a tools[] entry whose `type` is present and is not
//    "custom", except the Anthropic-defined tools the client executes
//    (type bash_*, text_editor_*, computer_*, memory_*: Claude Code may use
//    them, and their effects happen in the box). web_search_*, web_fetch_*,
//    code_execution_*, tool_search_tool_*, advisor_* and any type not known
//    here are server tools (a new type is refused until it is classified).
//    type "mcp_toolset" is the mcp_servers rule's.
//  - OpenAI Responses: a tools[] entry whose type is not function, custom,
//    local_shell, apply_patch or a shell without a hosted environment
//    (`environment.type` absent or "local"): web_search*, file_search,
//    code_interpreter, computer_use*, image_generation and any type not known
//    here. type "mcp" is the mcp_servers rule's.
//  - Chat Completions: a tools[] entry whose type is not function or custom,
//    and `web_search_options` (the search models' hosted search).
// mcp_servers = false refuses Anthropic's top-level `mcp_servers` (a
// non-empty array) and tools of type mcp_toolset, and Responses tools of
// type mcp: the provider would dial a remote MCP server itself.
// url_sources = false refuses inputs the provider fetches from a URL:
// Anthropic content blocks (in messages, also nested in tool_result content
// and in document content sources) whose source.type is "url"; Responses
// input_image parts whose image_url is not a data: URL and input_file parts
// with a file_url (in message content and in function_call_output output);
// Chat content parts image_url whose url is not a data: URL. Wherever an API
// takes a list of blocks or one block alone (content, system, tool_result
// content, Responses input, even messages), both shapes are read; and
// Responses prompt.variables are read as input parts.
// context_management = false refuses provider-side edits of the context the
// client sent: Anthropic's top-level `context_management` (clearing tool
// uses or thinking, compaction edits compact_*), Responses'
// `context_management` (server-side compaction) and `truncation: "auto"`
// (the provider drops input items to fit), and the standalone compaction
// routes (check_model_route).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/grant_policy.hpp"
#include "gateway/metering/model_body.hpp"
#include "gateway/metering/usage.hpp"

namespace corral::config {
struct GrantPolicy;
}

namespace corral::gateway::metering {

// An inject grant's model and tool policy: the config's own type, decided on as parsed.
using ModelPolicy = config::GrantPolicy;

struct PolicyRefusal {
    // "model", "max_output_tokens", "server_tool", "mcp_servers", "url_source",
    // "context_management", "anthropic_beta", "unreadable_body"
    std::string rule;
    std::string detail;  // one sentence: the rule and what the request had
};

// Bodies above this are refused as unreadable when a body rule is set (the
// gateway's max_body_bytes bounds them long before).
inline constexpr std::size_t kMaxPolicyBodyBytes = kMaxModelBodyBytes;

// The first rule `body` (an HTTP request body, or one codex WebSocket
// response.create message) breaks, or nullopt. `anthropic_beta_header` is
// the request's anthropic-beta value (comma-separated tokens; several header
// lines joined with ','), checked for the Anthropic APIs only;
// `gateway_added_beta` is the token the gateway adds itself, always allowed.
// With no body rule set the body is not parsed. A body rule set and a body
// that is not a JSON object: "unreadable_body" (fail closed).
std::optional<PolicyRefusal> check_model_request(const ModelPolicy& policy, ModelApi api, const ModelBody& body,
                                                 std::string_view anthropic_beta_header,
                                                 std::string_view gateway_added_beta = {});
// The same on the body's text (parsed here; tests, the fuzz target).
std::optional<PolicyRefusal> check_model_request(const ModelPolicy& policy, ModelApi api, std::string_view body,
                                                 std::string_view anthropic_beta_header,
                                                 std::string_view gateway_added_beta = {});

// A route the policy refuses whatever its body: with context_management =
// false, the standalone compaction routes (/v1/responses/compact,
// /backend-api/codex/responses/compact), which model_api_for_path() does not
// meter. `path` as model_api_for_path() takes it (query ignored).
std::optional<PolicyRefusal> check_model_route(const ModelPolicy& policy, std::string_view path);

// Whether `name` matches `pattern` ('*' and '?' only; case-sensitive).
bool model_name_matches(std::string_view pattern, std::string_view name);

}  // namespace corral::gateway::metering
