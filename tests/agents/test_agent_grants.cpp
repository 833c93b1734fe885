// What a worker's agent may reach and what its box sees: the grants each
// kind implies (model hosts only, injected; refresh endpoints never), the
// box's environment (proxy, CA, what a worker's [env] cannot override), the
// message for a missing credential, and the gateway config a run derives.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/agent_profile.hpp"
#include "config/org_config.hpp"
#include "names/box_environment.hpp"
#include "tests/agents/profile_support.hpp"
#include "tests/support/process.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace corral;
using agents::AgentInputs;
using agents::AgentKind;
using agents::CredentialMode;
using namespace corral::test::profile;

TEST_CASE("implied grants: model hosts only, injected; refresh endpoints never granted") {
    using agents::implied_grants;
    auto claude = implied_grants(AgentKind::claude, CredentialMode::oauth, "alpha");
    REQUIRE(claude.size() == 1);
    CHECK(claude[0].host == "api.anthropic.com");
    CHECK(claude[0].port == 443);
    CHECK(claude[0].mode == config::GrantMode::inject);
    CHECK(claude[0].credential == "anthropic");
    CHECK(claude[0].identities == std::vector<std::string>{"alpha"});
    bool messages = false;
    for (const auto& r : claude[0].routes) messages |= r.method == "POST" && r.path == "/v1/messages" && !r.prefix;
    CHECK(messages);

    auto chatgpt = implied_grants(AgentKind::codex, CredentialMode::oauth, "alpha");
    REQUIRE(chatgpt.size() == 1);
    CHECK(chatgpt[0].host == "chatgpt.com");
    CHECK(chatgpt[0].credential == "openai");
    bool discovery = false, ws = false;
    for (const auto& r : chatgpt[0].routes) {
        discovery |= r.text == "GET /backend-api/wham/accounts/check";
        ws |= r.text == "GET /backend-api/codex/responses";
    }
    CHECK(discovery);
    CHECK(ws);
    auto apikey = implied_grants(AgentKind::codex, CredentialMode::api_key, "");
    REQUIRE(apikey.size() == 1);
    CHECK(apikey[0].host == "api.openai.com");
    CHECK(apikey[0].identities.empty());
    auto prefix_route = std::find_if(apikey[0].routes.begin(), apikey[0].routes.end(),
                                     [](const config::Route& r) { return r.prefix; });
    REQUIRE(prefix_route != apikey[0].routes.end());
    CHECK(prefix_route->path == "/v1/responses/");

    auto pi = implied_grants(AgentKind::pi, CredentialMode::api_key, "alpha");
    REQUIRE(pi.size() == 1);
    CHECK(pi[0].host == "api.anthropic.com");

    // OpenAI reads an API key only as a Bearer token: the implied grant
    // injects it so, whatever the api_key default (x-api-key) is.
    using Headers = std::vector<std::pair<std::string, std::string>>;
    CHECK(apikey[0].default_headers == Headers{{"authorization", "Bearer {key}"}});
    CHECK(claude[0].default_headers.empty());  // claude's api_key default x-api-key is right
    CHECK(chatgpt[0].default_headers.empty());  // oauth_token default: authorization: Bearer
    CHECK(pi[0].default_headers.empty());
    config::CredentialSpec openai;
    openai.name = "openai";
    openai.kind = config::CredentialKind::api_key;
    openai.headers = {{"x-api-key", "{key}"}};  // what the parser gives an api_key without a template
    CHECK(config::credential_for_grant(openai, apikey[0]).headers == Headers{{"authorization", "Bearer {key}"}});
    openai.headers = {{"authorization", "Bearer {key}"}, {"openai-organization", "org-1"}};
    openai.template_given = true;  // an operator's own template always wins
    CHECK(config::credential_for_grant(openai, apikey[0]).headers == openai.headers);

    for (auto k : {AgentKind::claude, AgentKind::codex, AgentKind::pi})
        for (auto m : {CredentialMode::oauth, CredentialMode::api_key})
            for (const auto& g : implied_grants(k, m, "w")) {
                CHECK(g.host != "platform.claude.com");
                CHECK(g.host != "auth.openai.com");
                CHECK(g.host != "ab.chatgpt.com");
                CHECK(g.mode == config::GrantMode::inject);
                CHECK(!g.credential.empty());
            }
}

