#include <doctest/doctest.h>

#include <string>

#include "gateway/metering/model_policy.hpp"

using namespace corral::gateway::metering;

namespace {

// The rule a request breaks ("" when none), checking the detail is one
// sentence naming what the request had.
std::string rule_of(const ModelPolicy& p, ModelApi api, const std::string& body, std::string_view beta = {},
                    std::string_view added = {}) {
    auto r = check_model_request(p, api, body, beta, added);
    if (!r) return "";
    CHECK(!r->detail.empty());
    CHECK(r->detail.find('\n') == std::string::npos);
    return r->rule;
}

std::string detail_of(const ModelPolicy& p, ModelApi api, const std::string& body, std::string_view beta = {}) {
    auto r = check_model_request(p, api, body, beta);
    return r ? r->detail : "";
}

ModelPolicy strict_policy() {
    ModelPolicy p;
    p.models = {"claude-sonnet-4-5*", "gpt-5*", "gpt-4o"};
    p.max_output_tokens = 32000;
    p.server_tools = false;
    p.mcp_servers = false;
    p.url_sources = false;
    p.context_management = false;
    p.anthropic_betas = std::vector<std::string>{"claude-code-20250219", "interleaved-thinking-2025-05-14"};
    return p;
}

ModelPolicy only_server_tools() {
    ModelPolicy p;
    p.server_tools = false;
    return p;
}

// What Claude Code sends: client tools (no type), an Anthropic-defined client
// tool, base64 images and documents, a tool_result with an image.
const std::string claude_request = R"({
  "model": "claude-sonnet-4-5-20250929", "max_tokens": 32000, "stream": true,
  "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
  "tools": [
    {"name": "Bash", "description": "Run a command", "input_schema": {"type": "object",
      "properties": {"source": {"type": "url"}, "command": {"type": "string"}}}},
    {"type": "custom", "name": "Edit", "input_schema": {"type": "object"}},
    {"type": "bash_20250124", "name": "bash"},
    {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
    {"type": "memory_20250818", "name": "memory"},
    {"type": "computer_20250124", "name": "computer", "display_width_px": 1024, "display_height_px": 768}
  ],
  "messages": [
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
       "input": {"source": {"type": "url", "url": "https://example.com/"}}}]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "t1", "content": [
        {"type": "text", "text": "ok"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]},
      {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
      {"type": "image", "source": {"type": "file", "file_id": "file_01"}}
    ]}
  ]
})";

// What codex sends to /backend-api/codex/responses: function, local_shell
// and custom (freeform apply_patch) tools, a data: image.
const std::string codex_request = R"({
  "model": "gpt-5-codex", "instructions": "You are Codex.", "stream": true, "store": false,
  "tools": [
    {"type": "function", "name": "shell", "parameters": {"type": "object"}},
    {"type": "local_shell"},
    {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
    {"type": "shell"},
    {"type": "shell", "environment": {"type": "local"}},
    {"type": "apply_patch"}
  ],
  "input": [
    {"type": "message", "role": "user", "content": [
      {"type": "input_text", "text": "fix it"},
      {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
      {"type": "input_file", "file_id": "file-1"}]},
    {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "done"}
  ],
  "reasoning": {"effort": "medium"}, "include": ["reasoning.encrypted_content"]
})";

// What pi (or any Chat Completions client) sends.
const std::string chat_request = R"({
  "model": "gpt-4o", "max_completion_tokens": 4096, "stream": true, "stream_options": {"include_usage": true},
  "tools": [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}],
  "messages": [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": [
      {"type": "text", "text": "what is this"},
      {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}}]},
    {"role": "tool", "tool_call_id": "x", "content": "ok"}
  ]
})";

}  // namespace

TEST_CASE("model policy: the default allows everything and never reads the body") {
    ModelPolicy p;
    CHECK_FALSE(p.strict());
    CHECK_FALSE(p.reads_body());
    // Not JSON at all, a server tool, a beta: nothing is looked at.
    CHECK(rule_of(p, ModelApi::anthropic_messages, "\x01not json", "any-beta-2099-01-01") == "");
    CHECK(rule_of(p, ModelApi::anthropic_messages,
                  R"({"model":"x","tools":[{"type":"web_search_20250305","name":"web_search"}]})") == "");
    CHECK(rule_of(p, ModelApi::openai_responses, "[") == "");
}

