// tests/agents_e2e/checks.hpp — what every layer of the agents e2e suite
// asserts about a finished run: the credentials the stand-ins saw, the
// ledger, the model totals, and that nothing left loopback. doctest
// assertions, for the test cases of test_agents_e2e.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/agents_e2e/world.hpp"

namespace corral::test::agents {

// Every stand-in record from index `from` on, for `host` (WebSocket
// messages only when `websocket_messages`).
std::vector<nlohmann::json> seen_since(std::size_t from, const std::string& host, bool websocket_messages = false);

// What the stand-in got carries the real credential, in the header the real
// service reads, and no sentinel anywhere.
void check_credentials_seen(const World& w, config::AgentKind kind, Org org, const std::vector<nlohmann::json>& seen);

// Ledger lines for `identity_prefix` ("worker/"): all allowed, at least one
// inference request with the credential injected.
void check_ledger(const std::vector<nlohmann::json>& lines, const std::string& identity_prefix,
                  const std::string& model_host, const std::string& credential);

// Nothing asked the resolver anything and nothing tried to reach a
// non-loopback address.
void check_stayed_on_loopback();

// codex's default transport, the Responses WebSocket, relayed (101).
bool relayed_websocket(const std::vector<nlohmann::json>& lines);

// Sets the model stand-in's scripted tool calls (standin.js POST /script).
void post_script(const World& w, const nlohmann::json& script);

// run.json's gateway.model equals the usage the stand-in reported, summed.
void check_model_totals(const nlohmann::json& model, const std::vector<nlohmann::json>& seen);

}  // namespace corral::test::agents
