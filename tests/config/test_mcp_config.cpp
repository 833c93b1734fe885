// [mcp] of org.toml and worker.toml (config/mcp_config.hpp): every accepted
// shape read into mcp::ToolsConfig, the worker-wins merge, and every refused
// input as one Diagnostic naming FILE:LINE, the key and what is allowed,
// mcp::validate_rules' problems included.
#include <doctest/doctest.h>

#include <string>

#include "config/org_config.hpp"
#include "mcp/policy.hpp"
#include "tests/config/org_fixture.hpp"

using namespace corral;
using test::errors_of;
using test::OrgDir;

namespace {

bool mcp_has(const std::string& all, const std::string& needle) { return all.find(needle) != std::string::npos; }

const std::string kDigestA = "sha256:" + std::string(64, 'a');
const std::string kDigestB = "sha256:" + std::string(64, 'b');

const std::string kCredentials =
    "[credentials.github]\nkind = \"api_key\"\nenv = \"CORRAL_TEST_GH\"\n"       // 1-3
    "[credentials.search]\nkind = \"api_key\"\nenv = \"CORRAL_TEST_SEARCH\"\n";  // 4-6

// The shape docs/tools.md shows, with a rule of each constraint kind.
const std::string kOrgTools = kCredentials +
    "[mcp]\n"                                                                   // 7
    "log_arguments = false\n"                                                   // 8
    "[mcp.servers.files]\n"                                                     // 9
    "command = [\"/usr/bin/node\", \"/opt/mcp/fs/index.js\", \"/workspace\"]\n"  // 10
    "env = { LOG_LEVEL = \"info\" }\n"                                          // 11
    "secret_env = { GITHUB_TOKEN = \"github\" }\n"                              // 12
    "cwd = \"/\"\n"                                                             // 13
    "[mcp.servers.search]\n"                                                    // 14
    "url = \"https://MCP.Example.com.:8443/mcp\"\n"                             // 15
    "credential = \"search\"\n"                                                 // 16
    "connect_to = \"127.0.0.1:9443\"\n"                                         // 17
    "upstream_ca_file = \"/etc/corral/ca.pem\"\n"                               // 18
    "allow_server_requests = true\n"                                            // 19
    "[[mcp.rules]]\n"                                                           // 20
    "server = \"files\"\ntool = \"read_*\"\naction = \"allow\"\n"               // 21-23
    "when = [ { pointer = \"/path\", path_under = \"/workspace\" },\n"          // 24
    "         { pointer = \"/mode\", one_of = [\"r\", \"ro\"] } ]\n"            // 25
    "[[mcp.rules]]\n"                                                           // 26
    "server = \"files\"\ntool = \"read_*\"\naction = \"deny\"\n"                // 27-29
    "when = [ { pointer = \"/path\", glob = \"*.env\" } ]\n"                    // 30
    "[[mcp.rules]]\n"                                                           // 31
    "server = \"search\"\ntool = \"query\"\naction = \"allow\"\n"               // 32-34
    "when = [ { pointer = \"/limit\", min = 1, max = 100, integer = true },\n"   // 35
    "         { pointer = \"/q\", regex = \"[a-z ]+\" }, { pointer = \"/lang\", exact = \"en\" } ]\n"  // 36
    "[[mcp.rules]]\n"                                                           // 37
    "server = \"files\"\ntool = \"delete_*\"\naction = \"approval\"\n"          // 38-40
    "approval_timeout = \"45s\"\n"                                              // 41
    "[mcp.pins]\n"                                                              // 42
    "\"files/read_file\" = \"" + kDigestA + "\"\n"                              // 43
    "[mcp.budget]\n"                                                            // 44
    "tool_calls_per_run = 100\ntool_calls_per_worker = 1000\n"                  // 45-46
    "per_tool = { \"files/write_file\" = 10 }\n";                               // 47

}  // namespace

