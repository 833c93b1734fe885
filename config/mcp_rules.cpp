// [[mcp.rules]] (each rule and its argument constraints), [mcp.pins],
// [mcp.budget], and what is checked across files: the merge of a worker's
// tools over the organisation's and mcp::validate_rules on the result.
#include <cmath>

#include "config/gateway_values.hpp"
#include "config/mcp_config.hpp"
#include "mcp/policy.hpp"

namespace corral::config {
namespace mcp_rules_toml {
namespace {

using json = nlohmann::json;

constexpr const char* kActionAllowed = "allow | deny | approval";
constexpr const char* kToolAllowed = "a glob over tool names: 1..128 of A-Z a-z 0-9 _ . - and the wildcards * ?";
constexpr const char* kKindsAllowed =
    "exactly one of exact | one_of | glob | regex | min and/or max (with integer) | path_under";
constexpr const char* kWhenAllowed =
    "an array of tables { pointer = \"/name\", and " 
    "exactly one of exact | one_of | glob | regex | min and/or max (with integer) | path_under }";
constexpr std::int64_t kMaxCount = std::int64_t{1} << 53;
constexpr std::size_t kMaxPattern = 1024;

// A TOML value as the JSON value an argument is compared with; none for a
// date or time (JSON has none).
std::optional<json> json_of(const toml::value& v) {
    if (v.is_boolean()) return json(v.as_boolean());
    if (v.is_integer()) return json(v.as_integer());
    if (v.is_floating()) return std::isfinite(v.as_floating()) ? std::optional<json>(json(v.as_floating())) : std::nullopt;
    if (v.is_string()) return json(v.as_string().str);
    if (v.is_array()) {
        json a = json::array();
        for (const auto& item : v.as_array()) {
            auto j = json_of(item);
            if (!j) return std::nullopt;
            a.push_back(std::move(*j));
        }
        return a;
    }
    if (v.is_table()) {
        json o = json::object();
        for (const auto& [k, item] : v.as_table()) {
            auto j = json_of(item);
            if (!j) return std::nullopt;
            o[k] = std::move(*j);
        }
        return o;
    }
    return std::nullopt;
}

constexpr const char* kJsonValueAllowed = "a string, number, boolean, array or table (no dates, no inf or nan)";

// The kind's own keys; false when a value is wrong (recorded).
bool constraint_value(Table& s, mcp::Constraint& con) {
    using K = mcp::ConstraintKind;
    Checker& c = s.checker();
    const std::size_t before = c.count();
    if (const auto* v = s.find("exact")) {
        con.kind = K::exact;
        if (auto j = json_of(*v)) con.value = std::move(*j);
        else s.bad("exact", kJsonValueAllowed);
    } else if (const auto* choices = s.find("one_of")) {
        con.kind = K::one_of;
        if (!choices->is_array()) return s.bad("one_of", std::string("an array of values, each ") + kJsonValueAllowed);
        std::size_t i = 0;
        for (const auto& item : choices->as_array()) {
            if (auto j = json_of(item)) con.choices.push_back(std::move(*j));
            else c.bad_value(item, s.key("one_of") + "[" + std::to_string(i) + "]", kJsonValueAllowed);
            ++i;
        }
    } else if (s.has("glob") || s.has("regex")) {
        con.kind = s.has("glob") ? K::glob : K::regex;
        const char* k = s.has("glob") ? "glob" : "regex";
        const char* allowed = s.has("glob") ? "a glob (* any run, ? one character) of at most 1024 bytes"
                                            : "an ECMAScript regex of at most 1024 bytes";
        // Bounded: std::regex compiles recursively, a deep enough pattern overflows the stack.
        if (auto p = s.string(k, allowed); p && p->size() > kMaxPattern) s.bad(k, allowed);
        else if (p) con.pattern = *p;
    } else if (s.has("path_under")) {
        con.kind = K::path_under;
        if (auto r = s.string("path_under", "an absolute, normalised directory (\"/workspace\")")) con.root = *r;
    } else {
        con.kind = K::range;
        auto number = [&](const char* k, std::optional<double>& out) {
            const auto* num = s.find(k);
            if (!num) return;
            if (num->is_integer()) out = static_cast<double>(num->as_integer());
            else if (num->is_floating() && std::isfinite(num->as_floating())) out = num->as_floating();
            else s.bad(k, "a number");
        };
        number("min", con.min);
        number("max", con.max);
        if (auto i = s.boolean("integer")) con.integer = *i;
    }
    return c.count() == before;
}

// The message of a validate_rules error about rule `name`, without the
// "rule NAME: " (or "rule NAME, POINTER: ") it starts with.
std::string without_rule_name(const std::string& e, const std::string& name) {
    const std::string head = "rule " + name;
    if (e.compare(0, head.size(), head) != 0) return e;
    std::string rest = e.substr(head.size());
    if (rest.rfind(": ", 0) == 0 || rest.rfind(", ", 0) == 0) rest = rest.substr(2);
    return rest;
}

// mcp::validate_rules on one rule, its server taken as known: the problems
// of the rule itself (its tool glob, its constraints), compiling its regexes.
std::vector<std::string> rule_problems(mcp::Rule& r) {
    mcp::Policy one;
    one.servers = {r.server};
    one.rules = {std::move(r)};
    auto problems = mcp::validate_rules(one);
    r = std::move(one.rules.front());
    for (auto& p : problems) p = without_rule_name(p, r.name);
    return problems;
}

std::optional<mcp::Constraint> parse_constraint(Checker& c, const toml::value& v, const std::string& prefix) {
    if (!v.is_table()) {
        c.bad_value(v, prefix, kWhenAllowed);
        return std::nullopt;
    }
    const std::size_t before = c.count();
    Table s(c, v, prefix, {"pointer", "exact", "one_of", "glob", "regex", "min", "max", "integer", "path_under"});
    mcp::Constraint con;
    if (auto p = s.required_string("pointer", "a JSON pointer into the call's arguments (\"/path\", \"/options/mode\")"))
        con.pointer = *p;
    std::vector<std::string> kinds;
    for (const char* k : {"exact", "one_of", "glob", "regex", "path_under"})
        if (s.has(k)) kinds.push_back(k);
    if (s.has("min") || s.has("max")) kinds.push_back("min/max");
    if (kinds.size() != 1) {
        c.note(v, prefix, (kinds.empty() ? std::string("no kind of constraint") : "the kinds " + join(kinds, " and ")) +
                              ", allowed: " + kKindsAllowed);
        return std::nullopt;
    }
    if (s.has("integer") && kinds.front() != "min/max")
        s.bad("integer", "only with min and/or max (a number range)");
    if (!constraint_value(s, con) || c.count() != before) return std::nullopt;
    mcp::Rule probe;
    probe.name = "constraint";
    probe.server = "s";
    probe.tool = "*";
    probe.when = {std::move(con)};
    for (const auto& p : rule_problems(probe)) c.note(v, prefix, p);
    if (c.count() != before) return std::nullopt;
    return std::move(probe.when.front());
}

std::optional<mcp::Rule> parse_rule(Checker& c, std::size_t index, const toml::value& v) {
    const std::string prefix = "mcp.rules[" + std::to_string(index) + "]";
    if (!v.is_table()) {
        c.bad_value(v, prefix, "a table: server, tool, action, when");
        return std::nullopt;
    }
    const std::size_t before = c.count();
    Table s(c, v, prefix, {"server", "tool", "action", "when", "approval_timeout"});
    mcp::Rule r;
    r.name = where_of(c.file(), v);
    if (auto server = s.required_string("server", "the name of a [mcp.servers.NAME]")) r.server = *server;
    const auto tool = s.required_string("tool", kToolAllowed);
    if (tool) r.tool = *tool;
    if (auto action = s.required_string("action", kActionAllowed)) {
        if (*action == "allow") r.action = mcp::Action::allow;
        else if (*action == "deny") r.action = mcp::Action::deny;
        else if (*action == "approval") r.action = mcp::Action::approval;
        else s.bad("action", kActionAllowed);
    }
    r.approval_timeout = approval_timeout_key(s, r.action == mcp::Action::approval, "action = \"approval\"");
    if (const auto* when = s.find("when")) {
        if (!when->is_array()) {
            s.bad("when", kWhenAllowed);
        } else {
            std::size_t i = 0;
            for (const auto& item : when->as_array())
                if (auto con = parse_constraint(c, item, s.key("when") + "[" + std::to_string(i++) + "]"))
                    r.when.push_back(std::move(*con));
        }
    }
    // The rule's own problems (its tool glob); its constraints are checked above.
    auto constraints = std::move(r.when);
    if (tool && !rule_problems(r).empty()) s.bad("tool", kToolAllowed);
    r.when = std::move(constraints);
    if (c.count() != before) return std::nullopt;
    return r;
}

bool valid_digest(const std::string& d) {
    constexpr std::string_view head = "sha256:";
    if (d.size() != head.size() + 64 || d.compare(0, head.size(), head) != 0) return false;
    for (std::size_t i = head.size(); i < d.size(); ++i)
        if (!((d[i] >= '0' && d[i] <= '9') || (d[i] >= 'a' && d[i] <= 'f'))) return false;
    return true;
}

// "SERVER/TOOL" keys of a table (pins, per-tool caps): each valid key's value
// handed to `take`, which records its own problems.
template <typename Take>
void each_tool_key(Checker& c, const toml::value& t, const std::string& prefix, mcp::ToolsConfig& out, Take take) {
    for (const auto& [k, vp] : in_file_order(t)) {
        const std::string key = prefix + "." + quote(k);
        if (!mcp_toml::valid_tool_key(k)) {
            c.bad(*vp, key, "the key " + quote(k), mcp_toml::tool_key_allowed);
        } else if (take(k, key, *vp)) {
            out.key_where[key] = where_of(c.file(), *vp);
        }
    }
}

// The server a "SERVER/TOOL" key names.
std::string server_of(const std::string& key_text) {
    const auto quote_at = key_text.find('"');
    const auto slash = key_text.find('/', quote_at);
    return key_text.substr(quote_at + 1, slash - quote_at - 1);
}

}  // namespace
}  // namespace mcp_rules_toml

namespace mcp_toml {

void check_rules(const toml::value& v, Checker& c, mcp::ToolsConfig& out) {
    if (!v.is_array()) {
        c.bad_value(v, "mcp.rules", "an array of tables ([[mcp.rules]]): server, tool, action, when");
        return;
    }
    std::size_t index = 0;
    for (const auto& item : v.as_array())
        if (auto r = mcp_rules_toml::parse_rule(c, index++, item)) out.policy.rules.push_back(std::move(*r));
}

void check_pins(const toml::value& v, Checker& c, mcp::ToolsConfig& out) {
    if (!v.is_table()) {
        c.bad_value(v, "mcp.pins", "a table of \"SERVER/TOOL\" = \"sha256:<64 hex>\"");
        return;
    }
    mcp_rules_toml::each_tool_key(c, v, "mcp.pins", out,
                                  [&](const std::string& k, const std::string& key, const toml::value& d) {
                                      if (!d.is_string() || !mcp_rules_toml::valid_digest(d.as_string().str))
                                          return c.bad_value(d, key, "\"sha256:\" and 64 lowercase hex digits "
                                                                     "(a digest corral mcp ls shows)");
                                      out.pins[k] = d.as_string().str;
                                      return true;
                                  });
}

void check_call_budgets(const toml::value& v, Checker& c, mcp::ToolsConfig& out) {
    if (!v.is_table()) {
        c.bad_value(v, "mcp.budget", "a table: tool_calls_per_run, tool_calls_per_worker, per_tool");
        return;
    }
    Table s(c, v, "mcp.budget", {"tool_calls_per_run", "tool_calls_per_worker", "per_tool"});
    const auto max = mcp_rules_toml::kMaxCount;
    if (auto n = s.integer("tool_calls_per_run", 1, max)) out.budgets.per_run = static_cast<std::uint64_t>(*n);
    if (auto n = s.integer("tool_calls_per_worker", 1, max)) out.budgets.per_worker = static_cast<std::uint64_t>(*n);
    const auto* per_tool = s.find("per_tool");
    if (!per_tool) return;
    if (!per_tool->is_table()) {
        s.bad("per_tool", "a table of \"SERVER/TOOL\" = calls per run (an integer 1.." + std::to_string(max) + ")");
        return;
    }
    mcp_rules_toml::each_tool_key(c, *per_tool, "mcp.budget.per_tool", out,
                                  [&](const std::string& k, const std::string& key, const toml::value& n) {
                                      if (!n.is_integer() || n.as_integer() < 1 || n.as_integer() > max)
                                          return c.bad_value(n, key, "an integer 1.." + std::to_string(max));
                                      out.budgets.per_tool[k] = static_cast<std::uint64_t>(n.as_integer());
                                      return true;
                                  });
}

}  // namespace mcp_toml

mcp::ToolsConfig merge_tools(const mcp::ToolsConfig& org, const mcp::ToolsConfig& worker) {
    mcp::ToolsConfig r = org;
    for (const auto& [name, server] : worker.servers) r.servers[name] = server;
    r.policy.servers.clear();
    for (const auto& [name, server] : r.servers) r.policy.servers.insert(name);
    r.policy.rules.insert(r.policy.rules.end(), worker.policy.rules.begin(), worker.policy.rules.end());
    for (const auto& [k, d] : worker.pins) r.pins[k] = d;
    for (const auto& [k, w] : worker.key_where) r.key_where[k] = w;
    if (worker.key_where.count("mcp.log_arguments")) r.log_arguments = worker.log_arguments;
    if (worker.budgets.per_run) r.budgets.per_run = worker.budgets.per_run;
    if (worker.budgets.per_worker) r.budgets.per_worker = worker.budgets.per_worker;
    for (const auto& [k, n] : worker.budgets.per_tool) r.budgets.per_tool[k] = n;
    return r;
}

void check_tools(mcp::ToolsConfig& tools, const std::string& worker, const std::string& only_file,
                 std::vector<Diagnostic>& errors) {
    auto keep = [&](Diagnostic d) {
        d.worker = worker;
        if (only_file.empty() || d.file == only_file) errors.push_back(std::move(d));
    };
    for (const auto& e : mcp::validate_rules(tools.policy)) {
        Diagnostic d;
        d.message = e;
        for (const auto& r : tools.policy.rules)
            if (e.rfind("rule " + r.name + ":", 0) == 0 || e.rfind("rule " + r.name + ",", 0) == 0) {
                mcp_toml::set_where(d, r.name);
                d.key = "mcp.rules";
                d.message = mcp_rules_toml::without_rule_name(e, r.name);
                break;
            }
        keep(std::move(d));
    }
    std::string known;
    for (const auto& s : tools.policy.servers) known += (known.empty() ? "" : " | ") + s;
    for (const auto& [key, where] : tools.key_where) {
        if (key.rfind("mcp.pins.", 0) != 0 && key.rfind("mcp.budget.per_tool.", 0) != 0) continue;
        const std::string server = mcp_rules_toml::server_of(key);
        if (tools.servers.count(server)) continue;
        Diagnostic d;
        d.form = Diagnostic::Form::value;
        mcp_toml::set_where(d, where);
        d.key = key;
        d.got = "a tool of server " + quote(server);
        d.allowed = "a tool of a server " + std::string(worker.empty() ? "org.toml defines" : "the worker has") + ": " +
                    (known.empty() ? std::string("(no [mcp.servers.NAME] defined)") : known);
        keep(std::move(d));
    }
}

}  // namespace corral::config
