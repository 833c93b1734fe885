#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "base/glob.hpp"
#include "mcp/policy.hpp"

using namespace corral::mcp;
using corral::glob_match;
using json = nlohmann::json;

namespace {

Constraint path_under(const char* ptr, const char* root) {
    Constraint c;
    c.pointer = ptr;
    c.kind = ConstraintKind::path_under;
    c.root = root;
    return c;
}

Constraint range(const char* ptr, double lo, double hi, bool integer = false) {
    Constraint c;
    c.pointer = ptr;
    c.kind = ConstraintKind::range;
    c.min = lo;
    c.max = hi;
    c.integer = integer;
    return c;
}

// fs: read_file under /workspace, write_file denied, search with a bounded limit,
// delete_* needs approval, and *.env never readable.
Policy fs_policy() {
    Policy p;
    p.servers = {"fs", "web"};
    Constraint env;
    env.pointer = "/path";
    env.kind = ConstraintKind::glob;
    env.pattern = "*.env";
    Constraint mode;
    mode.pointer = "/mode";
    mode.kind = ConstraintKind::one_of;
    mode.choices = {"text", "lines"};
    p.rules = {
        {"1", "fs", "read_file", Action::allow, {path_under("/path", "/workspace")}},
        {"2", "fs", "read_file", Action::deny, {env}},
        {"3", "fs", "write_file", Action::deny, {}},
        {"4", "fs", "search", Action::allow, {range("/limit", 1, 100, true), mode}},
        {"5", "fs", "delete_*", Action::approval, {}},
        {"6", "fs", "delete_*", Action::allow, {}},
    };
    std::vector<std::string> errors = validate_rules(p);
    REQUIRE(errors.empty());
    return p;
}

Reason policy_refusal(const Policy& p, const char* tool, const json& args, const char* server = "fs") {
    Decision d = decide(p, server, tool, args);
    REQUIRE(!d.allowed());
    REQUIRE(d.denial);
    CHECK(!d.denial->detail.empty());
    return d.denial->reason;
}

}  // namespace

TEST_CASE("glob: * spans anything, ? one byte, the rest literal") {
    CHECK(glob_match("*", ""));
    CHECK(glob_match("read_*", "read_file"));
    CHECK(glob_match("*.env", "/a/b/.env"));
    CHECK(glob_match("a?c", "abc"));
    CHECK(!glob_match("a?c", "ac"));
    CHECK(!glob_match("read_*", "xread_file"));
    CHECK(glob_match("*a*b*c", "xxaxxbxxc"));
    CHECK(!glob_match("*a*b*c", "xxaxxcxxb"));
    // A '*' in the text is no reason to stop expanding the pattern's '*'.
    CHECK(glob_match("a*", "a*b"));
    CHECK(glob_match("*", "*x"));
    CHECK(glob_match("a?", "a*"));
}

TEST_CASE("policy: an allowed call with allowed arguments is allowed, naming its rule") {
    Policy p = fs_policy();
    Decision d = decide(p, "fs", "read_file", {{"path", "/workspace/src/a.cpp"}});
    CHECK(d.allowed());
    CHECK(d.rule == "1");
    CHECK(decide(p, "fs", "read_file", {{"path", "src/../b.txt"}}).allowed());  // relative: under the root
    CHECK(decide(p, "fs", "search", {{"limit", 10}, {"mode", "text"}}).allowed());
}

TEST_CASE("policy: unknown tool, unknown server, and a denied tool are refused (default deny, deny wins)") {
    Policy p = fs_policy();
    CHECK(policy_refusal(p, "exec", json::object()) == Reason::unknown_tool);
    CHECK(policy_refusal(p, "read_file", {{"path", "/workspace/a"}}, "other") == Reason::unknown_server);
    CHECK(policy_refusal(p, "write_file", {{"path", "/workspace/a"}}) == Reason::tool_denied);
    CHECK(policy_refusal(p, "read_file", {{"path", "/workspace/.env"}}) == Reason::argument_denied);  // deny beats rule 1
    CHECK(policy_refusal(p, "delete_file", json::object()) == Reason::approval_required);
    Decision d = decide(p, "fs", "delete_file", json::object());
    CHECK(d.action == Action::approval);
    CHECK(d.rule == "5");
}

