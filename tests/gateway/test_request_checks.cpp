// The per-request checks and the refusal table, without a socket: the
// requests are Beast messages built here, the grants plain structs.
#include <doctest/doctest.h>

#include <boost/beast/http.hpp>

#include "gateway/request_checks.hpp"

#include <nlohmann/json.hpp>

using namespace corral;
using namespace corral::gateway;
namespace http = boost::beast::http;

namespace {

Request request(http::verb method, std::string target, std::initializer_list<std::pair<const char*, const char*>> fields,
                unsigned version = 11) {
    Request r;
    r.method(method);
    r.target(target);
    r.version(version);
    for (const auto& [name, value] : fields) r.insert(name, value);
    return r;
}

Request request(std::string method, std::string target, std::initializer_list<std::pair<const char*, const char*>> fields) {
    Request r;
    r.method_string(method);
    r.target(target);
    r.version(11);
    for (const auto& [name, value] : fields) r.insert(name, value);
    return r;
}

HostName host(std::string_view raw) {
    auto c = normalize_host(raw);
    REQUIRE(c.host);
    return *c.host;
}

config::Grant inject_grant(std::vector<std::string> routes = {}) {
    config::Grant g;
    g.host = corral::names::builtin_host_pattern("api.example.com");
    g.port = 443;
    g.mode = config::GrantMode::inject;
    for (const auto& r : routes) {
        auto sp = r.find(' ');
        config::Route route;
        route.method = r.substr(0, sp);
        route.path = r.substr(sp + 1);
        if (route.path.size() >= 2 && route.path.ends_with("/*")) {
            route.prefix = true;
            route.path.pop_back();
        }
        g.routes.push_back(route);
    }
    return g;
}

std::string reason_of(const std::optional<Refusal>& r) { return r ? r->reason : std::string("(allowed)"); }

}  // namespace

TEST_CASE("refusal table: one status per reason, timeouts by phase") {
    CHECK(refusal_status(reason::timeout, Phase::request) == 408);
    CHECK(refusal_status(reason::timeout, Phase::upstream) == 504);
    CHECK(refusal_status(reason::not_granted, Phase::upstream) == 403);  // one row: every phase
    CHECK(refusal_status(reason::cleartext_inject, Phase::request) == 403);
    CHECK(refusal_status(reason::leaf_unavailable, Phase::request) == 500);
    CHECK(refusal_status(reason::upstream_protocol, Phase::upstream) == 502);
    CHECK(refusal_status(reason::client_tls, Phase::record) == 0);
    CHECK(refusal_status("made_up", Phase::request) == 500);  // fails closed
    CHECK(Refusal{std::string(reason::timeout), "", Phase::upstream}.status() == 504);
    CHECK(Refusal{std::string(reason::budget_exhausted), ""}.status() == 429);
}

TEST_CASE("connection caps: the identity's own cap first") {
    config::GatewayLimits l;
    l.max_connections_per_identity = 2;
    l.max_connections = 10;
    CHECK_FALSE(check_connection_caps(l, "w/r", 2, 10));
    CHECK(reason_of(check_connection_caps(l, "w/r", 3, 11)) == reason::identity_connection_cap);
    CHECK(reason_of(check_connection_caps(l, "w/r", 1, 11)) == reason::too_many_connections);
}

TEST_CASE("first request: CONNECT or absolute http://, nothing else") {
    auto ok = check_proxy_request(request(http::verb::connect, "API.example.com.:443", {}));
    REQUIRE_FALSE(ok.refusal);
    CHECK(ok.connect);
    CHECK(ok.authority->host.text() == "api.example.com");
    CHECK(ok.authority->port == 443);

    auto plain = check_proxy_request(request(http::verb::get, "http://example.com/a?b", {}));
    REQUIRE_FALSE(plain.refusal);
    CHECK_FALSE(plain.connect);
    CHECK(plain.authority->port == 80);
    CHECK(plain.path == "/a?b");

    auto origin = check_proxy_request(request(http::verb::get, "/a", {}));
    CHECK(reason_of(origin.refusal) == reason::unsupported_method);
    CHECK(origin.path == "/a");
    CHECK(reason_of(check_proxy_request(request("TRACE", "http://example.com/", {})).refusal) == reason::unsupported_method);
    CHECK(reason_of(check_proxy_request(request(http::verb::get, "http://user@example.com/", {})).refusal) ==
          reason::unsupported_method);
    auto numeric = check_proxy_request(request(http::verb::connect, "2130706433:443", {}));
    CHECK(reason_of(numeric.refusal) == reason::numeric_host);
    CHECK(numeric.host == "2130706433:443");  // the ledger names the target as sent
    CHECK(reason_of(check_proxy_request(request(http::verb::connect, "example.com", {})).refusal) == reason::bad_request);
}

TEST_CASE("grant mode: inject needs CONNECT") {
    auto g = inject_grant();
    CHECK(reason_of(check_grant_mode(false, g)) == reason::cleartext_inject);
    CHECK_FALSE(check_grant_mode(true, g));
    g.mode = config::GrantMode::tunnel;
    CHECK_FALSE(check_grant_mode(false, g));
}

