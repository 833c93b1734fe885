#include "run/exec_protocol.hpp"

#include <nlohmann/json.hpp>

#include "base/parse.hpp"
#include "base/sys_error.hpp"

namespace corral::run {

using nlohmann::json;

namespace {

// At most 30 days: a deadline far beyond would overflow the steady clock.
constexpr long long kMaxMs = 30LL * 24 * 3600 * 1000;

std::optional<std::chrono::milliseconds> positive_ms(const json& j, const char* key) {
    if (!j.contains(key) || j[key].is_null()) return std::nullopt;
    if (!j[key].is_number_integer() || j[key].get<long long>() < 0 || j[key].get<long long>() > kMaxMs)
        throw UsageError(std::string(key) + ": expected a whole number of milliseconds, 0 to 30 days");
    return std::chrono::milliseconds(j[key].get<long long>());
}

}  // namespace

std::string exec_request_line(const ExecRequest& r) {
    json env = json::array();
    for (const auto& [k, v] : r.env) env.push_back(json::array({k, v}));
    json j{{"argv", r.argv},
           {"prompt", r.prompt ? json(*r.prompt) : json(nullptr)},
           {"role", std::string(supervisor::role_name(r.role))},
           {"env", env},
           {"cwd", r.cwd ? json(*r.cwd) : json(nullptr)},
           {"timeout_ms", r.timeout ? json(r.timeout->count()) : json(nullptr)},
           {"grace_ms", r.grace ? json(r.grace->count()) : json(nullptr)},
           {"tty", r.tty ? json{{"term", r.term}} : json(nullptr)},
           {"stdin", r.stdin}};
    try {
        return j.dump(-1, ' ', false, json::error_handler_t::strict) + "\n";
    } catch (const json::type_error&) {
        throw UsageError("an argument or --env value is not valid UTF-8; the session's protocol carries UTF-8 "
                         "text only (pass such names through a file or a script in the workspace)");
    }
}

std::string workspace_applied_line(const json& applied) {
    return json{{"workspace_applied", applied}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::optional<json> parse_workspace_applied_line(std::string_view line) {
    if (line.size() > kMaxExecLineBytes) return std::nullopt;  // parse_exec_request_line says why
    json j = json::parse(line, nullptr, false);
    if (!j.is_object() || j.size() != 1 || !j.contains("workspace_applied")) return std::nullopt;
    json a = std::move(j["workspace_applied"]);
    const bool ok = a.is_object() && a.contains("payload") && a["payload"].is_object() && a.contains("applied") &&
                    a["applied"].is_array() && a.contains("stamps") && a["stamps"].is_object() && a.contains("digest") &&
                    a["digest"].is_string();
    if (!ok) throw UsageError("workspace_applied request: expected payload (an object), applied (an array), stamps (an object), digest (a string)");
    for (const auto& p : a["applied"])
        if (!p.is_string()) throw UsageError("workspace_applied request: applied: expected paths (strings)");
    for (const auto& [path, s] : a["stamps"].items())
        if (!s.is_array() || s.size() != 2 || !s[0].is_number_integer() || !s[1].is_number_integer())
            throw UsageError("workspace_applied request: stamps." + path + ": expected [seconds, nanoseconds]");
    return a;
}

ExecRequest parse_exec_request_line(std::string_view line) {
    if (line.size() > kMaxExecLineBytes)
        throw UsageError("exec request: more than " + std::to_string(kMaxExecLineBytes / 1024) + " KiB");
    json j = json::parse(line, nullptr, false);
    if (!j.is_object()) throw UsageError("exec request: not a JSON object");
    ExecRequest r;
    if (j.contains("prompt") && !j["prompt"].is_null()) {
        if (!j["prompt"].is_string()) throw UsageError("exec request: prompt: expected a string (the agent's task)");
        r.prompt = j["prompt"].get<std::string>();
        if (r.prompt->find_first_not_of(" \t\r\n") == std::string::npos)
            throw UsageError("--prompt: empty (or only white space); the agent needs a task");
        if (r.prompt->find('\0') != std::string::npos)
            throw UsageError("--prompt: a NUL byte; allowed: text without NUL bytes");
    }
    if (!j.contains("argv") || !j["argv"].is_array() || (j["argv"].empty() && !r.prompt))
        throw UsageError("exec request: argv: expected a non-empty array of strings (the command)");
    if (r.prompt && !j["argv"].empty())
        throw UsageError("--prompt runs the worker's agent: give either --prompt or `-- CMD`, not both");
    for (const auto& a : j["argv"]) {
        if (!a.is_string()) throw UsageError("exec request: argv: expected strings only");
        r.argv.push_back(a.get<std::string>());
    }
    if (!r.argv.empty() && r.argv.front().empty()) throw UsageError("exec request: argv[0]: empty command name");
    if (j.contains("role") && !j["role"].is_string()) throw UsageError("--role: expected agent, service or verifier");
    const std::string role = j.value("role", std::string("agent"));
    auto parsed = supervisor::parse_role(role);
    if (!parsed) throw UsageError("--role " + role + ": expected agent, service or verifier");
    r.role = *parsed;
    if (r.prompt && r.role != supervisor::Role::agent)
        throw UsageError("--prompt runs the worker's agent CLI as the agent role; --role " + role + " cannot take it");
    if (j.contains("env") && !j["env"].is_null()) {
        if (!j["env"].is_array()) throw UsageError("exec request: env: expected an array of [K, V] pairs");
        for (const auto& kv : j["env"]) {
            if (!kv.is_array() || kv.size() != 2 || !kv[0].is_string() || !kv[1].is_string())
                throw UsageError("exec request: env: expected [K, V] pairs of strings");
            // The same rule as --env K=V.
            r.env.push_back(parse_env_pair(kv[0].get<std::string>() + "=" + kv[1].get<std::string>()));
        }
    }
    if (j.contains("cwd") && !j["cwd"].is_null()) {
        if (!j["cwd"].is_string() || j["cwd"].get<std::string>().empty() || j["cwd"].get<std::string>().front() != '/')
            throw UsageError("--cwd: expected an absolute path in the sandbox");
        r.cwd = j["cwd"].get<std::string>();
    }
    r.timeout = positive_ms(j, "timeout_ms");
    if (r.timeout && r.timeout->count() == 0) throw UsageError("--timeout: must be more than 0");
    r.grace = positive_ms(j, "grace_ms");
    if (j.contains("tty") && !j["tty"].is_null()) {
        if (!j["tty"].is_object() || (j["tty"].contains("term") && !j["tty"]["term"].is_string()))
            throw UsageError("exec request: tty: expected null or {\"term\": \"NAME\"}");
        if (r.prompt)
            throw UsageError("--tty with --prompt: the agent's one-shot task takes no terminal; "
                             "run `corral exec --tty ID -- CLAUDE-OR-CODEX` for an interactive agent");
        r.tty = true;
        r.term = j["tty"].value("term", std::string());
        if (r.term.size() > 256) throw UsageError("exec request: tty.term: longer than 256 bytes");
    }
    if (j.contains("stdin") && !j["stdin"].is_null()) {
        if (!j["stdin"].is_boolean()) throw UsageError("exec request: stdin: expected true or false");
        r.stdin = j["stdin"].get<bool>();
        if (r.stdin && r.tty) throw UsageError("--stdin with --tty: the terminal is CMD's stdin already");
    }
    return r;
}

std::string exec_answer_line(const ExecAnswer& a) {
    json j{{"exec", a.exec ? json(*a.exec) : json(nullptr)},
           {"status", a.status},
           {"outcome", supervisor::outcome_name(a.outcome)},
           {"messages", a.messages}};
    return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

ExecAnswer parse_exec_answer_line(std::string_view line) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("status") || !j["status"].is_number_integer())
        throw UsageError("the session's answer is not an exec answer");
    ExecAnswer a;
    if (j.contains("exec") && j["exec"].is_number_integer()) a.exec = j["exec"].get<int>();
    a.status = j["status"].get<int>();
    const auto outcome = supervisor::parse_outcome(j.value("outcome", std::string()));
    if (!outcome) throw UsageError("the session's answer is not an exec answer: unknown outcome");
    a.outcome = *outcome;
    if (j.contains("messages") && j["messages"].is_array())
        for (const auto& m : j["messages"])
            if (m.is_string()) a.messages.push_back(m.get<std::string>());
    return a;
}

}  // namespace corral::run
