// Organisation config: resolution (worker → [engine] → pi, limits, rootfs,
// grants) and the validation matrix — every error checked for file, line,
// key and allowed values; unknown keys at every level; warnings.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "config/org_config.hpp"
#include "names/identity.hpp"
#include "tests/config/org_fixture.hpp"
#include "tests/support/process.hpp"

using namespace corral;
using config::AgentKind;
using test::OrgDir;
using test::errors_of;

namespace {

bool has_line(const std::string& all, const std::string& needle) { return all.find(needle) != std::string::npos; }

}  // namespace

TEST_CASE("resolution: worker → [engine] → pi") {
    OrgDir d;
    SUBCASE("nothing set anywhere: every worker runs pi") {
        d.org("");
        d.worker("alpha", "");
        d.worker("beta", "description = \"second\"\n");
        auto org = config::load_org(d.str());
        REQUIRE(org.workers.size() == 2);
        for (const char* n : {"alpha", "beta"}) {
            auto w = config::resolve_worker(org, n);
            CHECK(w.agent == AgentKind::pi);
            CHECK(w.agent_source == "built-in default");
            CHECK(corral::names::to_string(w.rootfs) == "host");
            CHECK(w.warnings.empty());
        }
        CHECK(org.gateway.gateway.listen_unix == config::default_gateway_socket);
    }
    SUBCASE("[engine] sets the default, a worker's agent wins") {
        d.org("# org\n[engine]\nagent = \"codex\"\n");
        d.worker("alpha", "agent = \"claude\"\n");
        d.worker("beta", "");
        auto org = config::load_org(d.str());
        auto a = config::resolve_worker(org, "alpha");
        CHECK(a.agent == AgentKind::claude);
        CHECK(a.agent_source == d.file("workers/alpha/worker.toml") + ":1");
        auto b = config::resolve_worker(org, "beta");
        CHECK(b.agent == AgentKind::codex);
        CHECK(b.agent_source == d.file("org.toml") + ":3 [engine]");
    }
    SUBCASE("model, rootfs and limits resolve key by key") {
        d.write("images/base/.keep", "");
        d.write("images/other/.keep", "");
        d.org("rootfs = \"images/base\"\n[engine]\nmodel = \"claude-sonnet-4-5\"\n"
              "[sandbox]\nmemory = \"2GiB\"\ntimeout = \"30m\"\npids = 100\n");
        d.worker("alpha", "model = \"claude-opus-4-1\"\nrootfs = \"" + d.file("images/other") +
                              "\"\n[sandbox]\nmemory = \"512MiB\"\ncpus = 1.5\ntmp_size = 1048576\n");
        d.worker("beta", "");
        auto org = config::load_org(d.str());
        auto a = config::resolve_worker(org, "alpha");
        CHECK(a.model == "claude-opus-4-1");
        CHECK(corral::names::to_string(a.rootfs) == d.file("images/other"));
        CHECK(a.limits.memory_bytes == 512ull << 20);
        CHECK(a.limits.cpus == doctest::Approx(1.5));
        CHECK(a.limits.tmp_bytes == 1048576ull);
        CHECK(a.limits.pids == 100u);                       // from org.toml
        CHECK(a.limits.timeout == std::chrono::minutes(30));  // from org.toml
        auto b = config::resolve_worker(org, "beta");
        CHECK(b.model == "claude-sonnet-4-5");
        CHECK(corral::names::to_string(b.rootfs) == d.file("images/base"));  // relative to the org directory
        CHECK(b.limits.memory_bytes == 2ull << 30);
        CHECK_FALSE(b.limits.cpus.has_value());
    }
    SUBCASE("env and channels pass through") {
        d.org("");
        d.worker("alpha", "[env]\nMY_FLAG = \"1\"\nOTHER = \"x y\"\n[channels]\ndiscord = { channel = \"ops\" }\n");
        auto org = config::load_org(d.str());
        auto a = config::resolve_worker(org, "alpha");
        CHECK(a.env == std::map<std::string, std::string>{{"MY_FLAG", "1"}, {"OTHER", "x y"}});
        CHECK(a.has_channels);
        REQUIRE(org.workers.at("alpha").channels.has_value());
        CHECK(org.workers.at("alpha").channels->as_table().count("discord") == 1);
    }
    SUBCASE("an unknown worker is named with the known ones") {
        d.org("");
        d.worker("alpha", "");
        auto org = config::load_org(d.str());
        CHECK_THROWS_WITH_AS(config::resolve_worker(org, "gamma"), doctest::Contains("allowed: alpha"), UsageError);
    }
}