TEST_CASE("[mcp]: every accepted shape, read into mcp::ToolsConfig") {
    OrgDir d;
    d.org(kOrgTools);
    d.worker("w", "");
    auto check = config::check_org(d.str());
    REQUIRE_MESSAGE(check.errors.empty(), errors_of(d));
    const auto& t = check.org.tools;
    REQUIRE(t.servers.size() == 2);

    const auto& files = t.servers.at("files");
    CHECK(files.where == d.file("org.toml") + ":9");
    CHECK_FALSE(files.allow_server_requests);
    const auto& stdio = std::get<mcp::StdioServer>(files.transport);
    CHECK(stdio.argv == std::vector<std::string>{"/usr/bin/node", "/opt/mcp/fs/index.js", "/workspace"});
    CHECK(stdio.env == std::map<std::string, std::string>{{"LOG_LEVEL", "info"}});
    CHECK(stdio.secret_env == std::map<std::string, std::string>{{"GITHUB_TOKEN", "github"}});
    CHECK(stdio.cwd == "/");

    const auto& search = t.servers.at("search");
    CHECK(search.allow_server_requests);
    const auto& http = std::get<mcp::HttpServer>(search.transport);
    CHECK(http.url == "https://MCP.Example.com.:8443/mcp");
    CHECK(http.host == "mcp.example.com");  // names::split_authority: lowercase, no trailing dot
    CHECK(http.port == 8443);
    CHECK(http.path == "/mcp");
    CHECK(http.credential == "search");
    CHECK(http.connect_to == "127.0.0.1:9443");
    CHECK(http.upstream_ca_file == "/etc/corral/ca.pem");

    CHECK(t.policy.servers == std::set<std::string>{"files", "search"});
    REQUIRE(t.policy.rules.size() == 4);
    CHECK(t.policy.rules[0].name == d.file("org.toml") + ":20");
    CHECK(t.policy.rules[0].action == mcp::Action::allow);
    REQUIRE(t.policy.rules[0].when.size() == 2);
    CHECK(t.policy.rules[0].when[0].kind == mcp::ConstraintKind::path_under);
    CHECK(t.policy.rules[0].when[0].root == "/workspace");
    CHECK(t.policy.rules[0].when[1].kind == mcp::ConstraintKind::one_of);
    CHECK(t.policy.rules[0].when[1].choices == std::vector<nlohmann::json>{"r", "ro"});
    CHECK(t.policy.rules[1].action == mcp::Action::deny);
    CHECK(t.policy.rules[1].when[0].kind == mcp::ConstraintKind::glob);
    const auto& range = t.policy.rules[2].when[0];
    CHECK(range.kind == mcp::ConstraintKind::range);
    CHECK(range.min == 1.0);
    CHECK(range.max == 100.0);
    CHECK(range.integer);
    CHECK(t.policy.rules[2].when[1].kind == mcp::ConstraintKind::regex);
    CHECK(t.policy.rules[2].when[2].value == nlohmann::json("en"));
    CHECK(t.policy.rules[3].action == mcp::Action::approval);
    CHECK(t.policy.rules[3].when.empty());
    CHECK(t.policy.rules[3].approval_timeout == std::chrono::seconds(45));
    CHECK(t.policy.rules[2].approval_timeout == std::chrono::seconds(300));  // the default, unused by an allow

    CHECK(t.pins == std::map<std::string, std::string>{{"files/read_file", kDigestA}});
    CHECK_FALSE(t.log_arguments);
    CHECK(t.budgets.per_run == 100u);
    CHECK(t.budgets.per_worker == 1000u);
    CHECK(t.budgets.per_tool == std::map<std::string, std::uint64_t>{{"files/write_file", 10}});
}

TEST_CASE("[mcp]: the resolved worker's policy decides, naming the rule by FILE:LINE") {
    OrgDir d;
    d.org(kOrgTools);
    d.worker("w", "");
    auto org = config::load_org(d.str());
    auto w = config::resolve_worker(org, "w");
    using nlohmann::json;
    auto read = mcp::decide(w.tools.policy, "files", "read_file", json{{"path", "/workspace/a.txt"}, {"mode", "r"}});
    CHECK(read.allowed());
    CHECK(read.rule == d.file("org.toml") + ":20");
    CHECK_FALSE(mcp::decide(w.tools.policy, "files", "read_file", json{{"path", "/workspace/.env"}, {"mode", "r"}}).allowed());
    // The regex was compiled at load and survives the merge.
    CHECK(mcp::decide(w.tools.policy, "search", "query", json{{"limit", 5}, {"q", "abc"}, {"lang", "en"}}).allowed());
    CHECK_FALSE(mcp::decide(w.tools.policy, "search", "query", json{{"limit", 5}, {"q", "ABC"}, {"lang", "en"}}).allowed());
    CHECK_FALSE(mcp::decide(w.tools.policy, "search", "query", json{{"limit", 5.5}, {"q", "abc"}, {"lang", "en"}}).allowed());
    auto del = mcp::decide(w.tools.policy, "files", "delete_file", json::object());
    CHECK(del.action == mcp::Action::approval);
    CHECK(del.rule == d.file("org.toml") + ":37");
    CHECK(del.approval_timeout == std::chrono::seconds(45));  // the call waits as long as its rule says
}

