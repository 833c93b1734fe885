// `corral validate --config DIR`: the real binary on example organisations.
#include <doctest/doctest.h>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tests/config/org_fixture.hpp"
#include "tests/support/process.hpp"

using corral::test::OrgDir;
using corral::test::run;

namespace {

corral::test::Result validate(const OrgDir& d, std::vector<std::string> extra = {},
                              std::map<std::string, std::string> env = {}) {
    std::vector<std::string> argv = {corral::test::corral_bin(), "validate", "--config", d.str()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    corral::test::RunOptions o;
    o.env = std::move(env);
    o.timeout = std::chrono::milliseconds(20'000);
    return run(argv, o);
}

bool has(const std::string& s, const std::string& n) { return s.find(n) != std::string::npos; }

// Workers on `rootfs = "host"` validate only where the pinned CLIs are
// installed (validate checks the CLI is in the worker's rootfs):
// tools/test.sh installs them as root; a machine without them skips the
// cases that need them, saying so, instead of failing on what it lacks.
std::string missing_pinned_clis() {
    const std::string prefix = "/usr/local/lib/corral-agents/node_modules/";
    for (const std::string& path : {prefix + "@anthropic-ai/claude-code/bin/claude.exe", prefix + "@openai/codex/bin/codex.js",
                                   prefix + "@mariozechner/pi-coding-agent/dist/cli.js", std::string("/usr/bin/node")})
        if (::access(path.c_str(), F_OK) != 0) return path + " is not installed (tools/install-npm-deps.sh)";
    return "";
}

#define SKIP_WITHOUT_PINNED_CLIS()                                   \
    do {                                                              \
        if (auto why = missing_pinned_clis(); !why.empty()) {         \
            MESSAGE("skipped: " << why);                              \
            return;                                                   \
        }                                                             \
    } while (0)

}  // namespace

TEST_CASE("corral validate prints each resolved worker with implied grants and credential status") {
    SKIP_WITHOUT_PINNED_CLIS();
    OrgDir d;
    d.org("[engine]\nagent = \"claude\"\n[sandbox]\nmemory = \"1GiB\"\n"
          "[credentials.anthropic]\nkind = \"api_key\"\nenv = \"CORRAL_TEST_ANTHROPIC\"\n"
          "[[grants]]\nhost = \"github.com\"\nmode = \"tunnel\"\n");
    d.worker("alpha", "[sandbox]\npids = 64\n[channels]\ndiscord = \"#ops\"\n");
    d.worker("beta", "agent = \"pi\"\n");
    auto r = validate(d, {}, {{"CORRAL_TEST_ANTHROPIC", "sk-ant-api03-not-really-a-key"}});
    CHECK_MESSAGE(r.exit_code == 0, r.out << r.err);
    CHECK(has(r.out, "worker alpha"));
    CHECK(has(r.out, "agent:      claude (" + d.file("org.toml") + ":2 [engine]), CLI pinned 2.1.332, installed "));
    CHECK(has(r.out, "limits:     memory=1GiB pids=64"));
    CHECK(has(r.out, "api.anthropic.com:443 inject credential=anthropic routes=POST /v1/messages"));
    CHECK(has(r.out, "[implied by agent = \"claude\"]"));
    CHECK(has(r.out, "github.com:443 tunnel"));
    CHECK(has(r.out, "credential: anthropic (api_key, env CORRAL_TEST_ANTHROPIC): available"));
    CHECK(has(r.out, "worker beta"));
    CHECK(has(r.out, "agent:      pi (" + d.file("workers/beta/worker.toml") + ":1)"));
    // The warning, with its file:line, on stderr: the full line, exactly.
    CHECK(has(r.err, "warning: " + d.file("workers/alpha/worker.toml") +
                         ":3: key 'channels': sessions run pi; agent applies to task runs\n"));
    // ...and under the worker, whose agent line names the agent.
    CHECK(has(r.out, "  warning:    " + d.file("workers/alpha/worker.toml") +
                         ":3: key 'channels': sessions run pi; agent applies to task runs\n"));
    // Never the secret itself.
    CHECK_FALSE(has(r.out + r.err, "sk-ant-api03-not-really-a-key"));
}

TEST_CASE("corral validate fails (2) naming the missing credential and how to add it") {
    SKIP_WITHOUT_PINNED_CLIS();
    OrgDir d;
    d.org("");
    d.worker("cx", "agent = \"codex\"\n");
    auto r = validate(d);
    CHECK(r.exit_code == 2);
    CHECK(has(r.out, "credential: openai (-): NOT DEFINED"));
    CHECK(has(r.err, "worker 'cx' runs codex, which needs the credential 'openai': not defined; add to org.toml: "
                     "[credentials.openai]"));

    SUBCASE("defined but its variable unset: still 2, unless --skip-secrets") {
        OrgDir e;
        e.org("[credentials.openai]\nkind = \"api_key\"\nenv = \"CORRAL_TEST_SURELY_UNSET\"\n");
        e.worker("cx", "agent = \"codex\"\n");
        auto r2 = validate(e);
        CHECK(r2.exit_code == 2);
        CHECK(has(r2.err, "'openai' (env CORRAL_TEST_SURELY_UNSET): not available"));
        CHECK(has(r2.err, "; to fix: set CORRAL_TEST_SURELY_UNSET to the secret"));
        auto r3 = validate(e, {"--skip-secrets"});
        CHECK_MESSAGE(r3.exit_code == 0, r3.err);
        CHECK(has(r3.out, "defined (secret not checked)"));
        CHECK(has(r3.out, "api.openai.com:443 inject credential=openai"));
        // An API key without a template: the implied grant sends it as OpenAI reads it.
        CHECK(has(r3.out, " injects=authorization: Bearer {key}  [implied by agent = \"codex\"]"));
        CHECK_FALSE(has(r3.out, "x-api-key"));
    }
    SUBCASE("an operator's template wins over the implied grant's Bearer") {
        OrgDir e;
        e.org("[credentials.openai]\nkind = \"api_key\"\nenv = \"K\"\n"
              "template = { \"authorization\" = \"Bearer {key}\", \"openai-organization\" = \"org-1\" }\n");
        e.worker("cx", "agent = \"codex\"\n");
        auto r4 = validate(e, {"--skip-secrets"});
        CHECK_MESSAGE(r4.exit_code == 0, r4.err);
        CHECK(has(r4.out, " injects=authorization: Bearer {key},openai-organization: org-1  [implied"));
    }
}

TEST_CASE("corral validate: config errors are one line each with file:line:key, exit 2") {
    OrgDir d;
    d.org("[engine]\nagent = \"gpt5\"\n");
    d.worker("alpha", "agent = \"claude\"\nbogus = 1\n");
    auto r = validate(d);
    CHECK(r.exit_code == 2);
    CHECK(has(r.err, "corral validate: " + d.file("org.toml") +
                         ":2: key 'engine.agent': got \"gpt5\", allowed: pi | claude | codex\n"));
    CHECK(has(r.err, "corral validate: " + d.file("workers/alpha/worker.toml") + ":2: key 'bogus': unknown key"));
    CHECK(r.out.empty());
}

TEST_CASE("corral validate: a grant's policy is shown with the grant") {
    SKIP_WITHOUT_PINNED_CLIS();
    OrgDir d;
    d.org("[credentials.anthropic]\nkind = \"api_key\"\nenv = \"CORRAL_TEST_ANTHROPIC\"\n"
          "[[grants]]\nhost = \"api.anthropic.com\"\nmode = \"inject\"\ncredential = \"anthropic\"\n"
          "[grants.policy]\nmodels = [\"claude-sonnet-4-5*\", \"claude-haiku-4-5\"]\nmax_output_tokens = 32000\n"
          "server_tools = false\nurl_sources = false\nanthropic_betas = []\n");
    d.worker("p", "");
    auto r = validate(d, {"--worker", "p"}, {{"CORRAL_TEST_ANTHROPIC", "x"}});
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    CHECK(has(r.out, "api.anthropic.com:443 inject credential=anthropic policy=models=claude-sonnet-4-5*|claude-haiku-4-5,"
                     "max_output_tokens=32000,no_server_tools,no_url_sources,anthropic_betas=(none) injects="));
}

TEST_CASE("corral validate: an operator grant for the model host replaces the implied one") {
    SKIP_WITHOUT_PINNED_CLIS();
    OrgDir d;
    d.org("[credentials.anthropic]\nkind = \"api_key\"\nenv = \"CORRAL_TEST_ANTHROPIC\"\n"
          "[[grants]]\nhost = \"api.anthropic.com\"\nmode = \"inject\"\ncredential = \"anthropic\"\n"
          "connect_to = \"127.0.0.1:9443\"\nallow_private = true\n");
    d.worker("p", "");
    auto r = validate(d, {"--worker", "p"}, {{"CORRAL_TEST_ANTHROPIC", "x"}});
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    CHECK(has(r.out, "api.anthropic.com:443 inject credential=anthropic connect_to=127.0.0.1:9443"));
    CHECK(has(r.out, "replaced by the one at " + d.file("org.toml") + ":4"));
    CHECK_FALSE(has(r.out, "[implied by agent"));
}

TEST_CASE("corral validate: usage errors") {
    OrgDir d;
    d.org("");
    CHECK(run({corral::test::corral_bin(), "validate"}).exit_code == 2);
    CHECK(run({corral::test::corral_bin(), "validate", "--bogus"}).exit_code == 2);
    auto typo = run({corral::test::corral_bin(), "validate", "--confgi", d.path.string()});
    CHECK(typo.exit_code == 2);
    CHECK(has(typo.err, "corral validate: unknown option \"--confgi\" (did you mean --config?)"));
    auto r = validate(d, {"--worker", "nobody"});
    CHECK(r.exit_code == 2);
    CHECK(has(r.err, "no worker \"nobody\""));
}

// The seed's WP4 scenario: only an anthropic credential, a claude worker and a codex worker.
TEST_CASE("corral validate: only an anthropic credential — the claude worker can start, the codex worker cannot") {
    SKIP_WITHOUT_PINNED_CLIS();
    OrgDir d;
    d.org("[credentials.anthropic]\nkind = \"api_key\"\nenv = \"CORRAL_TEST_ANTHROPIC\"\n");
    d.worker("claude-w", "agent = \"claude\"\n");
    d.worker("codex-w", "agent = \"codex\"\n");
    const std::map<std::string, std::string> env = {{"CORRAL_TEST_ANTHROPIC", "sk-ant-api03-not-really-a-key"}};
    auto r = validate(d, {}, env);
    // Both are shown...
    CHECK(has(r.out, "worker claude-w\n  agent:      claude ("));
    CHECK(has(r.out, "credential: anthropic (api_key, env CORRAL_TEST_ANTHROPIC): available"));
    CHECK(has(r.out, "worker codex-w\n  agent:      codex ("));
    CHECK(has(r.out, "credential: openai (-): NOT DEFINED"));
    // ...and only the codex worker is a problem, named with how to add its credential.
    CHECK(r.exit_code == 2);
    CHECK(has(r.err, "corral validate: worker 'codex-w' runs codex, which needs the credential 'openai': not defined; "
                     "add to org.toml: [credentials.openai] kind = \"api_key\" with env = \"OPENAI_API_KEY\""));
    CHECK_FALSE(has(r.err, "claude-w"));
    // The claude worker on its own passes: `corral run --worker claude-w` would be allowed.
    auto c = validate(d, {"--worker", "claude-w"}, env);
    CHECK_MESSAGE(c.exit_code == 0, c.err);
    auto x = validate(d, {"--worker", "codex-w"}, env);
    CHECK(x.exit_code == 2);
    CHECK(has(x.err, "[credentials.openai]"));
}

// An image directory holding the claude CLI's entry point and a package.json with `version`.
namespace {
void fake_claude_image(const OrgDir& d, const std::string& rel, const std::string& version_json) {
    const std::string pkg = rel + "/usr/local/lib/corral-agents/node_modules/@anthropic-ai/claude-code";
    d.write(pkg + "/bin/claude.exe", "#!/bin/sh\n");
    d.write(pkg + "/package.json", "{\"name\":\"@anthropic-ai/claude-code\",\"version\":" + version_json + "}");
}
}  // namespace

TEST_CASE("corral validate: the CLI in each worker's rootfs — missing is an error, another version a warning") {
    OrgDir d;
    d.org("[credentials.anthropic]\nkind = \"api_key\"\nenv = \"CORRAL_TEST_ANTHROPIC\"\n");
    d.write("empty-img/etc/hostname", "x\n");
    fake_claude_image(d, "old-img", "\"1.0.0\"");
    fake_claude_image(d, "odd-img", "\"1.0\\u001b[31mred\"");
    d.worker("none", "agent = \"claude\"\nrootfs = \"empty-img\"\n");
    d.worker("old", "agent = \"claude\"\nrootfs = \"old-img\"\n");
    d.worker("odd", "agent = \"claude\"\nrootfs = \"odd-img\"\n");
    const std::map<std::string, std::string> env = {{"CORRAL_TEST_ANTHROPIC", "x"}};
    auto r = validate(d, {"--worker", "none"}, env);
    CHECK(r.exit_code == 2);
    CHECK(has(r.out, "CLI pinned 2.1.332, installed NOT FOUND (in the image " + d.file("empty-img") + ")"));
    // The same words as `corral run`'s refusal.
    CHECK(has(r.err, "corral validate: worker 'none': claude needs /usr/local/lib/corral-agents/node_modules/"
                     "@anthropic-ai/claude-code/bin/claude.exe, which is not in the image " + d.file("empty-img") +
                     "; install the pinned agent CLIs there (tools/install-npm-deps.sh; for an image, "
                     "CORRAL_AGENTS_PREFIX=<image>/usr/local/lib/corral-agents)"));

    auto o = validate(d, {"--worker", "old"}, env);
    CHECK_MESSAGE(o.exit_code == 0, o.err);
    CHECK(has(o.out, "CLI pinned 2.1.332, installed 1.0.0 (in the image " + d.file("old-img") + ")"));
    CHECK(has(o.err, "warning: worker old: cli_version: the installed claude is 1.0.0, corral pins 2.1.332"));

    auto x = validate(d, {"--worker", "odd"}, env);
    CHECK_MESSAGE(x.exit_code == 0, x.err);
    CHECK(has(x.out, "installed unknown (in the image"));
    CHECK(has(x.err, "\"version\" is not a version"));
    CHECK_FALSE(has(x.out + x.err, "\x1b"));
}

TEST_CASE("corral validate: an egress-only worker passes with no credential and no CLI; --json has the same findings") {
    OrgDir d;
    d.org("[[grants]]\nhost = \"github.com\"\nmode = \"tunnel\"\n");
    d.worker("fetch", "agent = \"none\"\n[sandbox]\nscratch_size = \"1GiB\"\n[[grants]]\nhost = \"pypi.org\"\nmode = \"tunnel\"\n");
    auto r = validate(d);
    CHECK_MESSAGE(r.exit_code == 0, r.out << r.err);
    CHECK(has(r.out, "agent:      none (" + d.file("workers/fetch/worker.toml") + ":1): egress only"));
    CHECK(has(r.out, "pypi.org:443 tunnel"));
    CHECK(has(r.out, "limits:     scratch_size=1GiB"));
    CHECK_FALSE(has(r.out, "credential:"));
    CHECK(r.err.empty());

    auto j = validate(d, {"--json"});
    CHECK(j.exit_code == 0);
    auto doc = nlohmann::json::parse(j.out);
    CHECK(doc["ok"] == true);
    CHECK(doc["exit_status"] == 0);
    REQUIRE(doc["workers"].size() == 1);
    CHECK(doc["workers"][0]["name"] == "fetch");
    CHECK(doc["workers"][0]["egress_only"] == true);
    CHECK(doc["workers"][0]["status"] == "ok");
    CHECK(doc["workers"][0]["limits"]["scratch_bytes"] == 1ull << 30);
    CHECK(doc["workers"][0]["grants"].size() == 2);
    CHECK(doc["diagnostics"].empty());
}

TEST_CASE("corral validate --json: every diagnostic with its fields, the exit status unchanged") {
    OrgDir d;
    d.org("[sandbox]\nmemroy = \"1G\"\n");
    d.worker("w", "agent = \"nobody\"\n");
    auto text = validate(d);
    auto j = validate(d, {"--json"});
    CHECK(text.exit_code == 2);
    CHECK(j.exit_code == 2);
    auto doc = nlohmann::json::parse(j.out);  // stdout holds only the object
    CHECK(doc["ok"] == false);
    CHECK(doc["exit_status"] == 2);
    REQUIRE(doc["diagnostics"].size() == 2);
    bool saw_key = false, saw_agent = false;
    for (const auto& x : doc["diagnostics"]) {
        for (const char* field : {"name", "status", "detail", "file", "line", "key", "got", "allowed", "message", "worker"})
            CHECK_MESSAGE(x.contains(field), field);
        CHECK(x["status"] == "error");
        // The text output's line is the JSON's detail.
        CHECK(has(text.err, x["detail"].get<std::string>()));
        if (x["key"] == "sandbox.memroy") {
            saw_key = true;
            CHECK(x["file"] == d.file("org.toml"));
            CHECK(x["line"] == 2);
            CHECK(has(x["allowed"].get<std::string>(), "scratch_size"));
        }
        if (x["key"] == "agent") {
            saw_agent = true;
            CHECK(x["got"] == "\"nobody\"");
            CHECK(x["line"] == 1);
        }
    }
    CHECK(saw_key);
    CHECK(saw_agent);
}

TEST_CASE("corral validate: a worker's MCP servers, rules and pins; nothing about MCP without [mcp]") {
    OrgDir d;
    d.org("[credentials.search]\nkind = \"api_key\"\nenv = \"CORRAL_TEST_SEARCH\"\n"
          "[mcp.servers.files]\ncommand = [\"/usr/bin/node\", \"/opt/fs.js\"]\n"
          "[[mcp.rules]]\nserver = \"files\"\ntool = \"read_*\"\naction = \"allow\"\n");
    d.worker("fetch", "agent = \"none\"\n"
                      "[mcp.servers.search]\nurl = \"https://mcp.example.com/mcp\"\ncredential = \"search\"\n"
                      "[[mcp.rules]]\nserver = \"search\"\ntool = \"*\"\naction = \"deny\"\n"
                      "[mcp.pins]\n\"files/read_file\" = \"sha256:" + std::string(64, 'a') + "\"\n");
    d.worker("plain", "agent = \"none\"\n");
    auto r = validate(d);
    CHECK_MESSAGE(r.exit_code == 0, r.out << r.err);
    CHECK(has(r.out, "worker fetch\n"));
    CHECK(has(r.out, "  mcp:        2 server(s), 2 rule(s), 1 pin(s)\n"
                     "    files: stdio /usr/bin/node  [" + d.file("org.toml") + ":4]\n"
                     "    search: http https://mcp.example.com/mcp credential=search  [" +
                         d.file("workers/fetch/worker.toml") + ":2]\n"));
    // What a run would refuse is a warning (run::mcp_not_served), the exit status unchanged.
    // The embedded gateway starts the stdio server; the daemon serves the
    // remote one: only the stdio one is named, for the daemon.
    CHECK_FALSE(has(r.out, "  warning:    corral run: worker fetch"));
    CHECK(has(r.err, "warning: corral run --gateway unix:PATH: worker fetch: MCP server files (" +
                         d.file("org.toml") + ":4) is a stdio server, and the gateway daemon serves remote "
                         "Streamable HTTP servers only"));
    CHECK_FALSE(has(r.err, "search (" + d.file("workers/fetch/worker.toml")));
    // The worker without [mcp] of its own still has org.toml's.
    CHECK(has(r.out, "worker plain\n"));
    CHECK(has(r.out, "  mcp:        1 server(s), 1 rule(s), 0 pin(s)\n    files: stdio /usr/bin/node  ["));

    auto j = validate(d, {"--json"});
    CHECK(j.exit_code == 0);
    auto doc = nlohmann::json::parse(j.out);
    REQUIRE(doc["workers"].size() == 2);
    const auto& m = doc["workers"][0]["mcp"];
    CHECK(m["rules"] == 2);
    CHECK(m["pins"] == 1);
    REQUIRE(m["servers"].size() == 2);
    CHECK(m["servers"][0]["name"] == "files");
    CHECK(m["servers"][0]["transport"] == "stdio");
    CHECK(m["servers"][1]["transport"] == "http");
    int mcp_warnings = 0;
    for (const auto& diag : doc["diagnostics"])
        if (diag["name"] == "mcp.servers" && diag["worker"] == "fetch" && diag["status"] == "warning") ++mcp_warnings;
    CHECK(mcp_warnings == 1);  // the stdio server, for a daemon run

    SUBCASE("no [mcp] anywhere: no MCP row, no mcp member") {
        d.org("");
        d.worker("fetch", "agent = \"none\"\n");
        auto plain = validate(d);
        CHECK(plain.exit_code == 0);
        CHECK_FALSE(has(plain.out, "mcp"));
        auto pj = nlohmann::json::parse(validate(d, {"--json"}).out);
        for (const auto& w : pj["workers"]) CHECK_FALSE(w.contains("mcp"));
    }
    SUBCASE("a rule naming a server the worker lacks fails validate, at its line") {
        d.worker("plain", "agent = \"none\"\n[[mcp.rules]]\nserver = \"search\"\ntool = \"*\"\naction = \"allow\"\n");
        auto bad = validate(d);
        CHECK(bad.exit_code == 2);
        CHECK(has(bad.err, "corral validate: " + d.file("workers/plain/worker.toml") +
                               ":2: key 'mcp.rules': unknown server \"search\" (this worker has: files)\n"));
    }
}

TEST_CASE("corral validate: tool_calls_per_worker is a warning for a run of the embedded gateway (only the daemon keeps it)") {
    OrgDir d;
    d.org("[credentials.search]\nkind = \"api_key\"\nenv = \"CORRAL_TEST_SEARCH\"\n");
    d.worker("fetch", "agent = \"none\"\n"
                      "[mcp.servers.search]\nurl = \"https://mcp.example.com/mcp\"\ncredential = \"search\"\n"
                      "[mcp.budget]\ntool_calls_per_run = 10\ntool_calls_per_worker = 100\n");
    auto r = validate(d);
    CHECK_MESSAGE(r.exit_code == 0, r.out << r.err);
    CHECK(has(r.err, "warning: corral run: worker fetch: [mcp.budget] tool_calls_per_worker (a tool-call budget "
                     "across the worker's runs) is kept by the gateway daemon: run with --gateway unix:PATH"));
    CHECK_FALSE(has(r.err, "warning: corral run --gateway unix:PATH:"));
}

TEST_CASE("corral validate: a [budget.worker] is a warning for a run of the embedded gateway (only the daemon keeps it)") {
    OrgDir d;
    d.org("");
    d.worker("shared", "agent = \"none\"\n[budget.worker]\nrequests = 100\n");
    d.worker("plain", "agent = \"none\"\n[budget]\nrequests = 10\n");
    auto r = validate(d);
    CHECK_MESSAGE(r.exit_code == 0, r.out << r.err);
    CHECK(has(r.err, "warning: corral run: worker shared: [budget.worker] (a budget across the worker's runs) is kept "
                     "by the gateway daemon: run with --gateway unix:PATH against `corral gateway --org DIR`"));
    CHECK(has(r.out, "  warning:    corral run: worker shared: [budget.worker]"));
    CHECK_FALSE(has(r.err, "worker plain: [budget.worker]"));
}