TEST_CASE("policy: path traversal, NUL, backslashes and look-alike slashes are refused") {
    Policy p = fs_policy();
    for (const std::string& bad : std::vector<std::string>{"/workspace/../etc/passwd", "../../etc/passwd", "/workspace/a/../../etc", "/etc/passwd",
                                  "/workspaces/a", std::string("/workspace/a\0b", 14), "/workspace\\..\\etc", "..\\etc",
                                  "/workspace/\u2215etc", "/workspace/..\uFF0Fetc", "/workspace/a\u2044b", "/workspace/\uFF0E\uFF0E/x",
                                  "/workspace/a\nb", ""}) {
        INFO(bad);
        CHECK(policy_refusal(p, "read_file", {{"path", bad}}) == Reason::argument_denied);
    }
    CHECK(policy_refusal(p, "read_file", {{"path", 5}}) == Reason::argument_denied);
    CHECK(policy_refusal(p, "read_file", json::object()) == Reason::argument_denied);  // missing argument
}

TEST_CASE("policy: numbers given as strings, out-of-range and non-whole numbers are refused") {
    Policy p = fs_policy();
    CHECK(policy_refusal(p, "search", {{"limit", "10"}, {"mode", "text"}}) == Reason::argument_denied);
    Decision d = decide(p, "fs", "search", {{"limit", "10"}, {"mode", "text"}});
    CHECK(d.denial->detail.find("a number is required") != std::string::npos);
    CHECK(policy_refusal(p, "search", {{"limit", 0}, {"mode", "text"}}) == Reason::argument_denied);
    CHECK(policy_refusal(p, "search", {{"limit", 101}, {"mode", "text"}}) == Reason::argument_denied);
    CHECK(policy_refusal(p, "search", {{"limit", 2.5}, {"mode", "text"}}) == Reason::argument_denied);
    CHECK(policy_refusal(p, "search", {{"limit", 5}, {"mode", "raw"}}) == Reason::argument_denied);
    CHECK(policy_refusal(p, "search", {{"limit", true}, {"mode", "text"}}) == Reason::argument_denied);
}

TEST_CASE("policy: exact and regex constraints; a deny that cannot check its value fails closed") {
    Policy p;
    p.servers = {"web"};
    Constraint host;
    host.pointer = "/url";
    host.kind = ConstraintKind::regex;
    host.pattern = "https://docs\\.example\\.org/.*";
    Constraint exact;
    exact.pointer = "/method";
    exact.kind = ConstraintKind::exact;
    exact.value = "GET";
    Constraint bad_port = range("/port", 0, 1023);
    p.rules = {{"a", "web", "fetch", Action::allow, {host, exact}}, {"d", "web", "fetch", Action::deny, {bad_port}}};
    REQUIRE(validate_rules(p).empty());
    CHECK(decide(p, "web", "fetch", {{"url", "https://docs.example.org/x"}, {"method", "GET"}}).allowed());
    CHECK(policy_refusal(p, "fetch", {{"url", "https://docs.example.org.evil/x"}, {"method", "GET"}}, "web") ==
          Reason::argument_denied);
    CHECK(policy_refusal(p, "fetch", {{"url", "https://docs.example.org/x"}, {"method", "POST"}}, "web") ==
          Reason::argument_denied);
    CHECK(policy_refusal(p, "fetch", {{"url", std::string(5000, 'a')}, {"method", "GET"}}, "web") == Reason::argument_denied);
    // the deny on /port: a string port cannot be checked, so the deny applies
    CHECK(policy_refusal(p, "fetch", {{"url", "https://docs.example.org/x"}, {"method", "GET"}, {"port", "80"}}, "web") ==
          Reason::argument_denied);
    CHECK(decide(p, "web", "fetch", {{"url", "https://docs.example.org/x"}, {"method", "GET"}, {"port", 8080}})
              .allowed());
}