TEST_CASE("grants: org grants scoped by identities, worker grants scoped to the worker") {
    OrgDir d;
    d.org("[credentials.anthropic]\nkind = \"api_key\"\nenv = \"SOME_KEY\"\n"
          "[[grants]]\nhost = \"github.com\"\nmode = \"tunnel\"\n"
          "[[grants]]\nhost = \"pypi.org\"\nmode = \"tunnel\"\nidentities = [\"alpha\"]\n");
    d.worker("alpha", "[[grants]]\nhost = \"api.anthropic.com\"\nmode = \"inject\"\ncredential = \"anthropic\"\n"
                      "connect_to = \"127.0.0.1:8443\"\nallow_private = true\n");
    d.worker("beta", "");
    auto org = config::load_org(d.str());
    auto a = config::resolve_worker(org, "alpha");
    REQUIRE(a.grants.size() == 3);
    CHECK(a.grants[0].host == "github.com");
    CHECK(a.grants[1].host == "pypi.org");
    CHECK(a.grants[2].host == "api.anthropic.com");
    CHECK(a.grants[2].identities == std::vector<std::string>{"alpha"});
    CHECK(a.grants[2].connect_port == 8443);
    auto b = config::resolve_worker(org, "beta");
    REQUIRE(b.grants.size() == 1);
    CHECK(b.grants[0].host == "github.com");
}

TEST_CASE("validation: a bad agent names file, line, key and the allowed values") {
    OrgDir d;
    SUBCASE("in worker.toml") {
        d.org("");
        d.worker("alpha", "# the agent\n\nagent = \"gpt5\"\n");
        auto e = errors_of(d);
        CHECK(has_line(e, d.file("workers/alpha/worker.toml") +
                              ":3: key 'agent': got \"gpt5\", allowed: pi | claude | codex"));
        CHECK_THROWS_WITH_AS(config::load_org(d.str()), doctest::Contains("allowed: pi | claude | codex"),
                             config::ConfigError);
    }
    SUBCASE("in [engine]") {
        d.org("[engine]\nagent = \"Claude\"\n");
        CHECK(has_line(errors_of(d), d.file("org.toml") + ":2: key 'engine.agent': got \"Claude\", allowed: pi | claude | codex"));
    }
    SUBCASE("of the wrong type: the same allowed values as a wrong value") {
        d.org("[engine]\nagent = true\n");
        d.worker("alpha", "agent = 5\n");
        d.worker("beta", "\nagent = [\"claude\"]\n");
        d.worker("gamma", "agent = { kind = \"claude\" }\n");
        auto e = errors_of(d);
        CHECK(has_line(e, d.file("org.toml") + ":2: key 'engine.agent': got a boolean, allowed: pi | claude | codex\n"));
        CHECK(has_line(e, d.file("workers/alpha/worker.toml") + ":1: key 'agent': got an integer, allowed: pi | claude | codex\n"));
        CHECK(has_line(e, d.file("workers/beta/worker.toml") + ":2: key 'agent': got an array, allowed: pi | claude | codex\n"));
        CHECK(has_line(e, d.file("workers/gamma/worker.toml") + ":1: key 'agent': got a table, allowed: pi | claude | codex\n"));
    }
    SUBCASE("the gateway's enum-like keys name their allowed values for a wrong type too") {
        d.org("[credentials.a]\nkind = 1\nenv = \"X\"\n");
        CHECK(has_line(errors_of(d), d.file("org.toml") + ":2: key 'credentials.a.kind': got 1, allowed: api_key | oauth_token"));
        OrgDir g;
        g.org("[[grants]]\nhost = \"example.com\"\nmode = [\"tunnel\"]\n");
        CHECK(has_line(errors_of(g), g.file("org.toml") + ":3: key 'grants[0].mode': got an array, allowed: tunnel | inject"));
    }
}

