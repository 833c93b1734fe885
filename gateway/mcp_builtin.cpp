// gateway/mcp_builtin.cpp — see mcp_builtin.hpp.
#include "gateway/mcp_builtin.hpp"

namespace corral::gateway {

using nlohmann::json;

namespace {

const json& report_tool() {
    static const json tool = {
        {"name", kReportOutcomeTool},
        {"description",
         "Report how your task ended, once, as your last action: completed (done and checked), failed (not done), "
         "or needs_review (done, but a person should look first). corral records it beside what the host saw; "
         "the host's evidence decides the run's outcome, and a report can make it worse, never better."},
        {"inputSchema",
         {{"type", "object"},
          {"properties",
           {{"status", {{"type", "string"}, {"enum", {"completed", "failed", "needs_review"}}}},
            {"summary", {{"type", "string"}, {"maxLength", kMaxReportSummary}, {"description", "what was done, briefly"}}}}},
          {"required", {"status", "summary"}},
          {"additionalProperties", false}}}};
    return tool;
}

json result(const json& id, json value) { return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(value)}}; }

json error(const json& id, int code, const std::string& message) {
    return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

// A tool result the model reads as text (isError for a refused report).
json text_result(const std::string& text, bool is_error) {
    return {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", is_error}};
}

json answer_one(const mcp::Message& m, const std::function<void(const approval::AgentReport&)>& take) {
    if (m.method == "initialize") {
        // The client's version when it gives one in the date form; this
        // server's answers are the same in every era it may ask for.
        std::string version = "2025-06-18";
        if (auto v = m.params.find("protocolVersion"); v != m.params.end() && v->is_string() && v->get<std::string>().size() == 10)
            version = v->get<std::string>();
        return result(m.id, {{"protocolVersion", version},
                             {"capabilities", {{"tools", json::object()}}},
                             {"serverInfo", {{"name", kBuiltinServer}, {"version", "1"}}}});
    }
    if (m.method == "ping") return result(m.id, json::object());
    if (m.method == "tools/list") return result(m.id, {{"tools", json::array({report_tool()})}});
    if (m.method == "tools/call" && m.tool_call && m.tool_call->name == kReportOutcomeTool) {
        auto read = read_report(m.tool_call->arguments);
        if (auto* why = std::get_if<std::string>(&read)) return result(m.id, text_result("not recorded: " + *why, true));
        const auto& report = std::get<approval::AgentReport>(read);
        take(report);
        return result(m.id, text_result(std::string("recorded: ") + approval::report_status_name(report.status) +
                                            ". The run's outcome is attested from what the host saw, with your report "
                                            "beside it.",
                                        false));
    }
    if (m.method == "tools/call") return error(m.id, -32602, "corral has no tool of that name; it has report_outcome");
    return error(m.id, -32601, "corral's built-in server has no method " + m.method);
}

}  // namespace

mcp::Rule builtin_rule() {
    mcp::Rule r;
    r.name = "corral (built-in)";
    r.server = std::string(kBuiltinServer);
    r.tool = std::string(kReportOutcomeTool);
    r.action = mcp::Action::allow;
    return r;
}

std::variant<approval::AgentReport, std::string> read_report(const json& arguments) {
    const std::string form = "expected {\"status\": \"completed\" | \"failed\" | \"needs_review\", \"summary\": \"...\"}";
    if (!arguments.is_object()) return "the arguments are not an object; " + form;
    for (const auto& [key, value] : arguments.items())
        if (key != "status" && key != "summary") return "unknown argument \"" + key.substr(0, 64) + "\"; " + form;
    auto status = arguments.find("status");
    auto summary = arguments.find("summary");
    if (status == arguments.end() || !status->is_string()) return "status is missing or not a string; " + form;
    auto parsed = approval::parse_report_status(status->get<std::string>());
    if (!parsed) return "status is not one of completed, failed, needs_review; " + form;
    if (summary == arguments.end() || !summary->is_string()) return "summary is missing or not a string; " + form;
    if (summary->get<std::string>().size() > kMaxReportSummary)
        return "summary is longer than " + std::to_string(kMaxReportSummary) + " bytes";
    return approval::AgentReport{*parsed, summary->get<std::string>()};
}

McpUpstreamAnswer answer_builtin(const mcp::ReadResult& read,
                                 const std::function<void(const approval::AgentReport&)>& take) {
    json answers = json::array();
    for (const auto& m : read.messages)
        if (m.kind == mcp::Kind::request) answers.push_back(answer_one(m, take));
    McpUpstreamAnswer a;
    if (answers.empty()) {  // notifications and responses only: accepted, nothing to say
        a.status = 202;
        return a;
    }
    a.status = 200;
    a.content_type = "application/json";
    a.body = read.batch ? answers.dump() : answers[0].dump();
    return a;
}

}  // namespace corral::gateway