TEST_CASE("model policy: real-shape requests of each API pass the strict policy") {
    ModelPolicy p = strict_policy();
    CHECK(p.strict());
    CHECK(rule_of(p, ModelApi::anthropic_messages, claude_request, "claude-code-20250219,oauth-2025-04-20",
                  "oauth-2025-04-20") == "");
    CHECK(rule_of(p, ModelApi::anthropic_count_tokens, claude_request, "claude-code-20250219") == "");
    CHECK(rule_of(p, ModelApi::openai_responses, codex_request) == "");
    CHECK(rule_of(p, ModelApi::openai_chat, chat_request) == "");
    // codex's WebSocket response.create message: the same fields at the top level.
    CHECK(rule_of(p, ModelApi::openai_responses,
                  R"({"type":"response.create","model":"gpt-5-codex","input":[],"tools":[{"type":"function","name":"f"}]})") ==
          "");
}

TEST_CASE("model policy: models, exact and globbed") {
    ModelPolicy p;
    p.models = {"claude-sonnet-4-5*", "claude-haiku-4-5-2025100?", "gpt-5"};
    auto body = [](const std::string& model) { return R"({"model":")" + model + R"(","max_tokens":1})"; };
    CHECK(rule_of(p, ModelApi::anthropic_messages, body("claude-sonnet-4-5")) == "");
    CHECK(rule_of(p, ModelApi::anthropic_messages, body("claude-sonnet-4-5-20250929")) == "");
    CHECK(rule_of(p, ModelApi::anthropic_messages, body("claude-haiku-4-5-20251001")) == "");
    CHECK(rule_of(p, ModelApi::anthropic_messages, body("claude-haiku-4-5-202510011")) == "model");
    CHECK(rule_of(p, ModelApi::openai_responses, body("gpt-5")) == "");
    CHECK(rule_of(p, ModelApi::openai_responses, body("gpt-5-codex")) == "model");  // exact: no prefix match
    CHECK(rule_of(p, ModelApi::anthropic_messages, body("claude-opus-4-1")) == "model");
    CHECK(rule_of(p, ModelApi::anthropic_messages, body("CLAUDE-SONNET-4-5")) == "model");  // case matters
    CHECK(detail_of(p, ModelApi::anthropic_messages, body("claude-opus-4-1")) ==
          "model 'claude-opus-4-1' is not one this grant allows (claude-sonnet-4-5*, claude-haiku-4-5-2025100?, gpt-5)");
    // No model, or not a string: refused when a list is set.
    CHECK(rule_of(p, ModelApi::anthropic_messages, R"({"max_tokens":1})") == "model");
    CHECK(rule_of(p, ModelApi::anthropic_messages, R"({"model":null})") == "model");
    CHECK(rule_of(p, ModelApi::anthropic_messages, R"({"model":["claude-sonnet-4-5"]})") == "model");
    CHECK(detail_of(p, ModelApi::anthropic_messages, "{}") ==
          "the request names no model; this grant allows only claude-sonnet-4-5*, claude-haiku-4-5-2025100?, gpt-5");
}

TEST_CASE("model policy: the glob matcher knows '*' and '?' only") {
    CHECK(model_name_matches("*", ""));
    CHECK(model_name_matches("*", "anything"));
    CHECK(model_name_matches("a*b*c", "axxbyyc"));
    CHECK(model_name_matches("a*b*c", "abc"));
    CHECK_FALSE(model_name_matches("a*b*c", "axxbyy"));
    CHECK(model_name_matches("*-4-5", "claude-sonnet-4-5"));
    CHECK_FALSE(model_name_matches("*-4-5", "claude-sonnet-4-5-1"));
    CHECK(model_name_matches("gpt-?o", "gpt-4o"));
    CHECK_FALSE(model_name_matches("gpt-?o", "gpt-o"));
    CHECK(model_name_matches("m[1]", "m[1]"));  // brackets are plain characters
    CHECK_FALSE(model_name_matches("m[12]", "m1"));
    CHECK_FALSE(model_name_matches("", "x"));
    // A pathological pattern stays cheap (no exponential backtracking).
    CHECK_FALSE(model_name_matches("*a*a*a*a*a*a*a*a*a*b", std::string(5000, 'a')));
}

