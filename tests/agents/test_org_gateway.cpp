// org_gateway_config: what `corral gateway --org DIR` serves. Every worker's
// implied grants, scoped to that worker alone; org grants with their own
// identities; per identity exactly what an embedded gateway gives that worker's
// runs (find_grant over both); operator replacement; workers whose credential
// is unavailable left out with a line naming them; the listener requirement.
#include <doctest/doctest.h>

#include <algorithm>

#include "config/org_config.hpp"
#include "gateway/grants.hpp"
#include "agents/agent_profile.hpp"
#include "tests/config/org_fixture.hpp"

using namespace corral;
using agents::AgentKind;

namespace {

const char* const kCredentials =
    "[credentials.anthropic]\nkind = \"api_key\"\nenv = \"CORRAL_TEST_UNUSED_A\"\n"
    "[credentials.openai]\nkind = \"oauth_token\"\nenv = \"CORRAL_TEST_UNUSED_O\"\n"
    "[credentials.spare]\nkind = \"api_key\"\nenv = \"CORRAL_TEST_UNUSED_S\"\n";

// claude "cl", codex "cx" and pi "p" (with a grant of its own), an org grant
// for everyone and one for cx only.
void write_org(const test::OrgDir& d, const std::string& extra_org = "", const std::string& p_toml = "") {
    d.org("[gateway]\nlisten_unix = \"/run/corral-test/gw.sock\"\n" + std::string(kCredentials) +
          "[[grants]]\nhost = \"registry.npmjs.org\"\nmode = \"tunnel\"\n"
          "[[grants]]\nhost = \"github.com\"\nmode = \"tunnel\"\nidentities = [\"cx\"]\n" +
          extra_org);
    d.worker("cl", "agent = \"claude\"\n");
    d.worker("cx", "agent = \"codex\"\n");
    d.worker("p", "agent = \"pi\"\n[[grants]]\nhost = \"example.org\"\nmode = \"tunnel\"\n" + p_toml);
}

const config::Grant* lookup(const config::GatewayConfig& cfg, const std::string& worker, const std::string& host,
                            std::uint16_t port = 443) {
    auto h = gateway::normalize_host(host);
    REQUIRE(h.host);
    return gateway::find_grant(cfg, gateway::Identity{worker, "run-1"}, *h.host, port);
}

// The grants the daemon added for `worker` (after org.toml's own, which keep their scopes).
std::vector<const config::Grant*> scoped_to(const config::OrgConfig& org, const config::GatewayConfig& cfg,
                                            const std::string& worker) {
    std::vector<const config::Grant*> out;
    for (std::size_t i = org.gateway.grants.size(); i < cfg.grants.size(); ++i)
        if (cfg.grants[i].identities == std::vector<std::string>{worker}) out.push_back(&cfg.grants[i]);
    return out;
}

bool has_route(const config::Grant& g, const std::string& text) {
    return std::any_of(g.routes.begin(), g.routes.end(), [&](const config::Route& r) { return r.text == text; });
}

// The hosts any test here asks about: model hosts, refresh endpoints, org and worker grants.
const std::vector<std::string> kHosts = {"api.anthropic.com", "chatgpt.com",       "api.openai.com",
                                         "platform.claude.com", "auth.openai.com", "console.anthropic.com",
                                         "registry.npmjs.org", "github.com",       "example.org"};

// Per worker identity, the daemon finds the same grant (host, mode,
// credential, routes, connect_to) as the embedded gateway of that worker's run.
void check_same_as_embedded(const config::OrgConfig& org, const config::GatewayConfig& daemon,
                            const std::map<std::string, config::CredentialStatus>& status) {
    for (const auto& entry : org.workers) {
        const std::string name = entry.first;  // a named copy: clang 14 cannot capture structured bindings in CAPTURE
        auto w = config::resolve_worker(org, name);
        auto cred = status.at(agents::required_credential(w.agent).name);
        std::vector<config::Grant> implied;
        if (cred.available) implied = agents::implied_grants(w.agent, agents::credential_mode_for(cred.kind), name);
        auto embedded = agents::run_gateway_config(org, w, implied);
        for (const auto& host : kHosts) {
            CAPTURE(name);
            CAPTURE(host);
            const auto* a = lookup(daemon, name, host);
            const auto* b = lookup(embedded, name, host);
            REQUIRE((a == nullptr) == (b == nullptr));
            if (!a) continue;
            CHECK(a->host == b->host);
            CHECK(a->mode == b->mode);
            CHECK(a->credential == b->credential);
            CHECK(a->connect_to == b->connect_to);
            CHECK(a->where == b->where);
            REQUIRE(a->routes.size() == b->routes.size());
            for (std::size_t i = 0; i < a->routes.size(); ++i) CHECK(a->routes[i].text == b->routes[i].text);
        }
    }
}

std::map<std::string, config::CredentialStatus> all_available(const config::OrgConfig& org) {
    std::map<std::string, config::CredentialStatus> out;
    for (const char* n : {"anthropic", "openai"}) {
        config::CredentialStatus s;
        s.defined = s.available = true;
        s.kind = org.gateway.credentials.at(n).kind;
        out[n] = s;
    }
    return out;
}

}  // namespace

