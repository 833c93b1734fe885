#include "tests/agents_e2e/checks.hpp"

#include <doctest/doctest.h>

#include <cstdint>

namespace corral::test::agents {

// Every stand-in record from index `from` on, for `host`.
std::vector<nlohmann::json> seen_since(std::size_t from, const std::string& host, bool websocket_messages) {
    std::vector<nlohmann::json> out;
    auto seen = standin_seen();
    for (std::size_t i = from; i < seen.size(); ++i)
        if (seen[i].value("host", "") == host && (websocket_messages || seen[i].value("method", "") != "WS"))
            out.push_back(seen[i]);
    return out;
}

// What the stand-in got must carry the real credential, in the header the
// real service reads, and no sentinel anywhere.
void check_credentials_seen(const World& w, config::AgentKind kind, Org org, const std::vector<nlohmann::json>& seen) {
    REQUIRE_FALSE(seen.empty());
    const auto secret = real_secret(w, kind, org);
    const bool bearer = kind == config::AgentKind::codex || org == Org::alternate;
    for (const auto& s : seen) {
        CAPTURE(s.dump());
        const auto& h = s.at("headers");
        if (bearer) {
            CHECK(h.value("authorization", "") == "Bearer " + secret);
            CHECK_FALSE(h.contains("x-api-key"));
        } else {
            CHECK(h.value("x-api-key", "") == secret);
            CHECK_FALSE(h.contains("authorization"));
        }
        if (kind != config::AgentKind::codex && org == Org::alternate)
            CHECK(h.value("anthropic-beta", "").find("oauth-2025-04-20") != std::string::npos);
        // ChatGPT mode: the sentinel carries the configured (non-secret) account id,
        // which the backend's routing discovery must list.
        if (kind == config::AgentKind::codex && org == Org::primary)
            CHECK(h.value("chatgpt-account-id", "") == w.chatgpt_account);
        CHECK(s.dump().find("corral-sentinel") == std::string::npos);
    }
}

// Ledger lines for `identity_prefix` ("worker/"): all allowed, at least one
// inference request with the credential injected.
void check_ledger(const std::vector<nlohmann::json>& lines, const std::string& identity_prefix, const std::string& model_host,
                  const std::string& credential) {
    std::size_t mine = 0, injected = 0;
    for (const auto& l : lines) {
        if (l.value("identity", "").rfind(identity_prefix, 0) != 0) continue;
        ++mine;
        CAPTURE(l.dump());
        CHECK(l.value("decision", "") == "allow");
        // An agent run's MCP lines are corral's own server's (report_outcome),
        // which the CLI lists at its start: answered by the gateway, no host.
        if (l.value("mode", "") == "mcp") continue;
        CHECK(l.value("host", "") == model_host);
        if (l.value("mode", "") == "inject" && l.value("credential", "") == credential) ++injected;
    }
    CHECK(mine > 0);
    CHECK(injected > 0);
}

// Nothing asked the resolver anything (the stand-in's tripwire saw no query)
// and nothing tried to reach a non-loopback address (the veth counter).
void check_stayed_on_loopback() {
    for (const auto& s : standin_seen()) {
        CAPTURE(s.dump());
        CHECK(s.value("method", "") != "DNS");
    }
    CHECK(off_host_packets() == 0);
}

// codex's default transport: the Responses WebSocket, relayed by the gateway (101).
bool relayed_websocket(const std::vector<nlohmann::json>& lines) {
    for (const auto& l : lines)
        if (l.value("status", 0) == 101 &&
            (l.value("path", "") == "/backend-api/codex/responses" || l.value("path", "") == "/v1/responses"))
            return true;
    return false;
}

// run.json's gateway.model equals the usage the stand-in reported on the
// run's model answers, summed: every request and every token, none lost,
// none invented.
void check_model_totals(const nlohmann::json& model, const std::vector<nlohmann::json>& seen) {
    REQUIRE(model.is_object());
    std::uint64_t requests = 0, input = 0, output = 0;
    for (const auto& s : seen) {
        if (!s.contains("usage")) continue;
        ++requests;
        input += s["usage"].value("input_tokens", 0ull);
        output += s["usage"].value("output_tokens", 0ull);
    }
    CHECK(requests > 0);
    CHECK(model.value("requests", 0ull) == requests);
    CHECK(model.value("input_tokens", 0ull) == input);
    CHECK(model.value("output_tokens", 0ull) == output);
    CHECK(model.value("usage_unavailable", 1ull) == 0);
    CHECK(model.value("budget_refusals", 1ull) == 0);
}

void post_script(const World& w, const nlohmann::json& script) {
    auto r = test::run({"curl", "-sS", "--max-time", "10", "-X", "POST", "--data-binary", script.dump(),
                        "http://127.0.0.1:" + std::to_string(w.control_port) + "/script"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
}

}  // namespace corral::test::agents
