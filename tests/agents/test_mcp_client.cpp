// What the agent CLIs are told about their MCP servers: only corral's
// endpoints on the box's bridge, claude strictly (nothing else discovered),
// codex through its config.toml; nothing at all without servers.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>
#include <toml.hpp>

#include "agents/agent_profile.hpp"
#include "agents/mcp_client.hpp"
#include "base/sys_error.hpp"
#include "tests/agents/profile_support.hpp"

using nlohmann::json;
using namespace corral;
using agents::AgentKind;
using agents::CredentialMode;

namespace {

const agents::AgentFile* mcp_profile_file(const agents::AgentProfile& p, const std::string& tail) {
    for (const auto& f : p.files)
        if (f.path.size() >= tail.size() && f.path.compare(f.path.size() - tail.size(), tail.size(), tail) == 0) return &f;
    return nullptr;
}

agents::AgentInputs inputs_with_servers(std::vector<std::string> servers) {
    auto in = test::profile::golden_inputs(CredentialMode::api_key);
    in.mcp.servers = std::move(servers);
    in.mcp.port = 3128;
    return in;
}

}  // namespace

TEST_CASE("claude: --mcp-config naming corral's endpoints and --strict-mcp-config, before the prompt") {
    auto p = agents::make_agent_profile(AgentKind::claude, inputs_with_servers({"files", "search"}));
    auto dashdash = std::find(p.argv.begin(), p.argv.end(), "--");
    REQUIRE(dashdash != p.argv.end());
    auto flag = std::find(p.argv.begin(), dashdash, "--mcp-config");
    REQUIRE(flag != dashdash);
    CHECK(*(flag + 1) == "/home/agent/.claude/corral-mcp.json");
    CHECK(std::find(p.argv.begin(), dashdash, "--strict-mcp-config") != dashdash);
    const auto* f = mcp_profile_file(p, ".claude/corral-mcp.json");
    REQUIRE(f);
    CHECK(f->mode == 0600);
    const json config = json::parse(f->content);
    CHECK(config == json{{"mcpServers",
                          {{"files", {{"type", "http"}, {"url", "http://127.0.0.1:3128/mcp/files"}}},
                           {"search", {{"type", "http"}, {"url", "http://127.0.0.1:3128/mcp/search"}}}}}});
}

TEST_CASE("codex: one [mcp_servers.NAME] table per server in the config.toml corral writes") {
    auto p = agents::make_agent_profile(AgentKind::codex, inputs_with_servers({"files", "odd\"name"}));
    const auto* f = mcp_profile_file(p, ".codex/config.toml");
    REQUIRE(f);
    std::istringstream text(f->content);
    const auto doc = toml::parse(text, "config.toml");
    const auto& servers = toml::find(doc, "mcp_servers");
    CHECK(toml::find<std::string>(servers, "files", "url") == "http://127.0.0.1:3128/mcp/files");
    // A name TOML would read as syntax stays one quoted key.
    CHECK(toml::find<std::string>(servers, "odd\"name", "url") == "http://127.0.0.1:3128/mcp/odd\"name");
    CHECK(toml::find<std::string>(doc, "approval_policy") == "never");
}

TEST_CASE("no MCP servers: no flag, no file, no table (the golden files stay as they are)") {
    auto in = test::profile::golden_inputs(CredentialMode::api_key);
    auto claude = agents::make_agent_profile(AgentKind::claude, in);
    CHECK(std::find(claude.argv.begin(), claude.argv.end(), "--mcp-config") == claude.argv.end());
    CHECK(std::find(claude.argv.begin(), claude.argv.end(), "--strict-mcp-config") == claude.argv.end());
    CHECK(mcp_profile_file(claude, "corral-mcp.json") == nullptr);
    auto codex = agents::make_agent_profile(AgentKind::codex, in);
    const auto* f = mcp_profile_file(codex, ".codex/config.toml");
    REQUIRE(f);
    CHECK(f->content.find("mcp_servers") == std::string::npos);
}

TEST_CASE("servers without a bridge port are refused, not written with port 0") {
    agents::McpClientInputs in;
    in.servers = {"files"};
    CHECK_THROWS_AS(agents::claude_mcp_config_json(in), UsageError);
    CHECK_THROWS_AS(agents::codex_mcp_servers_toml(in), UsageError);
}