TEST_CASE("org_gateway_config: each worker's implied grants, scoped to that worker; org grants keep their identities") {
    test::OrgDir d;
    write_org(d);
    auto org = config::load_org(d.str());
    auto status = all_available(org);
    auto plan = agents::org_gateway_config(org, status);
    const auto& cfg = plan.config;
    CHECK(plan.left_out.empty());
    CHECK(cfg.gateway.listen_unix == "/run/corral-test/gw.sock");

    // Org grants first, unchanged scope; then the workers by name.
    REQUIRE(cfg.grants.size() == 6);
    CHECK(cfg.grants[0].host == "registry.npmjs.org");
    CHECK(cfg.grants[0].identities.empty());
    CHECK(cfg.grants[1].host == "github.com");
    CHECK(cfg.grants[1].identities == std::vector<std::string>{"cx"});
    for (std::size_t i = 0; i < cfg.grants.size(); ++i) CHECK(cfg.grants[i].index == i);  // the ledger's grant index

    auto cl = scoped_to(org, cfg, "cl");
    REQUIRE(cl.size() == 1);
    CHECK(cl[0]->host == "api.anthropic.com");
    CHECK(cl[0]->credential == "anthropic");
    CHECK(has_route(*cl[0], "GET /api/oauth/profile"));
    auto cx = scoped_to(org, cfg, "cx");
    REQUIRE(cx.size() == 1);
    CHECK(cx[0]->host == "chatgpt.com");  // openai is an oauth_token: ChatGPT mode
    CHECK(cx[0]->credential == "openai");
    CHECK(has_route(*cx[0], "GET /backend-api/codex/responses"));  // the WebSocket upgrade
    CHECK(has_route(*cx[0], "GET /backend-api/wham/accounts/check"));
    auto p = scoped_to(org, cfg, "p");
    REQUIRE(p.size() == 2);
    CHECK(p[0]->host == "api.anthropic.com");
    CHECK(p[0]->routes.size() == 1);  // pi: POST /v1/messages only
    CHECK(p[1]->host == "example.org");

    // Worker A's identity never gets worker B's grants.
    CHECK(lookup(cfg, "cx", "chatgpt.com") != nullptr);
    CHECK(lookup(cfg, "cl", "chatgpt.com") == nullptr);
    CHECK(lookup(cfg, "p", "chatgpt.com") == nullptr);
    CHECK(lookup(cfg, "cl", "example.org") == nullptr);
    CHECK(lookup(cfg, "p", "example.org") != nullptr);
    CHECK(lookup(cfg, "cl", "github.com") == nullptr);
    CHECK(lookup(cfg, "cx", "github.com") != nullptr);
    // Both anthropic workers reach api.anthropic.com, each with its own grant and routes.
    REQUIRE(lookup(cfg, "cl", "api.anthropic.com") != nullptr);
    REQUIRE(lookup(cfg, "p", "api.anthropic.com") != nullptr);
    CHECK(lookup(cfg, "cl", "api.anthropic.com")->routes.size() == 5);
    CHECK(lookup(cfg, "p", "api.anthropic.com")->routes.size() == 1);
    // A worker that does not exist, or an identity outside the org, gets only the org-wide grant.
    CHECK(lookup(cfg, "stranger", "api.anthropic.com") == nullptr);
    CHECK(lookup(cfg, "stranger", "registry.npmjs.org") != nullptr);
    // Token refresh is never granted, to anyone.
    for (const char* w : {"cl", "cx", "p"})
        for (const char* h : {"platform.claude.com", "auth.openai.com", "console.anthropic.com"}) {
            CAPTURE(w);
            CAPTURE(h);
            CHECK(lookup(cfg, w, h) == nullptr);
        }
    // Only the credentials a grant uses: "spare" is not loaded.
    CHECK(cfg.credentials.count("anthropic") == 1);
    CHECK(cfg.credentials.count("openai") == 1);
    CHECK(cfg.credentials.count("spare") == 0);

    check_same_as_embedded(org, cfg, status);
}