TEST_CASE("model policy: the output cap, per API field") {
    ModelPolicy p;
    p.max_output_tokens = 32000;
    CHECK(rule_of(p, ModelApi::anthropic_messages, R"({"model":"m","max_tokens":32000})") == "");
    CHECK(rule_of(p, ModelApi::anthropic_messages, R"({"model":"m","max_tokens":32001})") == "max_output_tokens");
    CHECK(detail_of(p, ModelApi::anthropic_messages, R"({"model":"m","max_tokens":64000})") ==
          "max_tokens 64000 is over this grant's cap of 32000 output tokens");
    // Naming none is not refused: the budget reserves the cap.
    CHECK(rule_of(p, ModelApi::anthropic_messages, R"({"model":"m"})") == "");
    CHECK(rule_of(p, ModelApi::openai_responses, R"({"model":"m"})") == "");
    CHECK(rule_of(p, ModelApi::openai_responses, R"({"model":"m","max_output_tokens":40000})") == "max_output_tokens");
    CHECK(rule_of(p, ModelApi::openai_responses, R"({"model":"m","max_output_tokens":100})") == "");
    // Responses has no max_tokens field: the provider ignores or refuses it, the cap is on max_output_tokens.
    CHECK(rule_of(p, ModelApi::openai_chat, R"({"model":"m","max_completion_tokens":40000})") == "max_output_tokens");
    CHECK(rule_of(p, ModelApi::openai_chat, R"({"model":"m","max_tokens":40000})") == "max_output_tokens");
    CHECK(rule_of(p, ModelApi::openai_chat, R"({"model":"m","max_tokens":100,"max_completion_tokens":40000})") ==
          "max_output_tokens");
    CHECK(rule_of(p, ModelApi::openai_chat, R"({"model":"m","max_tokens":100,"max_completion_tokens":200})") == "");
    // A cap that is not a non-negative integer is refused (it could be read as a larger one).
    CHECK(rule_of(p, ModelApi::anthropic_messages, R"({"model":"m","max_tokens":1e9})") == "max_output_tokens");
    CHECK(rule_of(p, ModelApi::anthropic_messages, R"({"model":"m","max_tokens":"64000"})") == "max_output_tokens");
    CHECK(rule_of(p, ModelApi::anthropic_messages, R"({"model":"m","max_tokens":-1})") == "max_output_tokens");
    CHECK(rule_of(p, ModelApi::anthropic_messages, R"({"model":"m","max_tokens":18446744073709551615})") ==
          "max_output_tokens");
    CHECK(detail_of(p, ModelApi::anthropic_messages, R"({"model":"m","max_tokens":"64000"})") ==
          "max_tokens '\"64000\"' is not a non-negative integer; this grant caps output at 32000 tokens");
}