TEST_CASE("validation: unknown keys are errors at every level") {
    OrgDir d;
    d.org("[engine]\nagnet = \"pi\"\n[sandbox]\nmemroy = \"1G\"\n[enigne]\nagent = \"pi\"\n");
    d.worker("alpha", "agnet = \"pi\"\n[sandbox]\npid = 3\n");
    auto e = errors_of(d);
    CHECK(has_line(e, d.file("org.toml") + ":2: key 'engine.agnet': unknown key, allowed: agent | model | chatgpt_account_id"));
    CHECK(has_line(e, d.file("org.toml") + ":4: key 'sandbox.memroy': unknown key, allowed: memory | pids | cpus | timeout | tmp_size"));
    CHECK(has_line(e, d.file("org.toml") + ":5: key 'enigne': unknown key, allowed: engine | rootfs | capture | sandbox | budget | prices | gateway | credentials | grants"));
    CHECK(has_line(e, d.file("workers/alpha/worker.toml") + ":1: key 'agnet': unknown key, allowed: agent | model | rootfs"));
    CHECK(has_line(e, d.file("workers/alpha/worker.toml") + ":3: key 'sandbox.pid': unknown key"));

    SUBCASE("inside the gateway sections too (the gateway's own parser)") {
        OrgDir g;
        g.org("[gateway]\nledger = \"/tmp/l\"\nlisten_unixx = \"/x\"\n");
        auto ge = errors_of(g);
        CHECK(has_line(ge, g.file("org.toml") + ":3"));
        CHECK(has_line(ge, "listen_unixx"));
    }
    SUBCASE("and inside a worker's grants") {
        OrgDir g;
        g.org("");
        g.worker("alpha", "\n[[grants]]\nhost = \"example.com\"\nmod = \"tunnel\"\n");
        auto ge = errors_of(g);
        CHECK(has_line(ge, g.file("workers/alpha/worker.toml") + ":4"));
        CHECK(has_line(ge, "mod"));
    }
}

TEST_CASE("validation: the gateway sections' errors keep their file and line") {
    OrgDir d;
    d.org("[engine]\nagent = \"pi\"\n\n[[grants]]\nhost = \"example.com\"\nmode = \"teleport\"\n");
    auto e = errors_of(d);
    CHECK(has_line(e, d.file("org.toml") + ":6: key 'grants[0].mode'"));
    CHECK(has_line(e, "tunnel | inject"));

    SUBCASE("a worker grant naming a credential org.toml lacks") {
        OrgDir w;
        w.org("");
        w.worker("alpha", "[[grants]]\nhost = \"api.example.com\"\nmode = \"inject\"\ncredential = \"nope\"\n");
        auto we = errors_of(w);
        CHECK(has_line(we, w.file("workers/alpha/worker.toml") + ":4"));
        CHECK(has_line(we, "nope"));
    }
    SUBCASE("a worker grant may not widen its scope") {
        OrgDir w;
        w.org("");
        w.worker("alpha", "[[grants]]\nhost = \"example.com\"\nmode = \"tunnel\"\nidentities = [\"beta\"]\n");
        CHECK(has_line(errors_of(w), w.file("workers/alpha/worker.toml") +
                                         ":1: key 'grants[0].identities': not allowed in worker.toml"));
    }
    SUBCASE("a worker grant with bad routes and identities: both reported") {
        OrgDir w;
        w.org("");
        w.worker("alpha", "[[grants]]\nhost = \"example.com\"\nmode = \"inject\"\nroutes = [\"bad\"]\n"
                          "identities = [\"beta\"]\n");
        auto we = errors_of(w);
        CHECK(has_line(we, w.file("workers/alpha/worker.toml") + ":4: key 'grants[0].routes[0]'"));
        CHECK(has_line(we, w.file("workers/alpha/worker.toml") +
                               ":1: key 'grants[0].identities': not allowed in worker.toml"));
    }
}

