// mcp/message.hpp — one MCP message (or a batch) read from a request body:
// JSON-RPC 2.0 request, notification or response; its id, method and params;
// for tools/call the tool's name and arguments. Both protocol eras:
//  - 2025-11-25: sessions (initialize, then Mcp-Session-Id on every request);
//  - 2026-07-28 (stateless): no initialize; the HTTP headers Mcp-Method and
//    Mcp-Name must agree with the body, else JSON-RPC error -32020.
// Anything malformed is a refusal with its reason, never a pass-through.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "mcp/denial.hpp"
#include "mcp/strict_json.hpp"

namespace corral::mcp {

enum class Era { sessions_2025_11_25, stateless_2026_07_28 };
enum class Kind { request, notification, response };

struct ToolCall {
    std::string name;
    nlohmann::json arguments = nlohmann::json::object();
};

struct Message {
    Kind kind = Kind::request;
    nlohmann::json id;  // string or integer; null for a notification
    std::string method;  // empty for a response
    nlohmann::json params = nlohmann::json::object();
    std::optional<ToolCall> tool_call;  // method "tools/call"
};

struct HttpHeaders {
    std::optional<std::string> mcp_method;  // Mcp-Method (2026-07-28)
    std::optional<std::string> mcp_name;    // Mcp-Name (2026-07-28)
    std::optional<std::string> session_id;  // Mcp-Session-Id (2025-11-25)
};

struct MessageLimits {
    JsonLimits json;
    std::size_t max_batch = 64;
    // 2025-11-25: whether the server gave this client a session id, so every
    // request but initialize must carry one.
    bool session_required = false;
};

struct ReadResult {
    bool batch = false;
    std::vector<Message> messages;  // empty when refused
    std::optional<Denial> refusal;
    nlohmann::json refusal_id;  // the id to answer the refusal with (null if unknown)
    bool ok() const { return !refusal; }
};

ReadResult read_message(std::string_view body, Era era, const HttpHeaders& headers,
                        const MessageLimits& limits = {});

// MCP tool names: 1..128 of [A-Za-z0-9_.-].
bool valid_tool_name(std::string_view name);

}  // namespace corral::mcp