TEST_CASE("org_gateway_config: codex with an API key gets api.openai.com, WebSocket route included") {
    test::OrgDir d;
    write_org(d);
    auto org = config::load_org(d.str());
    org.gateway.credentials.at("openai").kind = config::CredentialKind::api_key;
    auto status = all_available(org);
    auto cfg = agents::org_gateway_config(org, status).config;
    auto cx = scoped_to(org, cfg, "cx");
    REQUIRE(cx.size() == 1);
    CHECK(cx[0]->host == "api.openai.com");
    CHECK(has_route(*cx[0], "GET /v1/responses"));
    CHECK(has_route(*cx[0], "POST /v1/responses"));
    CHECK(lookup(cfg, "cx", "chatgpt.com") == nullptr);
    check_same_as_embedded(org, cfg, status);
}

TEST_CASE("org_gateway_config: an operator grant for the same host:port replaces the implied one, for its scope only") {
    test::OrgDir d;
    // The org redirects api.anthropic.com for cl only; p redirects it in its worker.toml.
    write_org(d,
              "[[grants]]\nhost = \"api.anthropic.com\"\nmode = \"inject\"\ncredential = \"anthropic\"\n"
              "routes = [\"POST /v1/messages\"]\nidentities = [\"cl\"]\nallow_private = true\n"
              "connect_to = \"127.0.0.1:9443\"\n",
              "[[grants]]\nhost = \"api.anthropic.com\"\nmode = \"inject\"\ncredential = \"anthropic\"\n"
              "allow_private = true\nconnect_to = \"127.0.0.1:9444\"\n");
    auto org = config::load_org(d.str());
    auto status = all_available(org);
    auto cfg = agents::org_gateway_config(org, status).config;
    CHECK(scoped_to(org, cfg, "cl").size() == 0);  // its implied grant is replaced by the org grant
    REQUIRE(lookup(cfg, "cl", "api.anthropic.com") != nullptr);
    CHECK(lookup(cfg, "cl", "api.anthropic.com")->connect_to == "127.0.0.1:9443");
    REQUIRE(lookup(cfg, "p", "api.anthropic.com") != nullptr);
    CHECK(lookup(cfg, "p", "api.anthropic.com")->connect_to == "127.0.0.1:9444");
    CHECK(lookup(cfg, "cx", "api.anthropic.com") == nullptr);
    REQUIRE(lookup(cfg, "cx", "chatgpt.com") != nullptr);
    CHECK(lookup(cfg, "cx", "chatgpt.com")->connect_to.empty());  // cx keeps its implied grant
    check_same_as_embedded(org, cfg, status);
}

