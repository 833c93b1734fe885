// A grant's `policy` sub-table: its keys and defaults, both TOML spellings,
// a worker.toml's grants, and every bad value as one line naming file, line,
// key and what is allowed.
#include <doctest/doctest.h>

#include <type_traits>

#include <string>
#include <vector>

#include "config/gateway_config.hpp"
#include "config/org_config.hpp"
#include "gateway/metering/model_policy.hpp"
#include "tests/config/org_fixture.hpp"

using namespace corral;
using config::ConfigError;
using config::GrantPolicy;

namespace {

const std::string head = R"([gateway]
listen_tcp = "127.0.0.1:0"
[credentials.anthropic]
kind = "oauth_token"
env = "X"
)";

config::GatewayConfig parse(const std::string& grants) { return config::parse_gateway_config(head + grants, "g.toml"); }

// Every error line of parsing `grants`, joined by '\n'; "" when it parsed.
std::string errors_of(const std::string& grants) {
    try {
        parse(grants);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("grant policy: a grant without one allows everything") {
    auto cfg = parse(R"(
[[grants]]
host = "api.anthropic.com"
mode = "inject"
credential = "anthropic"
)");
    REQUIRE(cfg.grants.size() == 1);
    const GrantPolicy& p = cfg.grants[0].policy;
    CHECK(p.models.empty());
    CHECK_FALSE(p.max_output_tokens);
    CHECK(p.server_tools);
    CHECK(p.mcp_servers);
    CHECK(p.url_sources);
    CHECK(p.context_management);
    CHECK_FALSE(p.anthropic_betas);
    CHECK(p.where == "");
    CHECK_FALSE(p.strict());
}

TEST_CASE("grant policy: every key, as a [grants.policy] table and inline") {
    auto cfg = parse(R"(
[[grants]]
host = "api.anthropic.com"
mode = "inject"
credential = "anthropic"

[grants.policy]
models = ["claude-sonnet-4-5*", "claude-haiku-4-5-20251001"]
max_output_tokens = 32000
server_tools = false
mcp_servers = false
url_sources = false
context_management = false
anthropic_betas = ["claude-code-20250219", "interleaved-thinking-2025-05-14"]

[[grants]]
host = "api.openai.com"
mode = "inject"
policy = { models = ["gpt-5*"], server_tools = false, anthropic_betas = [] }
)");
    REQUIRE(cfg.grants.size() == 2);
    const GrantPolicy& a = cfg.grants[0].policy;
    CHECK(a.models == std::vector<std::string>{"claude-sonnet-4-5*", "claude-haiku-4-5-20251001"});
    CHECK(a.max_output_tokens == 32000u);
    CHECK_FALSE(a.server_tools);
    CHECK_FALSE(a.mcp_servers);
    CHECK_FALSE(a.url_sources);
    CHECK_FALSE(a.context_management);
    REQUIRE(a.anthropic_betas);
    CHECK(*a.anthropic_betas == std::vector<std::string>{"claude-code-20250219", "interleaved-thinking-2025-05-14"});
    CHECK(a.where == "g.toml:12");  // the [grants.policy] line
    const GrantPolicy& o = cfg.grants[1].policy;
    CHECK(o.models == std::vector<std::string>{"gpt-5*"});
    CHECK_FALSE(o.server_tools);
    CHECK(o.mcp_servers);
    REQUIRE(o.anthropic_betas);
    CHECK(o.anthropic_betas->empty());

    // The gateway decides on this very value: its ModelPolicy is the config's type.
    static_assert(std::is_same_v<gateway::metering::ModelPolicy, config::GrantPolicy>);
    CHECK(a.strict());
    CHECK(a.reads_body());
    CHECK(a.max_output_tokens == 32000u);
}

TEST_CASE("grant policy: each bad value is one line naming file, line, key and what is allowed") {
    const std::string grant = "[[grants]]\nhost = \"api.anthropic.com\"\nmode = \"inject\"\n";  // lines 6-8
    CHECK(errors_of(grant + "policy = \"strict\"\n") ==
          "g.toml:9: key 'grants[0].policy': got \"strict\", allowed: a table ([grants.policy], or policy = { models "
          "= [...], server_tools = false })");
    CHECK(errors_of(grant + "policy = { model = [\"x\"] }\n") ==
          "g.toml:9: unknown key 'grants[0].policy.model', allowed: anthropic_betas | context_management | "
          "max_output_tokens | mcp_servers | models | server_tools | url_sources");
    CHECK(errors_of(grant + "policy = { models = \"claude\" }\n") ==
          "g.toml:9: key 'grants[0].policy.models': got \"claude\", allowed: an array of strings: a model name or "
          "glob of letters, digits, '._-:/@+' and '*' '?' (\"claude-sonnet-4-5*\")");
    CHECK(errors_of(grant + "policy = { models = [] }\n") ==
          "g.toml:9: key 'grants[0].policy.models': got an array, allowed: at least one model name or glob (leave "
          "models out to allow any model)");
    CHECK(errors_of(grant + "[grants.policy]\nmodels = [\"ok\", \"also-ok\", \"bad name\", 3]\n") ==
          "g.toml:10: key 'grants[0].policy.models[2]': got \"bad name\", allowed: a model name or glob of letters, "
          "digits, '._-:/@+' and '*' '?' (\"claude-sonnet-4-5*\")\n"
          "g.toml:10: key 'grants[0].policy.models[3]': got 3, allowed: a model name or glob of letters, digits, "
          "'._-:/@+' and '*' '?' (\"claude-sonnet-4-5*\")");
    CHECK(errors_of(grant + "policy = { max_output_tokens = 0 }\n") ==
          "g.toml:9: key 'grants[0].policy.max_output_tokens': got 0, allowed: an integer 1..9223372036854775807");
    CHECK(errors_of(grant + "policy = { max_output_tokens = \"32k\" }\n") ==
          "g.toml:9: key 'grants[0].policy.max_output_tokens': got \"32k\", allowed: an integer 1..9223372036854775807");
    CHECK(errors_of(grant + "policy = { server_tools = \"no\" }\n") ==
          "g.toml:9: key 'grants[0].policy.server_tools': got \"no\", allowed: true | false");
    CHECK(errors_of(grant + "policy = { url_sources = 0, context_management = 1, mcp_servers = \"x\" }\n") ==
          "g.toml:9: key 'grants[0].policy.mcp_servers': got \"x\", allowed: true | false\n"
          "g.toml:9: key 'grants[0].policy.url_sources': got 0, allowed: true | false\n"
          "g.toml:9: key 'grants[0].policy.context_management': got 1, allowed: true | false");
    CHECK(errors_of(grant + "policy = { anthropic_betas = [\"a,b\"] }\n") ==
          "g.toml:9: key 'grants[0].policy.anthropic_betas[0]': got \"a,b\", allowed: a beta name of token "
          "characters, e.g. \"oauth-2025-04-20\"");
    CHECK(errors_of(grant + "policy = { anthropic_betas = \"oauth-2025-04-20\" }\n") ==
          "g.toml:9: key 'grants[0].policy.anthropic_betas': got \"oauth-2025-04-20\", allowed: an array of strings: "
          "a beta name of token characters, e.g. \"oauth-2025-04-20\"");
}

TEST_CASE("grant policy: refused on a tunnel grant") {
    CHECK(errors_of("[[grants]]\nhost = \"github.com\"\nmode = \"tunnel\"\npolicy = { server_tools = false }\n") ==
          "g.toml:9: key 'grants[0].policy': got a table, allowed: no policy with mode = \"tunnel\" (a blind tunnel "
          "cannot see requests); use mode = \"inject\"");
    // A bad mode is reported once; the policy is still checked on its own.
    CHECK(errors_of("[[grants]]\nhost = \"github.com\"\nmode = \"x\"\npolicy = { models = [] }\n") ==
          "g.toml:8: key 'grants[0].mode': got \"x\", allowed: tunnel | inject\n"
          "g.toml:9: key 'grants[0].policy.models': got an array, allowed: at least one model name or glob (leave "
          "models out to allow any model)");
}

TEST_CASE("grant policy: a worker.toml's grants take a policy too") {
    test::OrgDir d;
    d.org("[credentials.anthropic]\nkind = \"oauth_token\"\nenv = \"X\"\n");
    d.worker("alpha", R"(agent = "claude"
[[grants]]
host = "api.anthropic.com"
mode = "inject"
credential = "anthropic"
[grants.policy]
models = ["claude-sonnet-4-5*"]
server_tools = false
)");
    d.worker("beta", R"([[grants]]
host = "api.anthropic.com"
mode = "inject"
policy = { server_tool = false }
)");
    auto c = config::check_org(d.str());
    std::string all;
    for (const auto& e : c.errors) all += e.text() + "\n";
    CHECK(all.find("unknown key 'grants[0].policy.server_tool', allowed: anthropic_betas | context_management") !=
          std::string::npos);
    CHECK(all.find("alpha") == std::string::npos);
}

TEST_CASE("grant approval: approval = true with its timeout; a bad timeout names what is allowed") {
    auto cfg = parse(R"(
[[grants]]
host = "api.github.com"
mode = "tunnel"
approval = true
approval_timeout = "90s"
[[grants]]
host = "example.com"
mode = "tunnel"
)");
    REQUIRE(cfg.grants.size() == 2);
    CHECK(cfg.grants[0].approval);
    CHECK(cfg.grants[0].approval_timeout == std::chrono::seconds(90));
    CHECK(!cfg.grants[1].approval);
    CHECK(cfg.grants[1].approval_timeout == std::chrono::seconds(300));

    CHECK(errors_of("[[grants]]\nhost = \"a.test\"\nmode = \"tunnel\"\napproval = true\napproval_timeout = \"2h\"\n")
              .find("approval_timeout") != std::string::npos);
    CHECK(errors_of("[[grants]]\nhost = \"a.test\"\nmode = \"tunnel\"\napproval = true\napproval_timeout = \"1500ms\"\n")
              .find("whole seconds") != std::string::npos);
    CHECK(errors_of("[[grants]]\nhost = \"a.test\"\nmode = \"tunnel\"\napproval_timeout = \"1m\"\n").find("only with approval = true") !=
          std::string::npos);
    CHECK(errors_of("[[grants]]\nhost = \"a.test\"\nmode = \"tunnel\"\napproval = \"yes\"\n").find("approval") != std::string::npos);
}