TEST_CASE("[mcp]: a worker's tools over the organisation's — the worker wins") {
    OrgDir d;
    std::string org = kOrgTools;
    org.replace(org.find("log_arguments = false"), 21, "log_arguments = true");
    d.org(org);
    d.worker("alpha",
             "[mcp]\n"
             "log_arguments = false\n"
             "[mcp.servers.files]\n"
             "command = [\"/opt/other/fs\"]\n"
             "[mcp.servers.mine]\n"
             "url = \"https://mine.example.com\"\n"
             "[[mcp.rules]]\n"
             "server = \"mine\"\ntool = \"*\"\naction = \"allow\"\n"
             "[[mcp.rules]]\n"
             "server = \"search\"\ntool = \"query\"\naction = \"deny\"\n"
             "[mcp.pins]\n"
             "\"files/read_file\" = \"" + kDigestB + "\"\n"
             "\"mine/x\" = \"" + kDigestA + "\"\n"
             "[mcp.budget]\n"
             "tool_calls_per_run = 5\n"
             "per_tool = { \"files/write_file\" = 3, \"mine/x\" = 1 }\n");
    d.worker("beta", "");
    auto loaded = config::load_org(d.str());
    auto a = config::resolve_worker(loaded, "alpha");
    CHECK(a.tools.policy.servers == std::set<std::string>{"files", "mine", "search"});
    CHECK(std::get<mcp::StdioServer>(a.tools.servers.at("files").transport).argv ==
          std::vector<std::string>{"/opt/other/fs"});
    CHECK(a.tools.servers.at("files").where == d.file("workers/alpha/worker.toml") + ":3");
    CHECK(std::get<mcp::HttpServer>(a.tools.servers.at("mine").transport).path == "/");
    REQUIRE(a.tools.policy.rules.size() == 6);  // org.toml's four, then the worker's two
    CHECK(a.tools.policy.rules[3].name == d.file("org.toml") + ":37");
    CHECK(a.tools.policy.rules[4].name == d.file("workers/alpha/worker.toml") + ":7");
    CHECK(a.tools.policy.rules[5].name == d.file("workers/alpha/worker.toml") + ":11");
    CHECK(a.tools.pins == std::map<std::string, std::string>{{"files/read_file", kDigestB}, {"mine/x", kDigestA}});
    CHECK_FALSE(a.tools.log_arguments);
    CHECK(a.tools.budgets.per_run == 5u);
    CHECK(a.tools.budgets.per_worker == 1000u);
    CHECK(a.tools.budgets.per_tool ==
          std::map<std::string, std::uint64_t>{{"files/write_file", 3}, {"mine/x", 1}});
    // Deny wins: the worker's deny over org.toml's allow of search/query.
    CHECK_FALSE(mcp::decide(a.tools.policy, "search", "query",
                            nlohmann::json{{"limit", 5}, {"q", "abc"}, {"lang", "en"}}).allowed());

    auto b = config::resolve_worker(loaded, "beta");
    CHECK(b.tools.policy.servers == std::set<std::string>{"files", "search"});
    CHECK(b.tools.log_arguments);  // org.toml's, the worker writes none
    CHECK(b.tools.budgets.per_run == 100u);
    CHECK(b.tools.pins.at("files/read_file") == kDigestA);
    CHECK(b.tools.policy.rules.size() == 4);
}

TEST_CASE("[mcp]: a configuration without [mcp] has no tools") {
    OrgDir d;
    d.org("");
    d.worker("w", "");
    auto w = config::resolve_worker(config::load_org(d.str()), "w");
    CHECK(w.tools.empty());
    CHECK(w.tools.policy.rules.empty());
    CHECK(w.tools.policy.servers.empty());
}

