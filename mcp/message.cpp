// mcp/message.cpp — the JSON-RPC and MCP shape checks, then the era's rules.
#include "mcp/message.hpp"

#include <cctype>
#include <set>

namespace corral::mcp {
namespace {

using json = nlohmann::json;

Denial invalid(std::string detail) { return Denial{Reason::invalid_request, "", std::move(detail)}; }

std::optional<Denial> read_id(const json& m, Message& out) {
    if (!m.contains("id")) return std::nullopt;
    const json& id = m["id"];
    if (!id.is_string() && !id.is_number_integer())
        return invalid("\"id\" must be a string or an integer, not " + std::string(id.type_name()));
    out.id = id;
    return std::nullopt;
}

std::optional<Denial> read_tool_call(Message& out) {
    const json& p = out.params;
    if (!p.contains("name") || !p["name"].is_string()) return invalid("tools/call needs params.name, a string");
    const std::string name = p["name"];
    if (!valid_tool_name(name))
        return invalid("tool name " + json_quoted(name) + " is not 1..128 of A-Z a-z 0-9 _ . -");
    ToolCall call{name, json::object()};
    if (p.contains("arguments")) {
        if (!p["arguments"].is_object()) return invalid("tools/call params.arguments must be an object");
        call.arguments = p["arguments"];
    }
    out.tool_call = std::move(call);
    return std::nullopt;
}

std::optional<Denial> read_response(const json& m) {
    const bool result = m.contains("result"), error = m.contains("error");
    if (result == error) return invalid("a response has exactly one of \"result\" and \"error\"");
    if (error) {
        const json& e = m["error"];
        if (!e.is_object() || !e.contains("code") || !e["code"].is_number_integer() || !e.contains("message") ||
            !e["message"].is_string())
            return invalid("\"error\" must be an object with an integer \"code\" and a string \"message\"");
    }
    return std::nullopt;
}

// One element of the body: a JSON-RPC 2.0 object as MCP uses it.
std::optional<Denial> read_one(json& m, Message& out) {
    static const std::set<std::string> known = {"jsonrpc", "id", "method", "params", "result", "error"};
    if (!m.is_object()) return invalid("a message must be a JSON object, not " + std::string(m.type_name()));
    for (const auto& [k, v] : m.items())
        if (!known.count(k)) return invalid("unknown member " + json_quoted(k));
    if (auto d = read_id(m, out)) return d;
    if (!m.contains("jsonrpc") || m["jsonrpc"] != "2.0") return invalid("\"jsonrpc\" must be \"2.0\"");
    if (!m.contains("method")) {
        out.kind = Kind::response;
        if (!m.contains("id")) return invalid("a response needs an \"id\"");
        if (m.contains("params")) return invalid("a response has no \"params\"");
        return read_response(m);
    }
    if (m.contains("result") || m.contains("error")) return invalid("a request has no \"result\" or \"error\"");
    if (!m["method"].is_string() || m["method"].get<std::string>().empty())
        return invalid("\"method\" must be a non-empty string");
    out.method = m["method"];
    out.kind = m.contains("id") ? Kind::request : Kind::notification;
    if (auto p = m.find("params"); p != m.end()) {
        if (!p->is_object()) return invalid("\"params\" must be an object");
        out.params = std::move(*p);  // the element is read once: nothing looks at it again
    }
    if (out.method == "tools/call") {
        if (out.kind != Kind::request) return invalid("tools/call must be a request (with an \"id\")");
        return read_tool_call(out);
    }
    return std::nullopt;
}

// What Mcp-Name names for a method (2026-07-28), or nullopt if the method names nothing.
std::optional<std::string> named(const Message& m) {
    const char* key = m.method == "tools/call" || m.method == "prompts/get" ? "name"
                      : m.method == "resources/read"                       ? "uri"
                                                                           : nullptr;
    if (!key || !m.params.contains(key) || !m.params[key].is_string()) return std::nullopt;
    return m.params[key].get<std::string>();
}

Denial mismatch(std::string detail) { return Denial{Reason::header_mismatch, "", std::move(detail)}; }

std::optional<Denial> check_stateless(const ReadResult& r, const HttpHeaders& h) {
    if (r.batch) {
        if (h.mcp_method || h.mcp_name) return mismatch("Mcp-Method / Mcp-Name cannot describe a batch");
        for (const auto& m : r.messages)
            if (m.kind != Kind::response) return invalid("the 2026-07-28 revision sends requests one at a time");
        return std::nullopt;
    }
    const Message& m = r.messages.front();
    if (m.method == "initialize") return invalid("the 2026-07-28 revision has no initialize");
    if (m.kind == Kind::response) {
        if (h.mcp_method || h.mcp_name) return mismatch("a response carries no Mcp-Method / Mcp-Name");
        return std::nullopt;
    }
    if (!h.mcp_method) return mismatch("Mcp-Method header missing; the body's method is " + json_quoted(m.method));
    if (*h.mcp_method != m.method)
        return mismatch("Mcp-Method " + json_quoted(*h.mcp_method) + " but the body's method is " + json_quoted(m.method));
    const auto name = named(m);
    if (name && (!h.mcp_name || *h.mcp_name != *name))
        return mismatch(h.mcp_name ? "Mcp-Name " + json_quoted(*h.mcp_name) + " but the body names " + json_quoted(*name)
                                   : "Mcp-Name header missing; the body names " + json_quoted(*name));
    if (!name && h.mcp_name) return mismatch("Mcp-Name given but " + json_quoted(m.method) + " names nothing");
    return std::nullopt;
}

std::optional<Denial> check_sessions(const ReadResult& r, const HttpHeaders& h, const MessageLimits& lim) {
    bool init = false;
    for (const auto& m : r.messages) init = init || m.method == "initialize";
    if (init) {
        if (r.batch) return invalid("initialize cannot be part of a batch");
        if (r.messages.front().kind != Kind::request) return invalid("initialize must be a request");
        if (h.session_id) return invalid("initialize carries no Mcp-Session-Id; a session is already open");
        return std::nullopt;
    }
    if (lim.session_required && (!h.session_id || h.session_id->empty()))
        return invalid("Mcp-Session-Id header missing; this server gave the client a session");
    return std::nullopt;
}

}  // namespace

bool valid_tool_name(std::string_view name) {
    if (name.empty() || name.size() > 128) return false;
    for (unsigned char c : name)
        if (!std::isalnum(c) && c != '_' && c != '.' && c != '-') return false;
    return true;
}

ReadResult read_message(std::string_view body, Era era, const HttpHeaders& headers, const MessageLimits& limits) {
    ReadResult r;
    auto parsed = parse_mcp_json(body, limits.json);
    if (!parsed.ok()) {
        r.refusal = parsed.error;
        return r;
    }
    // The document is moved, never copied: a message's params are moved out
    // of it below.
    r.batch = parsed.value.is_array();
    json items = r.batch ? std::move(parsed.value) : json::array();
    if (!r.batch) items.push_back(std::move(parsed.value));
    if (items.empty()) r.refusal = invalid("an empty batch");
    else if (items.size() > limits.max_batch)
        r.refusal = Denial{Reason::oversize, "",
                           std::to_string(items.size()) + " messages in a batch; at most " +
                               std::to_string(limits.max_batch)};
    for (std::size_t i = 0; !r.refusal && i < items.size(); ++i) {
        Message m;
        if (auto d = read_one(items[i], m)) {
            if (r.batch) d->detail = "batch item " + std::to_string(i) + ": " + d->detail;
            r.refusal = d;
            if (!r.batch) r.refusal_id = m.id;
        } else {
            r.messages.push_back(std::move(m));
        }
    }
    if (r.refusal) {
        r.messages.clear();
        return r;
    }
    auto d = era == Era::stateless_2026_07_28 ? check_stateless(r, headers) : check_sessions(r, headers, limits);
    if (d) {
        r.refusal = d;
        if (!r.batch) r.refusal_id = r.messages.front().id;
        r.messages.clear();  // fail closed: a refused read hands nothing on
    }
    return r;
}

}  // namespace corral::mcp