TEST_CASE("a checked tunnel request carries its whole canonical path, however long, for every later decision") {
    const auto h = host("api.example.com");
    const auto g = inject_grant({"GET /v1/*"});
    const std::string long_path = "/v1/" + std::string(300, 'a') + "/b?q=1";
    auto checked = check_tunnel_request(request(http::verb::get, long_path, {{"Host", "api.example.com"}}), h, 443, g);
    REQUIRE(std::holds_alternative<CheckedTunnelRequest>(checked));
    const auto& c = std::get<CheckedTunnelRequest>(checked);
    CHECK(c.method == "GET");
    CHECK(c.path == "/v1/" + std::string(300, 'a') + "/b");  // the path without its query, not cut at 256
}

TEST_CASE("a request inside an inject tunnel") {
    const auto h = host("api.example.com");
    const auto g = inject_grant({"GET /v1/*", "POST /v1/messages"});
    auto check = [&](const Request& r) {
        auto checked = check_tunnel_request(r, h, 443, g);
        const Refusal* refused = std::get_if<Refusal>(&checked);
        return refused ? refused->reason : std::string("(allowed)");
    };
    CHECK(check(request(http::verb::get, "/v1/models", {{"Host", "api.example.com"}})) == "(allowed)");
    CHECK(check(request(http::verb::get, "/v1/models", {{"Host", "API.example.com:443"}})) == "(allowed)");
    CHECK(check(request(http::verb::post, "/v1/messages", {{"Host", "api.example.com"}})) == "(allowed)");
    CHECK(check(request(http::verb::get, "/v1/models", {{"Host", "api.example.com"}}, 10)) == reason::bad_request);
    CHECK(check(request("TRACK", "/v1/models", {{"Host", "api.example.com"}})) == reason::unsupported_method);
    CHECK(check(request(http::verb::get, "/v1/models", {})) == reason::bad_request);
    CHECK(check(request(http::verb::get, "/v1/models", {{"Host", "api.example.com"}, {"Host", "api.example.com"}})) ==
          reason::bad_request);
    CHECK(check(request(http::verb::get, "/v1/models", {{"Host", "other.example.com"}})) == reason::host_mismatch);
    CHECK(check(request(http::verb::get, "/v1/models", {{"Host", "api.example.com:8443"}})) == reason::host_mismatch);
    CHECK(check(request(http::verb::get, "/v1/../admin", {{"Host", "api.example.com"}})) == reason::non_canonical_path);
    CHECK(check(request(http::verb::get, "/v1%2fx", {{"Host", "api.example.com"}})) == reason::non_canonical_path);
    CHECK(check(request(http::verb::get, "/admin", {{"Host", "api.example.com"}})) == reason::route_denied);
    CHECK(check(request(http::verb::delete_, "/v1/messages", {{"Host", "api.example.com"}})) == reason::route_denied);
}

TEST_CASE("inside an inject tunnel: methods exactly, no method override, no '_' in header names") {
    const auto h = host("api.example.com");
    const auto g = inject_grant();
    auto check = [&](const Request& r) {
        auto checked = check_tunnel_request(r, h, 443, g);
        const Refusal* refused = std::get_if<Refusal>(&checked);
        return refused ? refused->reason : std::string("(allowed)");
    };
    // A server that reads methods without case would take "post" as POST,
    // which the meter reads; the gateway would not.
    CHECK(check(request("post", "/v1/messages", {{"Host", "api.example.com"}})) == reason::unsupported_method);
    CHECK(check(request("Post", "/v1/messages", {{"Host", "api.example.com"}})) == reason::unsupported_method);
    CHECK(check(request("POST", "/v1/messages", {{"Host", "api.example.com"}})) == "(allowed)");
    for (const char* name : {"X-HTTP-Method-Override", "x-http-method", "X-Method-Override"})
        CHECK(check(request(http::verb::get, "/v1/messages", {{"Host", "api.example.com"}, {name, "POST"}})) ==
              reason::header_refused);
    CHECK(check(request(http::verb::post, "/v1/messages",
                        {{"Host", "api.example.com"}, {"anthropic_beta", "web-fetch-2025-09-10"}})) ==
          reason::header_refused);
    CHECK(check(request(http::verb::post, "/v1/messages",
                        {{"Host", "api.example.com"}, {"anthropic-beta", "x"}, {"X-Stainless-Lang", "js"}})) ==
          "(allowed)");
}

TEST_CASE("refusal bodies: corral's line, or the provider's error object with that line as its message") {
    auto text = refusal_body(ErrorShape::text, 403, "not_granted", "no grant");
    CHECK(text.content_type == "text/plain; charset=utf-8");
    CHECK(text.body == "corral gateway: 403 not_granted: no grant\n");
    auto a = nlohmann::json::parse(refusal_body(ErrorShape::anthropic, 400, "model_budget", "budget \"x\"").body);
    CHECK(a["type"] == "error");
    CHECK(a["error"]["type"] == "invalid_request_error");
    CHECK(a["error"]["message"] == "corral gateway: 400 model_budget: budget \"x\"");
    auto o = nlohmann::json::parse(refusal_body(ErrorShape::openai, 400, "model_policy", "tool").body);
    CHECK(o["error"]["code"] == "corral_model_policy");
    CHECK(o["error"]["type"] == "invalid_request_error");
    CHECK(o["error"]["param"].is_null());
    CHECK(Refusal{std::string(reason::model_budget), ""}.status() == 400);
    CHECK(Refusal{std::string(reason::model_websocket), ""}.status() == 426);
}