TEST_CASE("[mcp] servers: every refused input names FILE:LINE, the key and what is allowed") {
    OrgDir d;
    auto org_errors = [&](const std::string& text) {
        d.org(kCredentials + text);
        return errors_of(d);
    };
    const std::string org = d.file("org.toml");
    SUBCASE("unknown keys") {
        auto e = org_errors("[mcp]\nlog = true\n[mcp.servers.a]\ncommand = [\"/bin/a\"]\nbogus = 1\n");
        CHECK(mcp_has(e, org + ":8: unknown key 'mcp.log', allowed: budget | log_arguments | pins | rules | servers\n"));
        CHECK(mcp_has(e, org + ":11: unknown key 'mcp.servers.a.bogus', allowed: allow_server_requests | command | "
                           "connect_to | credential | cwd | env | secret_env | upstream_ca_file | url\n"));
    }
    SUBCASE("both command and url, and neither") {
        auto e = org_errors("[mcp.servers.a]\ncommand = [\"/bin/a\"]\nurl = \"https://a.example.com/\"\n"
                            "[mcp.servers.b]\ncwd = \"/\"\n");
        CHECK(mcp_has(e, org + ":7: keys 'mcp.servers.a.command' and 'mcp.servers.a.url': both set, allowed: exactly "
                           "one of them (command: a stdio server corral starts; url: a remote Streamable HTTP server)\n"));
        CHECK(mcp_has(e, org + ":10: keys 'mcp.servers.b.command' and 'mcp.servers.b.url': neither set, allowed: "
                           "exactly one of them"));
    }
    SUBCASE("a relative program, a bad command") {
        auto e = org_errors("[mcp.servers.a]\ncommand = [\"node\", \"x.js\"]\n[mcp.servers.b]\ncommand = []\n");
        CHECK(mcp_has(e, org + ":8: key 'mcp.servers.a.command[0]': got \"node\", allowed: an absolute path to the "
                           "program (no PATH lookup: the host runs it)\n"));
        CHECK(mcp_has(e, org + ":10: key 'mcp.servers.b.command': got an array, allowed: an array of strings, the "
                           "program first: an absolute path, then its arguments (no NUL bytes)\n"));
    }
    SUBCASE("a url that is not https, or not a plain one") {
        const std::string allowed = ", allowed: an https URL \"https://HOST[:PORT]/PATH\" (no user, query or "
                                    "fragment; the path normalised: no //, ., .., %, ;)\n";
        auto e = org_errors("[mcp.servers.a]\nurl = \"http://a.example.com/mcp\"\n"
                            "[mcp.servers.b]\nurl = \"https://b.example.com/mcp?key=1\"\n"
                            "[mcp.servers.c]\nurl = \"https://user@c.example.com/\"\n"
                            "[mcp.servers.d]\nurl = \"https://d.example.com/a/../b\"\n");
        CHECK(mcp_has(e, org + ":8: key 'mcp.servers.a.url': got \"http://a.example.com/mcp\"" + allowed));
        CHECK(mcp_has(e, org + ":10: key 'mcp.servers.b.url': got \"https://b.example.com/mcp?key=1\"" + allowed));
        CHECK(mcp_has(e, org + ":12: key 'mcp.servers.c.url': got \"https://user@c.example.com/\"" + allowed));
        CHECK(mcp_has(e, org + ":14: key 'mcp.servers.d.url': got \"https://d.example.com/a/../b\"" + allowed));
    }
    SUBCASE("a credential or secret_env naming no [credentials.NAME]") {
        auto e = org_errors("[mcp.servers.a]\ncommand = [\"/bin/a\"]\nsecret_env = { TOKEN = \"gitlab\" }\n"
                            "[mcp.servers.b]\nurl = \"https://b.example.com/\"\ncredential = \"nope\"\n");
        CHECK(mcp_has(e, org + ":9: key 'mcp.servers.a.secret_env.TOKEN': got \"gitlab\", allowed: the name of a "
                           "[credentials.NAME] of org.toml: github | search\n"));
        CHECK(mcp_has(e, org + ":12: key 'mcp.servers.b.credential': got \"nope\", allowed: the name of a "
                           "[credentials.NAME] of org.toml: github | search\n"));
    }
    SUBCASE("a bad server name (the worker-name rule: no ., .., leading -)") {
        auto e = org_errors("[mcp.servers.\"bad name\"]\ncommand = [\"/bin/a\"]\n[mcp.servers.\"..\"]\n"
                            "command = [\"/bin/a\"]\n");
        CHECK(mcp_has(e, org + ":7: key 'mcp.servers.\"bad name\"': got \"bad name\" (contains ' '; allowed: letters, "
                           "digits, '.', '_', '-'), allowed: a server name: 1-64 of A-Z a-z 0-9 . _ -, starting "
                           "with a letter or digit\n"));
        CHECK(mcp_has(e, org + ":9: key 'mcp.servers.\"..\"': got \"..\" (must start with a letter or digit)"));
    }
    SUBCASE("the other transport's keys, bad env names") {
        auto e = org_errors("[mcp.servers.a]\nurl = \"https://a.example.com/\"\ncwd = \"/\"\n"
                            "[mcp.servers.b]\ncommand = [\"/bin/b\"]\ncredential = \"github\"\nenv = { \"A-B\" = \"x\" }\n");
        CHECK(mcp_has(e, org + ":9: key 'mcp.servers.a.cwd': got \"/\", allowed: not with url: cwd is for a stdio "
                           "server (command)\n"));
        CHECK(mcp_has(e, org + ":12: key 'mcp.servers.b.credential': got \"github\", allowed: not with command: "
                           "credential is for a remote server (url)\n"));
        CHECK(mcp_has(e, org + ":13: key 'mcp.servers.b.env.A-B': got \"A-B\", allowed: a variable name, "
                           "[A-Za-z_][A-Za-z0-9_]*\n"));
    }
    SUBCASE("a worker's servers are checked against org.toml's credentials") {
        d.org(kCredentials);
        d.worker("w", "[mcp.servers.a]\ncommand = [\"/bin/a\"]\nsecret_env = { T = \"none\" }\n");
        CHECK(mcp_has(errors_of(d), d.file("workers/w/worker.toml") + ":3: key 'mcp.servers.a.secret_env.T': got "
                                                                  "\"none\", allowed: the name of a [credentials.NAME]"));
    }
}