TEST_CASE("validation: every problem in org.toml's gateway sections and in every worker, not only the first") {
    OrgDir d;
    d.org("[engine]\nagent = \"gpt5\"\n"                                   // 1-2
          "[gateway]\nledger = \"relative.jsonl\"\n"                       // 3-4
          "[credentials.anthropic]\nkind = \"api_key\"\nenv = \"K\"\nfile = \"/k\"\n"  // 5-8
          "[[grants]]\nhost = \"example.com\"\nmode = \"teleport\"\n"   // 9-11
          "[[grants]]\nhost = \"api.example.com\"\nmode = \"inject\"\n"  // 12-14
          "routes = [\"GET /a\", \"get /b\", \"GET /c/../d\"]\n");        // 15
    d.worker("alpha", "agent = 5\n[[grants]]\nhost = \"x.example.com\"\nmode = \"inject\"\ncredential = \"nope\"\n");
    d.worker("beta", "[[grants]]\nhost = \"y.example.com\"\nmode = \"tunnel\"\nroutes = [\"GET /\"]\n"
                     "[[grants]]\nhost = \"z.example.com\"\nmod = \"tunnel\"\n");
    d.worker("gamma", "[[grants]]\nhost = \"api.example.com\"\nmode = \"inject\"\ncredential = \"anthropic\"\n");
    auto c = config::check_org(d.str());
    std::string e;
    for (const auto& x : c.errors) e += x.text() + "\n";
    INFO(e);
    const std::string org = d.file("org.toml");
    const std::string alpha = d.file("workers/alpha/worker.toml"), beta = d.file("workers/beta/worker.toml");
    CHECK(has_line(e, org + ":2: key 'engine.agent': got \"gpt5\", allowed: pi | claude | codex\n"));
    CHECK(has_line(e, org + ":4: key 'gateway.ledger': got \"relative.jsonl\", allowed: an absolute path\n"));
    CHECK(has_line(e, org + ":5: keys 'credentials.anthropic.file' and 'credentials.anthropic.env': both set"));
    CHECK(has_line(e, org + ":11: key 'grants[0].mode': got \"teleport\", allowed: tunnel | inject\n"));
    CHECK(has_line(e, org + ":15: key 'grants[1].routes[1]': got \"get /b\""));
    CHECK(has_line(e, org + ":15: key 'grants[1].routes[2]': got \"GET /c/../d\""));
    // The workers are checked although org.toml's gateway sections failed.
    CHECK(has_line(e, alpha + ":1: key 'agent': got an integer, allowed: pi | claude | codex\n"));
    CHECK(has_line(e, alpha + ":5: key 'grants[0].credential': got \"nope\", allowed: anthropic\n"));
    CHECK(has_line(e, beta + ":4: key 'grants[0].routes': got an array, allowed: no routes with mode = \"tunnel\""));
    CHECK(has_line(e, beta + ":7: unknown key 'grants[1].mod'"));
    CHECK(has_line(e, beta + ":5: key 'grants[1].mode' is missing, allowed: tunnel | inject\n"));
    // gamma names a credential whose section has an error: reported once, at the section.
    CHECK_FALSE(has_line(e, "workers/gamma"));
    CHECK(c.errors.size() == 11);
}