TEST_CASE("the box's environment: proxy on loopback, every loopback spelling exempt, CA everywhere") {
    auto env = agents::proxy_environment("/etc/ssl/corral-ca.crt");
    std::map<std::string, std::string> m(env.begin(), env.end());
    for (const char* k : {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
                          "npm_config_proxy", "npm_config_https_proxy", "PIP_PROXY", "GIT_CONFIG_VALUE_0"})
        CHECK(m[k] == "http://127.0.0.1:3128");
    for (const char* k : {"NO_PROXY", "no_proxy"}) {
        auto parts = split(m[k], ',');
        for (const char* host : {"localhost", "localhost.", "127.0.0.1", "::1", "[::1]"})
            CHECK(std::find(parts.begin(), parts.end(), host) != parts.end());
    }
    CHECK(m["GIT_CONFIG_COUNT"] == "1");
    CHECK(m["GIT_CONFIG_KEY_0"] == "http.proxy");
    CHECK(m["NODE_USE_ENV_PROXY"] == "1");
    for (const char* k : {"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                          "GIT_SSL_CAINFO", "CODEX_CA_CERTIFICATE"})
        CHECK(m[k] == "/etc/ssl/corral-ca.crt");
}

TEST_CASE("without an intercepting grant the proxy environment names no CA") {
    auto env = agents::proxy_environment("");
    std::map<std::string, std::string> m(env.begin(), env.end());
    CHECK(m["HTTPS_PROXY"] == "http://127.0.0.1:3128");
    CHECK(m["NODE_USE_ENV_PROXY"] == "1");
    for (const char* k : {"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                          "GIT_SSL_CAINFO", "CODEX_CA_CERTIFICATE", "PIP_CERT"})
        CHECK_MESSAGE(m.count(k) == 0, k);
}

TEST_CASE("a worker's [env] cannot override anything corral sets in the box") {
    auto env = agents::proxy_environment("/ca.crt");
    for (const auto& c : kCases) {
        auto p = agents::make_agent_profile(c.kind, golden_inputs(c.mode));
        env.insert(env.end(), p.env.begin(), p.env.end());
    }
    for (const auto& kv : env) {
        const std::string& name = kv.first;
        CAPTURE(name);
        CHECK(names::is_reserved_env(name));
    }
    CHECK_FALSE(names::is_reserved_env("MY_TOOL_FLAG"));
}

TEST_CASE("a missing credential is named with how to add it") {
    config::GatewayConfig gw;
    config::CredentialStatus none = config::credential_status(gw, "anthropic");
    CHECK_FALSE(none.defined);
    std::string msg = agents::missing_credential_message("alpha", AgentKind::claude, none);
    CHECK(msg.find("worker 'alpha' runs claude") != std::string::npos);
    CHECK(msg.find("'anthropic'") != std::string::npos);
    CHECK(msg.find("[credentials.anthropic]") != std::string::npos);
    CHECK(msg.find("env = \"ANTHROPIC_API_KEY\"") != std::string::npos);
    CHECK_THROWS_WITH_AS(agents::check_agent_credential("alpha", AgentKind::codex, gw),
                         doctest::Contains("[credentials.openai]"), UsageError);

    // Defined, but the variable it names is not set: named, with the source.
    config::CredentialSpec spec;
    spec.name = "anthropic";
    spec.env = "CORRAL_TEST_SURELY_UNSET_VARIABLE";
    gw.credentials["anthropic"] = spec;
    ::unsetenv("CORRAL_TEST_SURELY_UNSET_VARIABLE");
    auto unset = config::credential_status(gw, "anthropic");
    CHECK(unset.defined);
    CHECK_FALSE(unset.available);
    std::string m2 = agents::missing_credential_message("alpha", AgentKind::pi, unset);
    CHECK(m2.find("env CORRAL_TEST_SURELY_UNSET_VARIABLE") != std::string::npos);
    // ...and, like a missing one, how to fix it.
    CHECK(m2.find("; to fix: set CORRAL_TEST_SURELY_UNSET_VARIABLE to the secret (non-empty, no spaces) in the "
                  "environment corral runs in, or use file = \"/etc/corral/anthropic.key\" instead (owned by uid " +
                  std::to_string(::geteuid()) + ", mode 0600)") != std::string::npos);

    SUBCASE("a file with the wrong mode: the owner and mode to set, as commands") {
        char tmpl[] = "/tmp/corral-cred-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        const std::string file = std::string(tmpl) + "/anthropic.key";
        std::ofstream(file) << "sk-ant-real-looking-secret\n";
        ::chmod(file.c_str(), 0644);
        config::GatewayConfig fgw;
        config::CredentialSpec fspec;
        fspec.name = "anthropic";
        fspec.file = file;
        fgw.credentials["anthropic"] = fspec;
        auto bad = config::credential_status(fgw, "anthropic");
        CHECK_FALSE(bad.available);
        std::string m3 = agents::missing_credential_message("alpha", AgentKind::claude, bad);
        CHECK(m3.find("(file " + file + "): not available: ") != std::string::npos);
        CHECK(m3.find("mode 0644") != std::string::npos);
        const std::string uid = std::to_string(::geteuid());
        CHECK(m3.find("; to fix: put the secret alone in " + file + ", a regular file (not a symlink) owned by uid " +
                      uid + " (the user corral runs as) with mode 0600 or 0400: chown " + uid + " " + file +
                      " && chmod 600 " + file) != std::string::npos);
        CHECK(m3.find("sk-ant-real-looking-secret") == std::string::npos);
        fs::remove_all(tmpl);
    }

    ::setenv("CORRAL_TEST_SURELY_UNSET_VARIABLE", "sk-ant-real-looking-secret", 1);
    auto set = config::credential_status(gw, "anthropic");
    CHECK(set.available);
    CHECK(agents::missing_credential_message("alpha", AgentKind::pi, set).empty());
    CHECK_NOTHROW(agents::check_agent_credential("alpha", AgentKind::claude, gw));
    ::unsetenv("CORRAL_TEST_SURELY_UNSET_VARIABLE");
}

TEST_CASE("run_gateway_config: org settings, worker grants, implied grants unless the operator's replaces them") {
    config::OrgConfig org;
    org.gateway.gateway.ledger = "/tmp/ledger.jsonl";
    config::CredentialSpec cred;
    cred.name = "anthropic";
    cred.env = "X";
    org.gateway.credentials["anthropic"] = cred;
    config::ResolvedWorker w;
    w.name = "alpha";
    config::Grant tunnel;
    tunnel.host = names::builtin_host_pattern("github.com");
    w.grants.push_back(tunnel);

    auto implied = agents::implied_grants(AgentKind::claude, CredentialMode::api_key, "alpha");
    auto cfg = agents::run_gateway_config(org, w, implied);
    CHECK(cfg.gateway.ledger == "/tmp/ledger.jsonl");
    CHECK(cfg.credentials.count("anthropic") == 1);
    REQUIRE(cfg.grants.size() == 2);
    CHECK(cfg.grants[0].host == "api.anthropic.com");
    CHECK(cfg.grants[0].index == 0);
    CHECK(cfg.grants[1].host == "github.com");
    CHECK(cfg.grants[1].index == 1);

    config::Grant override_grant;
    override_grant.host = names::builtin_host_pattern("api.anthropic.com");
    override_grant.mode = config::GrantMode::inject;
    override_grant.credential = "anthropic";
    override_grant.connect_to = "127.0.0.1:9443";
    w.grants.push_back(override_grant);
    auto cfg2 = agents::run_gateway_config(org, w, implied);
    REQUIRE(cfg2.grants.size() == 2);
    CHECK(cfg2.grants[0].host == "github.com");
    CHECK(cfg2.grants[1].connect_to == "127.0.0.1:9443");
}