TEST_CASE("policy: a batch with one denied call is denied whole") {
    Policy p = fs_policy();
    auto r = read_message(
        R"([{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/workspace/a"}}},
            {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/workspace/a"}}}])",
        Era::sessions_2025_11_25, {});
    REQUIRE(r.ok());
    Decision d = decide_messages(p, "fs", r.messages);
    REQUIRE(!d.allowed());
    CHECK(d.denial->reason == Reason::batch_denied);
    CHECK(d.denial->detail.find("write_file") != std::string::npos);
    r.messages.pop_back();
    CHECK(decide_messages(p, "fs", r.messages).allowed());
}

TEST_CASE("policy: may_allow shows what an allow or approval rule names and no unconditional deny covers") {
    Policy p = fs_policy();
    CHECK(may_allow(p, "fs", "read_file"));
    CHECK(may_allow(p, "fs", "search"));
    CHECK(!may_allow(p, "fs", "write_file"));
    CHECK(may_allow(p, "fs", "delete_file"));  // once a person approves the call
    CHECK(!may_allow(p, "fs", "exec"));
    CHECK(!may_allow(p, "nope", "read_file"));
}

TEST_CASE("validate_rules: unknown server, unmatchable rules and bad constraints are errors") {
    Policy p;
    p.servers = {"fs"};
    Constraint bad_re;
    bad_re.pointer = "/q";
    bad_re.kind = ConstraintKind::regex;
    bad_re.pattern = "(";
    Constraint empty_enum;
    empty_enum.pointer = "/m";
    empty_enum.kind = ConstraintKind::one_of;
    Constraint bad_ptr = range("q", 0, 1);
    p.rules = {{"r1", "filesystem", "read", Action::allow, {}},
               {"r2", "fs", "read file", Action::allow, {}},
               {"r3", "fs", "read", Action::allow, {bad_re}},
               {"r4", "fs", "read", Action::allow, {empty_enum}},
               {"r5", "fs", "read", Action::allow, {range("/n", 5, 1)}},
               {"r6", "fs", "read", Action::allow, {path_under("/p", "work")}},
               {"r7", "fs", "read", Action::allow, {path_under("/p", "/workspace/../etc")}},
               {"r8", "fs", "read", Action::allow, {bad_ptr}}};
    auto errors = validate_rules(p);
    REQUIRE(errors.size() == 8);
    CHECK(errors[0].find("unknown server \"filesystem\" (this worker has: fs)") != std::string::npos);
    for (std::size_t i = 0; i < errors.size(); ++i) CHECK(errors[i].find("rule r" + std::to_string(i + 1)) == 0);
}

TEST_CASE("validate_rules: with a known input schema, constraints on missing or mistyped arguments are errors") {
    Policy p;
    p.servers = {"fs"};
    p.rules = {{"ok", "fs", "read_file", Action::allow, {path_under("/path", "/workspace")}},
               {"missing", "fs", "read_file", Action::allow, {path_under("/file", "/workspace")}},
               {"typed", "fs", "read_file", Action::allow, {range("/path", 0, 1)}},
               {"nested", "fs", "search", Action::allow, {range("/opts/limit", 0, 9)}},
               {"none", "fs", "exec*", Action::allow, {}}};
    KnownSchemas schemas;
    schemas["fs"]["read_file"] = {{"type", "object"}, {"properties", {{"path", {{"type", "string"}}}}}};
    schemas["fs"]["search"] = {{"type", "object"},
                               {"properties", {{"opts", {{"type", "object"}, {"properties", {{"max", {{"type", "integer"}}}}}}}}}};
    auto errors = validate_rules(p, schemas);
    REQUIRE(errors.size() == 4);
    CHECK(errors[0].find("rule missing: constrains /file") == 0);
    CHECK(errors[1].find("rule typed:") == 0);
    CHECK(errors[1].find("declares it string") != std::string::npos);
    CHECK(errors[2].find("rule nested: constrains /opts/limit") == 0);
    CHECK(errors[3].find("rule none: tool \"exec*\" matches no tool") == 0);
}