TEST_CASE("org_gateway_config: a worker whose credential is unavailable is left out of the model grants, named") {
    test::OrgDir d;
    write_org(d);
    auto org = config::load_org(d.str());
    auto status = all_available(org);
    status["openai"].available = false;
    status["openai"].source = "env CORRAL_TEST_UNUSED_O";
    status["openai"].problem = "environment variable CORRAL_TEST_UNUSED_O is not set";
    auto plan = agents::org_gateway_config(org, status);
    REQUIRE(plan.left_out.size() == 1);
    CHECK(plan.left_out[0].find("worker 'cx' runs codex") != std::string::npos);
    CHECK(plan.left_out[0].find("'openai'") != std::string::npos);
    CHECK(plan.left_out[0].find("CORRAL_TEST_UNUSED_O is not set") != std::string::npos);
    CHECK(plan.left_out[0].find("left out") != std::string::npos);
    CHECK(lookup(plan.config, "cx", "chatgpt.com") == nullptr);
    CHECK(lookup(plan.config, "cx", "github.com") != nullptr);  // its other grants stay
    CHECK(lookup(plan.config, "cl", "api.anthropic.com") != nullptr);
    CHECK(plan.config.credentials.count("openai") == 0);  // nothing uses it: not loaded
    check_same_as_embedded(org, plan.config, status);

    // Not defined at all: the message says how to add it.
    test::OrgDir d2;
    d2.org("[credentials.anthropic]\nkind = \"api_key\"\nenv = \"CORRAL_TEST_UNUSED_A\"\n");
    d2.worker("cx", "agent = \"codex\"\n");
    d2.worker("p", "agent = \"pi\"\n");
    auto org2 = config::load_org(d2.str());
    auto plan2 = agents::org_gateway_config(org2);
    REQUIRE(plan2.left_out.size() == 1);
    CHECK(plan2.left_out[0].find("worker 'cx' runs codex, which needs the credential 'openai': not defined") !=
          std::string::npos);
    CHECK(scoped_to(org2, plan2.config, "p").size() == 1);
}

TEST_CASE("org_gateway_config: the daemon needs listen_unix; without any listener the default socket") {
    test::OrgDir d;
    d.org("[credentials.anthropic]\nkind = \"api_key\"\nenv = \"CORRAL_TEST_UNUSED_A\"\n");
    d.worker("p", "agent = \"pi\"\n");
    auto org = config::load_org(d.str());
    CHECK(agents::org_gateway_config(org).config.gateway.listen_unix == config::default_gateway_socket);

    test::OrgDir tcp_only;
    tcp_only.org("[gateway]\nlisten_tcp = \"127.0.0.1:0\"\n");
    auto org2 = config::load_org(tcp_only.str());
    try {
        agents::org_gateway_config(org2);
        FAIL("expected a ConfigError");
    } catch (const config::ConfigError& e) {
        std::string what = e.what();
        CHECK(what.find(tcp_only.file("org.toml") + ": key 'gateway.listen_unix': empty") == 0);
        CHECK(what.find("corral run --gateway unix:PATH") != std::string::npos);
    }
}

TEST_CASE("org_gateway_config: each worker's MCP servers (org.toml's under its own) for the daemon, their credentials kept") {
    test::OrgDir d;
    write_org(d, "[credentials.search]\nkind = \"api_key\"\nenv = \"CORRAL_TEST_UNUSED_SEARCH\"\n"
                 "[mcp.servers.search]\nurl = \"https://mcp.example.com/mcp\"\ncredential = \"search\"\n",
              "[mcp.servers.docs]\nurl = \"https://docs.example.com/mcp\"\ncredential = \"spare\"\n"
              "[mcp.budget]\ntool_calls_per_worker = 7\n");
    auto org = config::load_org(d.str());
    const auto cfg = agents::org_gateway_config(org, all_available(org)).config;
    CHECK(cfg.tools.empty());  // the embedded gateway's one worker's: none here
    REQUIRE(cfg.worker_tools.size() == 3);
    CHECK(cfg.worker_tools.at("cl").servers.size() == 1);  // org.toml's
    CHECK(cfg.worker_tools.at("cl").servers.count("search") == 1);
    const auto& p = cfg.worker_tools.at("p");
    CHECK(p.servers.size() == 2);
    CHECK(p.servers.count("docs") == 1);
    CHECK(p.budgets.per_worker == 7u);
    CHECK_FALSE(cfg.worker_tools.at("cx").budgets.per_worker.has_value());
    // Their credentials are loaded by the daemon ("spare" too now: p's server names it).
    CHECK(cfg.credentials.count("search") == 1);
    CHECK(cfg.credentials.count("spare") == 1);
}