TEST_CASE("validation: limits, env, rootfs, model") {
    OrgDir d;
    d.org("[sandbox]\nmemory = \"12XB\"\npids = 0\ncpus = -1\ntimeout = \"5 fortnights\"\ntmp_size = true\n"
          "rootfs = \"/nonexistent/corral/image\"\n");
    d.worker("alpha", "model = \"-rf\"\n[env]\nHTTPS_PROXY = \"http://evil\"\nhome = \"/x\"\nGOOD = 1\n");
    auto e = errors_of(d);
    const std::string org = d.file("org.toml"), wk = d.file("workers/alpha/worker.toml");
    CHECK(has_line(e, org + ":2: key 'sandbox.memory': invalid size \"12XB\""));
    CHECK(has_line(e, org + ":3: key 'sandbox.pids': got 0, allowed: a positive integer"));
    CHECK(has_line(e, org + ":4: key 'sandbox.cpus'"));
    CHECK(has_line(e, org + ":5: key 'sandbox.timeout'"));
    CHECK(has_line(e, org + ":6: key 'sandbox.tmp_size': got a boolean"));
    // rootfs after [sandbox] belongs to the table: an unknown key there
    CHECK(has_line(e, org + ":7: key 'sandbox.rootfs': unknown key"));
    CHECK(has_line(e, wk + ":1: key 'model': got \"-rf\""));
    CHECK(has_line(e, wk + ":3: key 'env.HTTPS_PROXY': set by corral itself"));
    CHECK(has_line(e, wk + ":4: key 'env.home': set by corral itself"));
    CHECK(has_line(e, wk + ":5: key 'env.GOOD': got an integer, expected a string"));

    SUBCASE("rootfs that is not a directory") {
        OrgDir r;
        r.org("rootfs = \"/nonexistent/corral/image\"\n");
        CHECK(has_line(errors_of(r), r.file("org.toml") + ":1: key 'rootfs': got \"/nonexistent/corral/image\""));
    }
    SUBCASE("rootfs = \"image:NAME\": kept as given (the store is read when a run starts); a bad NAME refused") {
        OrgDir im;
        im.org("rootfs = \"image:base-12\"\n");
        im.worker("a", "");
        im.worker("b", "rootfs = \"image:tools.v2\"\n");
        auto loaded = config::load_org(im.str());
        CHECK(corral::names::to_string(config::resolve_worker(loaded, "a").rootfs) == "image:base-12");
        CHECK(corral::names::to_string(config::resolve_worker(loaded, "b").rootfs) == "image:tools.v2");
        OrgDir bad;
        bad.org("rootfs = \"image:../x\"\n");
        CHECK(has_line(errors_of(bad), bad.file("org.toml") + ":1: key 'rootfs': got \"image:../x\", allowed: "
                                                               "\"image:NAME\" with NAME of A-Z a-z 0-9 . _ -"));
        OrgDir no_name;
        no_name.org("rootfs = \"image:\"\n");
        CHECK(has_line(errors_of(no_name), no_name.file("org.toml") + ":1: key 'rootfs': got \"image:\", allowed: "
                                                                       "\"image:NAME\" with NAME of A-Z a-z 0-9 . _ - "
                                                                       "(starting with a letter or digit)"));
        OrgDir empty;
        empty.org("");
        empty.worker("w", "rootfs = \"\"\n");
        CHECK(has_line(errors_of(empty), empty.file("workers/w/worker.toml") + ":1: key 'rootfs': got \"\", allowed: "
                                                                              "\"host\" or a directory holding the image's root"));
    }
    SUBCASE("zero and wrong types name what is allowed, without contradiction") {
        OrgDir z;
        z.org("rootfs = 5\n[sandbox]\ntimeout = 0\ncpus = 0\npids = -3\nmemory = 0\n");
        z.worker("w", "rootfs = true\n[sandbox]\ntimeout = -5\ncpus = -0.5\n");
        auto ze = errors_of(z);
        const std::string o = z.file("org.toml"), w = z.file("workers/w/worker.toml");
        CHECK(has_line(ze, o + ":1: key 'rootfs': got an integer, allowed: \"host\" | \"image:NAME\" | a directory path"));
        CHECK(has_line(ze, o + ":3: key 'sandbox.timeout': got 0, allowed: a positive duration like \"30m\" or a "
                           "positive integer of seconds"));
        CHECK(has_line(ze, o + ":4: key 'sandbox.cpus': got 0, allowed: a positive number of CPUs"));
        CHECK(has_line(ze, o + ":5: key 'sandbox.pids': got -3, allowed: a positive integer"));
        CHECK(has_line(ze, o + ":6: key 'sandbox.memory': got 0, allowed: a positive size"));
        CHECK(has_line(ze, w + ":1: key 'rootfs': got a boolean, allowed: \"host\" | \"image:NAME\" | a directory path"));
        CHECK(has_line(ze, w + ":3: key 'sandbox.timeout': got -5, allowed: a positive duration"));
        CHECK(has_line(ze, w + ":4: key 'sandbox.cpus': got -0.5, allowed: a positive number of CPUs"));
    }
}