TEST_CASE("model policy: Anthropic server tools are refused, client tools are not") {
    ModelPolicy p = only_server_tools();
    auto with_tool = [](const std::string& tool) {
        return R"({"model":"m","max_tokens":1,"messages":[],"tools":[{"name":"Read","input_schema":{}},)" + tool +
               "]}";
    };
    for (const char* type : {"web_search_20250305", "web_search_20260209", "web_fetch_20250910",
                             "code_execution_20250522", "code_execution_20250825", "tool_search_tool_regex_20251119",
                             "advisor_20260301", "some_future_tool_20270101"}) {
        CAPTURE(type);
        CHECK(rule_of(p, ModelApi::anthropic_messages,
                      with_tool(std::string(R"({"type":")") + type + R"(","name":"x"})")) == "server_tool");
    }
    CHECK(detail_of(p, ModelApi::anthropic_messages, with_tool(R"({"type":"web_search_20250305","name":"web_search"})")) ==
          "tool 'web_search_20250305' is a provider-hosted tool; this grant allows client tools only");
    for (const char* type : {"custom", "bash_20250124", "text_editor_20250124", "text_editor_20250728",
                             "computer_20251124", "memory_20250818"}) {
        CAPTURE(type);
        CHECK(rule_of(p, ModelApi::anthropic_messages,
                      with_tool(std::string(R"({"type":")") + type + R"(","name":"x"})")) == "");
    }
    // count_tokens carries the same tools.
    CHECK(rule_of(p, ModelApi::anthropic_count_tokens, with_tool(R"({"type":"web_fetch_20250910","name":"f"})")) ==
          "server_tool");
    // A tool entry the policy cannot read is refused, not waved through.
    CHECK(rule_of(p, ModelApi::anthropic_messages, with_tool(R"({"type":7,"name":"x"})")) == "server_tool");
    CHECK(rule_of(p, ModelApi::anthropic_messages, with_tool(R"("web_search")")) == "server_tool");
    CHECK(rule_of(p, ModelApi::anthropic_messages, R"({"model":"m","tools":{"type":"web_search_20250305"}})") ==
          "server_tool");
    // Without the rule, the same request passes.
    ModelPolicy models_only;
    models_only.models = {"m"};
    CHECK(rule_of(models_only, ModelApi::anthropic_messages, with_tool(R"({"type":"web_search_20250305","name":"w"})")) ==
          "");
}

TEST_CASE("model policy: OpenAI hosted tools are refused, client tools are not") {
    ModelPolicy p = only_server_tools();
    auto responses = [](const std::string& tool) {
        return R"({"model":"gpt-5","input":"hi","tools":[{"type":"function","name":"f","parameters":{}},)" + tool + "]}";
    };
    for (const char* tool :
         {R"({"type":"web_search"})", R"({"type":"web_search_preview"})", R"({"type":"web_search_preview_2025_03_11"})",
          R"({"type":"web_search_2025_08_26"})", R"({"type":"file_search","vector_store_ids":["vs_1"]})",
          R"({"type":"code_interpreter","container":{"type":"auto"}})", R"({"type":"computer_use_preview"})",
          R"({"type":"computer_use"})", R"({"type":"image_generation"})",
          R"({"type":"shell","environment":{"type":"container_auto"}})", R"({"type":"some_future_tool"})",
          R"({"name":"untyped"})"}) {
        CAPTURE(tool);
        CHECK(rule_of(p, ModelApi::openai_responses, responses(tool)) == "server_tool");
    }
    CHECK(detail_of(p, ModelApi::openai_responses, responses(R"({"type":"web_search"})")) ==
          "tool 'web_search' is a provider-hosted tool; this grant allows client tools only");
    for (const char* tool : {R"({"type":"local_shell"})", R"({"type":"custom","name":"apply_patch"})",
                             R"({"type":"shell"})", R"({"type":"apply_patch"})",
                             R"({"type":"shell","environment":{"type":"local"}})"}) {
        CAPTURE(tool);
        CHECK(rule_of(p, ModelApi::openai_responses, responses(tool)) == "");
    }
    // mcp is the mcp_servers rule's, not server_tools'.
    CHECK(rule_of(p, ModelApi::openai_responses, responses(R"({"type":"mcp","server_label":"x","server_url":"https://mcp.example/"})")) ==
          "");
    // Chat Completions: functions only, and no hosted search.
    CHECK(rule_of(p, ModelApi::openai_chat, chat_request) == "");
    CHECK(rule_of(p, ModelApi::openai_chat, R"({"model":"gpt-4o","messages":[],"tools":[{"type":"web_search"}]})") ==
          "server_tool");
    CHECK(rule_of(p, ModelApi::openai_chat, R"({"model":"gpt-4o-search-preview","messages":[],"web_search_options":{}})") ==
          "server_tool");
    CHECK(detail_of(p, ModelApi::openai_chat, R"({"model":"gpt-4o-search-preview","web_search_options":{}})") ==
          "web_search_options asks for the provider's hosted web search; this grant allows client tools only");
}

TEST_CASE("model policy: remote MCP servers") {
    ModelPolicy p;
    p.mcp_servers = false;
    CHECK(rule_of(p, ModelApi::anthropic_messages,
                  R"({"model":"m","mcp_servers":[{"type":"url","url":"https://mcp.example/sse","name":"x"}]})") ==
          "mcp_servers");
    CHECK(detail_of(p, ModelApi::anthropic_messages, R"({"model":"m","mcp_servers":[{"type":"url"}]})") ==
          "the request names remote MCP servers (mcp_servers) for the provider to connect to; this grant allows none");
    CHECK(rule_of(p, ModelApi::anthropic_messages, R"({"model":"m","mcp_servers":[]})") == "");
    CHECK(rule_of(p, ModelApi::anthropic_messages, R"({"model":"m","mcp_servers":{"x":1}})") == "mcp_servers");
    CHECK(rule_of(p, ModelApi::anthropic_messages,
                  R"({"model":"m","tools":[{"type":"mcp_toolset","mcp_server_name":"x"}]})") == "mcp_servers");
    CHECK(rule_of(p, ModelApi::openai_responses,
                  R"({"model":"m","tools":[{"type":"mcp","server_label":"x","server_url":"https://mcp.example/"}]})") ==
          "mcp_servers");
    CHECK(detail_of(p, ModelApi::openai_responses, R"({"model":"m","tools":[{"type":"mcp"}]})") ==
          "tool 'mcp' has the provider connect to a remote MCP server; this grant allows none");
    // Hosted tools are server_tools' rule: allowed here.
    CHECK(rule_of(p, ModelApi::openai_responses, R"({"model":"m","tools":[{"type":"web_search"}]})") == "");
    CHECK(rule_of(p, ModelApi::anthropic_messages, claude_request) == "");
    CHECK(rule_of(p, ModelApi::openai_responses, codex_request) == "");
}

TEST_CASE("model policy: URL sources in each API's shape, nested ones too") {
    ModelPolicy p;
    p.url_sources = false;
    const std::string url_image = R"({"type":"image","source":{"type":"url","url":"https://example.com/a.png"}})";
    const std::string url_doc = R"({"type":"document","source":{"type":"url","url":"https://example.com/a.pdf"}})";
    auto user = [](const std::string& blocks) {
        return R"({"model":"m","max_tokens":1,"messages":[{"role":"user","content":[)" + blocks + "]}]}";
    };
    CHECK(rule_of(p, ModelApi::anthropic_messages, user(url_image)) == "url_source");
    CHECK(rule_of(p, ModelApi::anthropic_messages, user(url_doc)) == "url_source");
    CHECK(detail_of(p, ModelApi::anthropic_messages, user(url_image)) ==
          "a 'image' block has a source of type 'url' (the provider fetches it); this grant allows inline and uploaded "
          "sources only");
    // Inside a tool_result, and in a document whose source is content blocks.
    CHECK(rule_of(p, ModelApi::anthropic_messages,
                  user(R"({"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x"},)" + url_image +
                       "]}")) == "url_source");
    CHECK(rule_of(p, ModelApi::anthropic_messages,
                  user(R"({"type":"document","source":{"type":"content","content":[)" + url_image + "]}}")) ==
          "url_source");
    CHECK(rule_of(p, ModelApi::anthropic_count_tokens, user(url_doc)) == "url_source");
    // base64, file and text sources, and a tool_use input that merely looks like one, pass.
    CHECK(rule_of(p, ModelApi::anthropic_messages, claude_request) == "");

    // Responses: input_image by URL (not data:), input_file by URL, in messages and tool outputs.
    auto input = [](const std::string& parts) {
        return R"({"model":"gpt-5","input":[{"type":"message","role":"user","content":[)" + parts + "]}]}";
    };
    CHECK(rule_of(p, ModelApi::openai_responses, input(R"({"type":"input_image","image_url":"https://example.com/a.png"})")) ==
          "url_source");
    CHECK(rule_of(p, ModelApi::openai_responses, input(R"({"type":"input_image","image_url":"HTTP://example.com/a.png"})")) ==
          "url_source");
    CHECK(rule_of(p, ModelApi::openai_responses, input(R"({"type":"input_image","image_url":"DATA:image/png;base64,AA=="})")) ==
          "");
    CHECK(rule_of(p, ModelApi::openai_responses, input(R"({"type":"input_image","file_id":"file-1"})")) == "");
    CHECK(rule_of(p, ModelApi::openai_responses, input(R"({"type":"input_file","file_url":"https://example.com/a.pdf"})")) ==
          "url_source");
    CHECK(rule_of(p, ModelApi::openai_responses, input(R"({"type":"input_file","filename":"a.pdf","file_data":"data:application/pdf;base64,JVBE"})")) ==
          "");
    CHECK(rule_of(p, ModelApi::openai_responses,
                  R"({"model":"gpt-5","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"https://example.com/x.png"}]}]})") ==
          "url_source");
    CHECK(rule_of(p, ModelApi::openai_responses, codex_request) == "");

    // Chat Completions: image_url parts by URL.
    CHECK(rule_of(p, ModelApi::openai_chat,
                  R"({"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png","detail":"low"}}]}]})") ==
          "url_source");
    CHECK(rule_of(p, ModelApi::openai_chat, chat_request) == "");
}

TEST_CASE("model policy: provider-side context management and compaction") {
    ModelPolicy p;
    p.context_management = false;
    CHECK(rule_of(p, ModelApi::anthropic_messages,
                  R"({"model":"m","context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]}})") ==
          "context_management");
    CHECK(rule_of(p, ModelApi::anthropic_messages,
                  R"({"model":"m","context_management":{"edits":[{"type":"compact_20260112"}]}})") ==
          "context_management");
    CHECK(rule_of(p, ModelApi::openai_responses,
                  R"({"model":"gpt-5","context_management":[{"type":"compaction","compact_threshold":200000}]})") ==
          "context_management");
    CHECK(rule_of(p, ModelApi::openai_responses, R"({"model":"gpt-5","truncation":"auto"})") == "context_management");
    CHECK(rule_of(p, ModelApi::openai_responses, R"({"model":"gpt-5","truncation":"disabled"})") == "");
    CHECK(detail_of(p, ModelApi::openai_responses, R"({"model":"gpt-5","truncation":"auto"})") ==
          "truncation 'auto' lets the provider drop input items to fit its context; this grant allows no "
          "provider-side context management");
    CHECK(rule_of(p, ModelApi::anthropic_messages, claude_request) == "");
    CHECK(rule_of(p, ModelApi::openai_responses, codex_request) == "");
    // The standalone compaction routes, whatever the body.
    CHECK(check_model_route(p, "/v1/responses/compact"));
    CHECK(check_model_route(p, "/backend-api/codex/responses/compact?x=1")->rule == "context_management");
    CHECK_FALSE(check_model_route(p, "/v1/responses"));
    CHECK_FALSE(check_model_route(ModelPolicy{}, "/v1/responses/compact"));
}

TEST_CASE("model policy: anthropic-beta tokens against the operator's list") {
    ModelPolicy p;
    p.anthropic_betas = std::vector<std::string>{"claude-code-20250219", "fine-grained-tool-streaming-2025-05-14"};
    CHECK(p.strict());
    CHECK_FALSE(p.reads_body());  // the beta list needs the header only
    const std::string body = "{}";
    CHECK(rule_of(p, ModelApi::anthropic_messages, body, "") == "");
    CHECK(rule_of(p, ModelApi::anthropic_messages, body, "claude-code-20250219") == "");
    CHECK(rule_of(p, ModelApi::anthropic_messages, body, " claude-code-20250219 ,fine-grained-tool-streaming-2025-05-14,,") ==
          "");
    CHECK(rule_of(p, ModelApi::anthropic_messages, body, "claude-code-20250219,context-management-2025-06-27") ==
          "anthropic_beta");
    CHECK(detail_of(p, ModelApi::anthropic_messages, body, "claude-code-20250219,mcp-client-2025-04-04") ==
          "anthropic-beta 'mcp-client-2025-04-04' is not one this grant allows (claude-code-20250219, "
          "fine-grained-tool-streaming-2025-05-14)");
    // The token the gateway adds itself is always allowed; only that one.
    CHECK(rule_of(p, ModelApi::anthropic_messages, body, "oauth-2025-04-20,claude-code-20250219", "oauth-2025-04-20") == "");
    CHECK(rule_of(p, ModelApi::anthropic_messages, body, "oauth-2025-04-20", "") == "anthropic_beta");
    // Tokens compare without case, as the gateway's merge of the header does.
    CHECK(rule_of(p, ModelApi::anthropic_messages, body, "Claude-Code-20250219,OAUTH-2025-04-20", "oauth-2025-04-20") ==
          "");
    CHECK(rule_of(p, ModelApi::anthropic_messages, body, "claude-code-2025021", "") == "anthropic_beta");
    CHECK(rule_of(p, ModelApi::anthropic_count_tokens, body, "token-counting-2024-11-01") == "anthropic_beta");
    // The body is not read for the beta list alone, and OpenAI APIs carry no anthropic-beta.
    CHECK(rule_of(p, ModelApi::anthropic_messages, "not json", "claude-code-20250219") == "");
    CHECK(rule_of(p, ModelApi::openai_responses, body, "anything") == "");
    // An empty list: only the gateway's own token.
    ModelPolicy none;
    none.anthropic_betas = std::vector<std::string>{};
    CHECK(rule_of(none, ModelApi::anthropic_messages, body, "oauth-2025-04-20", "oauth-2025-04-20") == "");
    CHECK(rule_of(none, ModelApi::anthropic_messages, body, "claude-code-20250219", "oauth-2025-04-20") == "anthropic_beta");
}

TEST_CASE("model policy: an unreadable body is refused when a body rule is set") {
    ModelPolicy p;
    p.models = {"m"};
    for (const char* body : {"", "not json", "[1,2]", "\"m\"", "{\"model\":\"m\"", "null", "{\"model\":\"m\"} x"}) {
        CAPTURE(body);
        CHECK(rule_of(p, ModelApi::anthropic_messages, body) == "unreadable_body");
        CHECK(rule_of(p, ModelApi::openai_responses, body) == "unreadable_body");
        CHECK(rule_of(p, ModelApi::openai_chat, body) == "unreadable_body");
    }
    CHECK(detail_of(p, ModelApi::anthropic_messages, "[") ==
          "the request body is not a JSON object; this grant's policy reads every model request");
    CHECK(rule_of(p, ModelApi::anthropic_messages, std::string(kMaxPolicyBodyBytes + 1, ' ')) == "unreadable_body");
    // A route that is not a model API is not the policy's.
    CHECK(rule_of(p, ModelApi::none, "not json") == "");
}

TEST_CASE("model policy: deep nesting is walked without recursion") {
    ModelPolicy p;
    p.url_sources = false;
    // 20000 nested tool_results around a URL image.
    std::string body = R"({"model":"m","messages":[{"role":"user","content":[)";
    const int depth = 20000;
    for (int i = 0; i < depth; ++i) body += R"({"type":"tool_result","tool_use_id":"t","content":[)";
    body += R"({"type":"image","source":{"type":"url","url":"https://example.com/a.png"}})";
    for (int i = 0; i < depth; ++i) body += "]}";
    body += "]}]}";
    CHECK(rule_of(p, ModelApi::anthropic_messages, body) == "url_source");
}

TEST_CASE("model policy: control bytes and long values in details are shown safely") {
    ModelPolicy p;
    p.models = {"m"};
    auto d = detail_of(p, ModelApi::anthropic_messages, R"({"model":"a\nb\u0000c)" + std::string(200, 'x') + R"("})");
    CHECK(d.find('\n') == std::string::npos);
    CHECK(d.find('\0') == std::string::npos);
    CHECK(d.rfind("model 'a?b?c", 0) == 0);
    CHECK(d.find("...'") != std::string::npos);
    CHECK(d.size() < 200);
}

TEST_CASE("model policy: URL sources in a block given alone as an object, and in prompt variables") {
    ModelPolicy p;
    p.url_sources = false;
    const char* url_image = R"({"type":"image","source":{"type":"url","url":"https://x/a.png"}})";
    const std::string m = R"({"model":"m","max_tokens":1,)";
    // Anthropic: content, tool_result content and system as one object; messages as one object.
    for (const std::string& body :
         {m + R"("messages":[{"role":"user","content":)" + url_image + "}]}",
          m + R"("messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":)" + url_image +
              "}]}]}",
          m + R"("system":)" + url_image + R"(,"messages":[]})",
          m + R"("messages":{"role":"user","content":[)" + url_image + "]}}"}) {
        CAPTURE(body);
        CHECK(rule_of(p, ModelApi::anthropic_messages, body) == "url_source");
    }
    // Responses: input as one item; prompt variables carrying input parts.
    CHECK(rule_of(p, ModelApi::openai_responses,
                  R"({"model":"m","input":{"role":"user","content":[{"type":"input_image","image_url":"https://x/a.png"}]}})") ==
          "url_source");
    CHECK(rule_of(p, ModelApi::openai_responses,
                  R"({"model":"m","prompt":{"id":"pmpt_1","variables":{"pic":{"type":"input_image","image_url":"https://x/a.png"}}}})") ==
          "url_source");
    CHECK(rule_of(p, ModelApi::openai_responses,
                  R"({"model":"m","prompt":{"id":"pmpt_1","variables":{"doc":{"type":"input_file","file_url":"https://x/a.pdf"}}}})") ==
          "url_source");
    CHECK(rule_of(p, ModelApi::openai_responses,
                  R"({"model":"m","prompt":{"id":"pmpt_1","variables":{"name":"text is fine"}}})") == "");
    // Chat: content as one part.
    CHECK(rule_of(p, ModelApi::openai_chat,
                  R"({"model":"m","messages":[{"role":"user","content":{"type":"image_url","image_url":{"url":"https://x/a.png"}}}]})") ==
          "url_source");
}
