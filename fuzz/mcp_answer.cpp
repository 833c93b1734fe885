// Fuzz target: what the gateway does with an MCP server's answer before the
// box sees it (gateway/mcp_response.*: govern_answer), on any body.
// Input: [content-type selector][status selector][body].
// The box asked one batch: a tools/list (id 1) and a tools/call of `echo`
// (id 2). What must hold for every input:
//  - governing never throws and is deterministic;
//  - no secret the gateway holds reaches the box, in any answer;
//  - the box gets one outcome per request it sent, with a sha256 digest
//    whenever a result came back;
//  - an answer that passed (not withheld) of a JSON type is JSON-RPC the
//    strict reader accepts; a withheld one says why;
//  - the answer to the box's tools/list, when passed, lists no tool the
//    policy cannot allow;
//  - a passed 2xx JSON answer's responses each answer a request of the box,
//    once (or are errors with a null id).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/mcp_endpoint.hpp"
#include "gateway/mcp_response.hpp"
#include "mcp/message.hpp"
#include "mcp/strict_json.hpp"

using namespace corral;
using json = nlohmann::json;

namespace {

const std::string kSecret = "sk-fuzz-secret-0123456789abcdef";

mcp::ToolsConfig answer_tools() {
    mcp::ToolsConfig t;
    mcp::Server s;
    s.name = "s";
    mcp::HttpServer h;
    h.url = "https://mcp.example.com/mcp";
    h.host = "mcp.example.com";
    h.path = "/mcp";
    s.transport = h;
    t.servers.emplace("s", s);
    t.policy.servers = {"s"};
    mcp::Rule allow;
    allow.name = "allow echo";
    allow.server = "s";
    allow.tool = "echo";
    allow.action = mcp::Action::allow;
    t.policy.rules.push_back(allow);
    return t;
}

const std::vector<mcp::Message>& box_requests() {
    static const std::vector<mcp::Message> requests = [] {
        const std::string body = R"([{"jsonrpc":"2.0","id":1,"method":"tools/list"},)"
                                 R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}])";
        auto r = mcp::read_message(body, mcp::Era::sessions_2025_11_25, {});
        if (!r.ok()) std::abort();
        return r.messages;
    }();
    return requests;
}

// A passed response answers a request of the box (id 1 or 2), at most once,
// or is an error with a null id: any other would dodge its request's
// governing (answers_own_request, gateway/mcp_response.cpp).
void check_response_ids(const json& doc) {
    std::vector<json> seen;
    auto check = [&](const json& m) {
        if (!m.is_object() || !m.contains("id") || m.contains("method")) return;
        const json& id = m["id"];
        if (id.is_null() && m.contains("error") && !m.contains("result")) return;
        if (id != json(1) && id != json(2)) std::abort();
        for (const auto& s : seen)
            if (s == id) std::abort();
        seen.push_back(id);
    };
    if (doc.is_array())
        for (const auto& m : doc) check(m);
    else
        check(doc);
}

// The answer to the box's tools/list (id 1) lists only what the policy allows.
void check_listed_tools(const json& message) {
    if (!message.is_object() || !message.contains("result") || message.value("id", json()) != json(1)) return;
    const json& result = message["result"];
    if (!result.is_object() || !result.contains("tools") || !result["tools"].is_array()) return;
    for (const auto& tool : result["tools"])
        if (!tool.is_object() || tool.value("name", "") != "echo") std::abort();
}

void check_answer(const gateway::McpAnswer& a) {
    if (a.body.find(kSecret) != std::string::npos) std::abort();
    if (a.outcomes.size() != box_requests().size()) std::abort();
    for (const auto& o : a.outcomes)
        if (o.result_bytes > 0 && o.result_digest.rfind("sha256:", 0) != 0) std::abort();
    if (!a.withheld.empty() || a.content_type.find("application/json") == std::string::npos) return;
    auto parsed = mcp::parse_mcp_json(a.body);
    if (!parsed.ok()) return;  // a non-2xx status passes its (scrubbed) body as it came
    const json& doc = parsed.value;
    if (a.status >= 200 && a.status < 300) check_response_ids(doc);
    if (doc.is_array())
        for (const auto& m : doc) check_listed_tools(m);
    else
        check_listed_tools(doc);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    static const char* const types[] = {"application/json", "text/event-stream", "application/json; charset=utf-8",
                                        "text/plain"};
    static const int statuses[] = {200, 200, 202, 404};
    static gateway::McpTools tools(answer_tools());
    static const auto patterns = tools.scrub_patterns({{"fuzz", kSecret}});

    gateway::McpUpstreamAnswer in;
    in.content_type = types[data[0] % 4];
    in.status = statuses[data[1] % 4];
    in.body.assign(reinterpret_cast<const char*>(data) + 2, size - 2);
    in.oversize = (data[0] & 0x80) != 0;
    const std::string server = "s";
    const gateway::McpAnswerContext ctx{server, box_requests(), true, (data[1] & 0x80) != 0, 1 << 20, patterns};
    check_answer(gateway::govern_answer(in, ctx, tools));
    return 0;
}