TEST_CASE("validation: worker directories") {
    OrgDir d;
    d.org("");
    d.worker("good-1", "");
    d.write("workers/bad name/worker.toml", "");
    d.write("workers/.hidden/worker.toml", "");
    d.write("workers/README", "not a worker");
    d.write("workers/empty/.keep", "");
    auto c = config::check_org(d.str());
    std::string e;
    for (const auto& x : c.errors) e += x.text() + "\n";
    CHECK(has_line(e, d.file("workers/bad name") + ": invalid worker name \"bad name\": contains ' '"));
    CHECK(has_line(e, d.file("workers/.hidden") + ": invalid worker name \".hidden\": must start with a letter or digit"));
    CHECK(has_line(e, d.file("workers/README") + ": not a directory"));
    CHECK(has_line(e, d.file("workers/empty/worker.toml") + ": missing"));
    CHECK(c.org.workers.count("good-1") == 1);
    CHECK(names::check_worker_name(std::string(65, 'a')).has_value());
    CHECK_FALSE(names::check_worker_name("a.b_c-9").has_value());
}

TEST_CASE("validation: syntax errors and a missing org.toml") {
    OrgDir d;
    SUBCASE("missing org.toml") {
        CHECK(has_line(errors_of(d), d.file("org.toml") + ": missing"));
    }
    SUBCASE("a TOML syntax error is one line with the line number") {
        d.org("[engine]\nagent = \"pi\"\nthis is not toml\n");
        auto c = config::check_org(d.str());
        REQUIRE(c.errors.size() == 1);
        std::string t = c.errors[0].text();
        CHECK(t.find(d.file("org.toml") + ":3: TOML syntax error") == 0);
        CHECK(t.find('\n') == std::string::npos);
    }
    SUBCASE("not a directory") {
        auto c = config::check_org(d.file("nowhere"));
        REQUIRE(c.errors.size() == 1);
        CHECK(c.errors[0].text().find("not a directory") != std::string::npos);
    }
    SUBCASE("load_org puts every error on its own line") {
        d.org("[engine]\nagent = \"x\"\nmodel = \"-y\"\n");
        try {
            config::load_org(d.str());
            FAIL("expected ConfigError");
        } catch (const config::ConfigError& ex) {
            std::string what = ex.what();
            CHECK(std::count(what.begin(), what.end(), '\n') == 1);
            CHECK(has_line(what, ":2: key 'engine.agent'"));
            CHECK(has_line(what, ":3: key 'engine.model'"));
        }
    }
}

TEST_CASE("warnings: a non-pi worker with [channels]") {
    OrgDir d;
    d.org("[engine]\nagent = \"codex\"\n");
    d.worker("claude-w", "agent = \"claude\"\n\n[channels]\ndiscord = \"#ops\"\n");
    d.worker("codex-w", "[channels]\nslack = \"#x\"\n");
    d.worker("pi-w", "agent = \"pi\"\n[channels]\nslack = \"#x\"\n");
    auto c = config::check_org(d.str());
    CHECK(c.errors.empty());
    std::string all;
    for (const auto& w : c.warnings) all += w.text() + "\n";
    // The quoted sentence is the whole message: nothing after it.
    CHECK(has_line(all, d.file("workers/claude-w/worker.toml") +
                            ":3: key 'channels': sessions run pi; agent applies to task runs\n"));
    CHECK(has_line(all, d.file("workers/codex-w/worker.toml") +
                            ":1: key 'channels': sessions run pi; agent applies to task runs\n"));
    CHECK_FALSE(has_line(all, "pi-w"));
    auto r = config::resolve_worker(c.org, "claude-w");
    REQUIRE(r.warnings.size() == 1);
    CHECK(r.warnings[0].key == "channels");
    CHECK(r.warnings[0].message == "sessions run pi; agent applies to task runs");
    CHECK(r.warnings[0].worker == "claude-w");
    CHECK(config::resolve_worker(c.org, "pi-w").warnings.empty());
}

TEST_CASE("warnings: codex in ChatGPT mode without the account id") {
    OrgDir d;
    d.org("[credentials.openai]\nkind = \"oauth_token\"\nenv = \"OPENAI_TOKEN\"\n");
    d.worker("cx", "agent = \"codex\"\n");
    auto c = config::check_org(d.str());
    CHECK(c.errors.empty());
    REQUIRE(c.warnings.size() == 1);
    CHECK(c.warnings[0].key == "engine.chatgpt_account_id");
    OrgDir ok;
    ok.org("[engine]\nchatgpt_account_id = \"acct-123\"\n[credentials.openai]\nkind = \"oauth_token\"\nenv = \"OPENAI_TOKEN\"\n");
    ok.worker("cx", "agent = \"codex\"\n");
    auto c2 = config::check_org(ok.str());
    CHECK(c2.errors.empty());
    CHECK(c2.warnings.empty());
    CHECK(config::resolve_worker(c2.org, "cx").chatgpt_account_id == "acct-123");
}

TEST_CASE("docs/configuration.md's example organisation is valid") {
    std::ifstream f(std::string(test::source_root()) + "/docs/configuration.md");
    REQUIRE(f.good());
    std::stringstream doc;
    doc << f.rdbuf();
    OrgDir d;
    REQUIRE(d.write_markdown_example(doc.str(), "acme") == 4);  // org.toml and three workers
    auto c = config::check_org(d.str());
    std::string e;
    for (const auto& x : c.errors) e += x.text() + "\n";
    CHECK_MESSAGE(c.errors.empty(), e);
    REQUIRE(c.org.workers.size() == 3);
    CHECK(config::resolve_worker(c.org, "reviewer").agent == AgentKind::claude);
    CHECK(config::resolve_worker(c.org, "fixer").agent == AgentKind::codex);
    CHECK(config::resolve_worker(c.org, "helper").agent == AgentKind::pi);
    // The one warning the document promises: the reviewer's channels.
    REQUIRE(c.warnings.size() == 1);
    CHECK(c.warnings[0].text() == d.file("workers/reviewer/worker.toml") +
                                      ":4: key 'channels': sessions run pi; agent applies to task runs");
    // Every agent's credential is defined (its secret is the operator's to provide).
    for (const char* cred : {"anthropic", "openai"}) CHECK(c.org.gateway.credentials.count(cred) == 1);
}

TEST_CASE("diagnostics: every problem keeps its file, line, key, got and allowed") {
    // The gateway's sections, budgets and a worker's grants are checked by the
    // same checker as org.toml's own keys: their diagnostics name the file
    // too, not only a pre-formatted line.
    OrgDir d;
    d.org("[engine]\nagent = \"emacs\"\n[[grants]]\nhost = \"api.example.com\"\nmode = \"x\"\n[budget]\nusd = -1\n");
    d.worker("alpha", "[[grants]]\nhost = \"h.example.com\"\nmode = \"tunnel\"\nport = 0\n");
    auto c = config::check_org(d.str());
    auto find = [&](const std::string& key) -> const config::Diagnostic* {
        for (const auto& e : c.errors)
            if (e.key == key) return &e;
        return nullptr;
    };
    const auto* agent = find("engine.agent");
    REQUIRE(agent);
    CHECK(agent->file == d.file("org.toml"));
    CHECK(agent->line == 2);
    CHECK(agent->got == "\"emacs\"");
    CHECK(agent->allowed == "pi | claude | codex");
    const auto* mode = find("grants[0].mode");
    REQUIRE(mode);
    CHECK(mode->file == d.file("org.toml"));
    CHECK(mode->line == 5);
    CHECK(mode->got == "\"x\"");
    CHECK(mode->allowed == "tunnel | inject");
    CHECK(mode->text() == d.file("org.toml") + ":5: key 'grants[0].mode': got \"x\", allowed: tunnel | inject");
    const auto* usd = find("budget.usd");
    REQUIRE(usd);
    CHECK(usd->file == d.file("org.toml"));
    CHECK(usd->line == 7);
    CHECK(usd->got == "-1");
    const auto* port = find("grants[0].port");
    REQUIRE(port);
    CHECK(port->file == d.file("workers/alpha/worker.toml"));
    CHECK(port->line == 4);
    CHECK(port->allowed == "an integer 1..65535");
    for (const auto& e : c.errors) {
        CHECK(!e.file.empty());
        CHECK(e.message.empty() == (e.form != config::Diagnostic::Form::message));
    }
}

TEST_CASE("scratch_size and tmp_size: org.toml, then worker.toml; 1MiB to 64GiB") {
    OrgDir d;
    d.org("[sandbox]\nscratch_size = \"1GiB\"\ntmp_size = \"64MiB\"\n");
    d.worker("alpha", "[sandbox]\nscratch_size = \"2G\"\n");
    d.worker("beta", "");
    auto org = config::load_org(d.str());
    CHECK(config::resolve_worker(org, "alpha").limits.scratch_bytes == 2ull << 30);
    CHECK(config::resolve_worker(org, "alpha").limits.tmp_bytes == 64ull << 20);
    CHECK(config::resolve_worker(org, "beta").limits.scratch_bytes == 1ull << 30);

    OrgDir bad;
    bad.org("[sandbox]\nscratch_size = \"512K\"\ntmp_size = \"65GiB\"\n");
    bad.worker("alpha", "[sandbox]\nscratch_size = \"lots\"\ntmp_size = 0\n");
    auto e = errors_of(bad);
    const std::string org_file = bad.file("org.toml"), wk = bad.file("workers/alpha/worker.toml");
    CHECK(has_line(e, org_file + ":2: key 'sandbox.scratch_size': got 512KiB, allowed: a size from 1MiB to 64GiB"));
    CHECK(has_line(e, org_file + ":3: key 'sandbox.tmp_size': got 65GiB, allowed: a size from 1MiB to 64GiB"));
    CHECK(has_line(e, wk + ":2: key 'sandbox.scratch_size': invalid size \"lots\""));
    CHECK(has_line(e, wk + ":3: key 'sandbox.tmp_size': got 0"));
}

TEST_CASE("agent = \"none\": an egress-only worker, no agent warnings; other unknown agents still refused") {
    OrgDir d;
    d.org("[engine]\nagent = \"codex\"\n[credentials.openai]\nkind = \"oauth_token\"\nenv = \"CORRAL_TEST_X\"\n");
    d.worker("fetch", "agent = \"none\"\n[channels]\nx = 1\n[[grants]]\nhost = \"pypi.org\"\nmode = \"tunnel\"\n");
    auto c = config::check_org(d.str());
    REQUIRE(c.errors.empty());
    // Neither the channels warning nor the ChatGPT account one: it runs no agent.
    CHECK(c.warnings.empty());
    auto w = config::resolve_worker(c.org, "fetch");
    CHECK(w.egress_only);
    CHECK(w.agent_source == d.file("workers/fetch/worker.toml") + ":1");
    REQUIRE(w.grants.size() == 1);
    CHECK(w.grants[0].host == "pypi.org");

    OrgDir bad;
    bad.org("");
    bad.worker("w", "agent = \"nobody\"\n");
    CHECK(has_line(errors_of(bad), bad.file("workers/w/worker.toml") +
                                       ":1: key 'agent': got \"nobody\", allowed: pi | claude | codex | none"));
    OrgDir engine;
    engine.org("[engine]\nagent = \"none\"\n");
    CHECK(has_line(errors_of(engine), engine.file("org.toml") + ":2: key 'engine.agent': got \"none\", allowed: pi | claude | codex"));
}

TEST_CASE("review = true: the worker's --workspace is reviewed; absent it is not; anything but a boolean is refused") {
    OrgDir d;
    d.org("");
    d.worker("careful", "review = true\n");
    d.worker("trusted", "review = false\n");
    d.worker("plain", "");
    auto c = config::check_org(d.str());
    REQUIRE(c.errors.empty());
    CHECK(config::resolve_worker(c.org, "careful").review);
    CHECK_FALSE(config::resolve_worker(c.org, "trusted").review);
    CHECK_FALSE(config::resolve_worker(c.org, "plain").review);

    OrgDir bad;
    bad.org("");
    bad.worker("w", "review = \"yes\"\n");
    CHECK(has_line(errors_of(bad), bad.file("workers/w/worker.toml") + ":1: key 'review': got a string, expected a boolean"));
}
