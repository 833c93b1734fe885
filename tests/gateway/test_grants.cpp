#include <doctest/doctest.h>

#include "gateway/grants.hpp"

using namespace corral;
using namespace corral::gateway;
using boost::asio::ip::make_address;
using boost::asio::ip::tcp;

namespace {

config::Grant grant(std::string host, std::uint16_t port = 443) {
    config::Grant g;
    g.host = corral::names::builtin_host_pattern(host);
    g.port = port;
    return g;
}

HostName host(std::string_view raw) {
    auto c = normalize_host(raw);
    REQUIRE_MESSAGE(c.host, raw);
    return *c.host;
}

const Identity worker_a{"worker-a", "run-1"};

std::vector<boost::asio::ip::address> addrs(std::initializer_list<const char*> list) {
    std::vector<boost::asio::ip::address> out;
    for (auto s : list) out.push_back(make_address(s));
    return out;
}

std::string norm(std::string_view target) {
    auto p = normalize_route_path(target);
    REQUIRE_MESSAGE(p, "refused " << target);
    return *p;
}

}  // namespace

TEST_CASE("exact grants match the normalised host and the port only") {
    config::GatewayConfig cfg;
    cfg.grants.push_back(grant("api.anthropic.com"));
    CHECK(find_grant(cfg, worker_a, host("api.anthropic.com"), 443) == &cfg.grants[0]);
    CHECK(find_grant(cfg, worker_a, host("API.Anthropic.Com."), 443) == &cfg.grants[0]);
    CHECK(find_grant(cfg, worker_a, host("api.anthropic.com"), 80) == nullptr);
    CHECK(find_grant(cfg, worker_a, host("anthropic.com"), 443) == nullptr);
    CHECK(find_grant(cfg, worker_a, host("x.api.anthropic.com"), 443) == nullptr);
    CHECK(find_grant(cfg, worker_a, host("api.anthropic.com.evil.com"), 443) == nullptr);
    CHECK(find_grant(cfg, worker_a, host("evilapi.anthropic.com"), 443) == nullptr);
}

TEST_CASE("granted_ports: every port find_grant finds a grant on, ascending, once each") {
    config::GatewayConfig cfg;
    cfg.grants.push_back(grant("*.example.com", 8443));
    cfg.grants.push_back(grant("api.example.com", 443));
    cfg.grants.push_back(grant("api.example.com", 80));
    cfg.grants.push_back(grant("*.example.com", 443));
    auto other = grant("api.example.com", 9000);
    other.identities = {"worker-b"};
    cfg.grants.push_back(other);
    CHECK(granted_ports(cfg, worker_a, host("API.Example.com.")) == std::vector<std::uint16_t>{80, 443, 8443});
    CHECK(granted_ports(cfg, worker_a, host("x.example.com")) == std::vector<std::uint16_t>{443, 8443});
    CHECK(granted_ports(cfg, worker_a, host("example.com")).empty());
    CHECK(granted_ports(cfg, Identity{"worker-b", "run-1"}, host("api.example.com")) ==
          std::vector<std::uint16_t>{80, 443, 8443, 9000});
    for (std::uint16_t port : {80, 443, 8443, 9000, 22})
        CHECK((find_grant(cfg, worker_a, host("api.example.com"), port) != nullptr) ==
              (port == 80 || port == 443 || port == 8443));
}

TEST_CASE("capture_ports: the grants' ports; under --ask also 80, 443 and the ports approved --always") {
    config::GatewayConfig cfg;
    cfg.grants.push_back(grant("api.example.com", 8443));
    CHECK(capture_ports(cfg, worker_a, host("api.example.com"), {9000}) == std::vector<std::uint16_t>{8443});
    CHECK(capture_ports(cfg, worker_a, host("other.example.com"), {}).empty());
    cfg.gateway.ask_unlisted = true;
    CHECK(capture_ports(cfg, worker_a, host("api.example.com"), {}) == std::vector<std::uint16_t>{80, 443, 8443});
    CHECK(capture_ports(cfg, worker_a, host("other.example.com"), {9000, 443}) ==
          std::vector<std::uint16_t>{80, 443, 9000});
}

TEST_CASE("wildcards match subdomains at any depth but never the apex or an IP") {
    config::GatewayConfig cfg;
    cfg.grants.push_back(grant("*.example.com"));
    CHECK(find_grant(cfg, worker_a, host("a.example.com"), 443));
    CHECK(find_grant(cfg, worker_a, host("a.b.example.com"), 443));
    CHECK(find_grant(cfg, worker_a, host("A.EXAMPLE.COM."), 443));
    CHECK_FALSE(find_grant(cfg, worker_a, host("example.com"), 443));
    CHECK_FALSE(find_grant(cfg, worker_a, host("badexample.com"), 443));
    CHECK_FALSE(find_grant(cfg, worker_a, host("example.com.evil.org"), 443));
    CHECK_FALSE(find_grant(cfg, worker_a, host("a.example.com"), 444));
}

TEST_CASE("exact beats wildcard, longer wildcard beats shorter, ties go to the first") {
    config::GatewayConfig cfg;
    cfg.grants.push_back(grant("*.example.com"));
    cfg.grants.push_back(grant("*.api.example.com"));
    cfg.grants.push_back(grant("v1.api.example.com"));
    cfg.grants.push_back(grant("*.example.com"));
    CHECK(find_grant(cfg, worker_a, host("v1.api.example.com"), 443) == &cfg.grants[2]);
    CHECK(find_grant(cfg, worker_a, host("v2.api.example.com"), 443) == &cfg.grants[1]);
    CHECK(find_grant(cfg, worker_a, host("www.example.com"), 443) == &cfg.grants[0]);
}

TEST_CASE("IP literal grants match only that exact address, in any spelling") {
    config::GatewayConfig cfg;
    cfg.grants.push_back(grant("127.0.0.1", 8443));
    cfg.grants.push_back(grant("[::1]", 8443));
    CHECK(find_grant(cfg, worker_a, host("127.0.0.1"), 8443) == &cfg.grants[0]);
    CHECK(find_grant(cfg, worker_a, host("[::1]"), 8443) == &cfg.grants[1]);
    CHECK(find_grant(cfg, worker_a, host("[0:0::1]"), 8443) == &cfg.grants[1]);
    CHECK(find_grant(cfg, worker_a, host("127.0.0.2"), 8443) == nullptr);
    CHECK(find_grant(cfg, worker_a, host("[::ffff:127.0.0.1]"), 8443) == nullptr);
    CHECK_FALSE(normalize_host("127.1").host);  // never reaches find_grant
}

TEST_CASE("--ask: an unlisted host's grant is a tunnel asking a person; an IP literal is the approved address") {
    const config::Grant named = asked_grant(host("API.Example.com"), 8443);
    CHECK(named.host == "api.example.com");
    CHECK(named.port == 8443);
    CHECK(named.mode == config::GrantMode::tunnel);
    CHECK(named.credential.empty());
    CHECK(named.approval);
    CHECK(named.approval_timeout == std::chrono::seconds(300));
    CHECK_FALSE(named.allow_private);  // a name must resolve to public addresses only
    CHECK(asked_grant(host("[::1]"), 443).allow_private);
    CHECK(asked_grant(host("10.0.0.7"), 80).allow_private);
}

TEST_CASE("identity scopes: worker globs and worker/run globs") {
    config::GatewayConfig cfg;
    auto g = grant("api.example.com");
    g.identities = {"worker-a", "ci-*/*", "worker-b/run-7"};
    cfg.grants.push_back(g);
    auto h = host("api.example.com");
    CHECK(find_grant(cfg, Identity{"worker-a", "anything"}, h, 443));
    CHECK(find_grant(cfg, Identity{"ci-42", "r1"}, h, 443));
    CHECK(find_grant(cfg, Identity{"worker-b", "run-7"}, h, 443));
    CHECK_FALSE(find_grant(cfg, Identity{"worker-b", "run-8"}, h, 443));
    CHECK_FALSE(find_grant(cfg, Identity{"worker-ab", "run-1"}, h, 443));
    CHECK_FALSE(find_grant(cfg, Identity{"ci", "r1"}, h, 443));
    // A scoped-out exact grant does not hide a wildcard grant open to everyone.
    cfg.grants.push_back(grant("*.example.com"));
    CHECK(find_grant(cfg, Identity{"worker-b", "run-8"}, h, 443) == &cfg.grants[1]);
}

TEST_CASE("route paths: query dropped, dot segments resolved, escapes decoded") {
    CHECK(norm("/v1/messages") == "/v1/messages");
    CHECK(norm("/v1/messages?beta=true") == "/v1/messages");
    CHECK(norm("/v1/messages#frag") == "/v1/messages");
    CHECK(norm("/v1//messages") == "/v1/messages");
    CHECK(norm("//v1///messages") == "/v1/messages");
    CHECK(norm("/v1/./messages") == "/v1/messages");
    CHECK(norm("/v1/models/../messages") == "/v1/messages");
    CHECK(norm("/v1/models/%2e%2e/messages") == "/v1/messages");
    CHECK(norm("/v1/models/%2E%2E/messages") == "/v1/messages");
    CHECK(norm("/v1/models/.%2e/admin") == "/v1/admin");
    CHECK(norm("/v1%2fmessages") == "/v1/messages");
    CHECK(norm("/v1%2Fmodels%2F..%2Fadmin") == "/v1/admin");
    CHECK(norm("/v1/%6d%65ssages") == "/v1/messages");
    CHECK(norm("/v1/models/..;/admin") == "/v1/admin");
    CHECK(norm("/v1/messages;jsessionid=1") == "/v1/messages");
    CHECK(norm("/v1/models/") == "/v1/models/");
    CHECK(norm("/v1/models/.") == "/v1/models/");
    CHECK(norm("/v1/models/x/..") == "/v1/models/");
    CHECK(norm("/") == "/");
    CHECK(norm("/a/..") == "/");
}

TEST_CASE("route paths that are refused as bad_path") {
    for (const char* bad : {"", "v1/messages", "*", "http://x/v1", "/..", "/../v1/messages", "/v1/../../etc",
                            "/%2e%2e/x", "/v1/%", "/v1/%2", "/v1/%zz", "/v1/%252e%252e/x", "/v1/%00x", "/v1/%0d%0a",
                            "/v1\\..\\admin", "/v1/%5c../admin"}) {
        CAPTURE(bad);
        CHECK_FALSE(normalize_route_path(bad));
    }
}

TEST_CASE("canonical_route_path: the path checked is exactly the path forwarded") {
    auto g = grant("api.anthropic.com");
    g.routes = {{"GET", "/v1/models/", true, "GET /v1/models/*"}};
    // Each of these normalises into the granted prefix while the upstream,
    // which gets the raw target, may read it as /admin (the review's repros).
    for (const char* bypass : {"/admin/..;/v1/models/x", "/admin/x%2f..%2f..%2fv1/models/x", "/admin/../v1/models/x",
                               "/v1/models/x#/../../../admin", "/admin;/../v1/models/x",
                               // and the rest of the forms the rule names
                               "/v1/models/x/%2e%2e/%2E%2E/admin", "/v1/models/%2F..", "/v1/models/..%5cadmin",
                               "/v1/models/x\\..\\admin", "/v1//models/x", "//v1/models/x", "/v1/./models/x",
                               "/v1/models/.", "/v1/models/x/..", "/v1/models/x;a=b", "/v1/models/%61",
                               "/v1/models/%", "/v1/models/x%00", "v1/models/x", "", "*", "api.anthropic.com:443",
                               "http://api.anthropic.com/v1/models/x"}) {
        CAPTURE(bypass);
        auto checked = canonical_route_path(bypass);
        const auto* refused = std::get_if<Refusal>(&checked);
        REQUIRE(refused);
        CHECK(refused->reason == reason::non_canonical_path);
        CHECK(refused->detail.rfind("request path is not canonical: ", 0) == 0);
        // Before: the normalised form matched the route and the raw target was forwarded.
        if (auto n = normalize_route_path(bypass); n && route_allowed(g, "GET", *n))
            MESSAGE("normalises into the route: " << *n);
    }
    for (const char* ok : {"/", "/v1/models/x", "/v1/models/", "/v1/models/claude-3.5", "/v1/models/..x",
                           "/v1/models/x..", "/v1/models/.well-known", "/v1/models/a:b@c~d"}) {
        CAPTURE(ok);
        auto p = canonical_route_path(ok);
        REQUIRE(std::holds_alternative<std::string_view>(p));
        CHECK(std::get<std::string_view>(p) == ok);
        CHECK(normalize_route_path(ok) == std::string(ok));  // the normaliser would not change it
    }
    // The query is not the path's business: kept as sent (forwarded untouched), not checked.
    auto p = canonical_route_path("/v1/models/x?q=/../admin;%2e#f");
    REQUIRE(std::holds_alternative<std::string_view>(p));
    CHECK(std::get<std::string_view>(p) == "/v1/models/x");
    CHECK(route_allowed(g, "GET", std::get<std::string_view>(p)));
}

TEST_CASE("route_allowed: exact paths, trailing-* prefixes, methods") {
    auto g = grant("api.anthropic.com");
    CHECK(route_allowed(g, "DELETE", "/anything"));  // no routes = any route
    g.routes = {{"POST", "/v1/messages", false, "POST /v1/messages"},
                {"GET", "/v1/models/", true, "GET /v1/models/*"},
                {"*", "/v1/health", false, "* /v1/health"}};
    CHECK(route_allowed(g, "POST", "/v1/messages"));
    CHECK_FALSE(route_allowed(g, "GET", "/v1/messages"));
    CHECK_FALSE(route_allowed(g, "post", "/v1/messages"));
    CHECK_FALSE(route_allowed(g, "POST", "/v1/messages/"));
    CHECK_FALSE(route_allowed(g, "POST", "/v1/messages/batches"));
    CHECK(route_allowed(g, "GET", "/v1/models/claude"));
    CHECK(route_allowed(g, "GET", "/v1/models/a/b"));
    CHECK(route_allowed(g, "GET", "/v1/models/"));
    CHECK_FALSE(route_allowed(g, "GET", "/v1/models"));
    CHECK_FALSE(route_allowed(g, "GET", "/v1/modelsx"));
    CHECK(route_allowed(g, "PATCH", "/v1/health"));
    // Normalisation closes the classic escapes before matching.
    auto p = normalize_route_path("/v1/models/..%2f..%2fadmin");
    REQUIRE(p);
    CHECK_FALSE(route_allowed(g, "GET", *p));
    p = normalize_route_path("/v1/models/%2e%2e/messages?x=/v1/models/");
    REQUIRE(p);
    CHECK(*p == "/v1/messages");
    CHECK_FALSE(route_allowed(g, "GET", *p));
}

TEST_CASE("vet_addresses: public answers pass; special ones need allow_private") {
    auto g = grant("api.example.com");
    SelfAddresses self;
    auto d = vet_addresses(g, 443, addrs({"93.184.216.34", "2606:2800:220:1::1"}), self);
    CHECK(d.allowed);
    CHECK(d.reason.empty());
    CHECK(d.usable.size() == 2);

    for (const char* special : {"127.0.0.1", "10.1.2.3", "169.254.169.254", "::1", "fd00:ec2::254", "0.0.0.0",
                                "::ffff:127.0.0.1", "64:ff9b::808:808", "100.64.0.1", "224.0.0.1"}) {
        CAPTURE(special);
        auto r = vet_addresses(g, 443, addrs({special}), self);
        CHECK_FALSE(r.allowed);
        CHECK(r.reason == "private_address");
        CHECK(r.usable.empty());
    }
    g.allow_private = true;
    auto r = vet_addresses(g, 443, addrs({"127.0.0.1", "10.0.0.1"}), self);
    CHECK(r.allowed);
    CHECK(r.usable.size() == 2);
}

TEST_CASE("vet_addresses: mixed public and special answers are refused as a whole, even with allow_private") {
    auto g = grant("rebind.example.com");
    SelfAddresses self;
    auto d = vet_addresses(g, 443, addrs({"93.184.216.34", "127.0.0.1"}), self);
    CHECK_FALSE(d.allowed);
    CHECK(d.reason == "mixed_answers");
    CHECK(d.usable.empty());
    g.allow_private = true;
    d = vet_addresses(g, 443, addrs({"10.0.0.1", "93.184.216.34"}), self);
    CHECK(d.reason == "mixed_answers");
    d = vet_addresses(g, 443, addrs({"2606:2800:220:1::1", "::ffff:8.8.8.8"}), self);
    CHECK(d.reason == "mixed_answers");
}

TEST_CASE("vet_addresses: no answers is a dns_failure") {
    auto d = vet_addresses(grant("x.example.com"), 443, {}, SelfAddresses{});
    CHECK_FALSE(d.allowed);
    CHECK(d.reason == "dns_failure");
}

TEST_CASE("vet_addresses: the gateway never dials itself") {
    auto g = grant("upstream.test", 8443);
    g.allow_private = true;
    SelfAddresses self;
    self.listening.emplace_back(make_address("127.0.0.1"), 3128);
    self.host_addresses = addrs({"203.0.114.7", "10.0.0.5", "127.0.0.1"});

    // Another loopback port is the test upstream: fine with allow_private.
    CHECK(vet_addresses(g, 8443, addrs({"127.0.0.1"}), self).allowed);
    // The listening port, on the same address, another loopback address, the
    // unspecified address or a mapped spelling: all loop back into the gateway.
    for (const char* a : {"127.0.0.1", "127.0.0.2", "0.0.0.0", "::ffff:127.0.0.1", "::1", "::"}) {
        CAPTURE(a);
        auto d = vet_addresses(g, 3128, addrs({a}), self);
        CHECK_FALSE(d.allowed);
        CHECK(d.reason == "gateway_self");
    }
    // The host's own public address is refused on any port.
    auto pub = grant("myself.example.com", 22);
    auto d = vet_addresses(pub, 22, addrs({"203.0.114.7"}), self);
    CHECK_FALSE(d.allowed);
    CHECK(d.reason == "gateway_self");
    CHECK(vet_addresses(pub, 22, addrs({"203.0.114.8"}), self).allowed);
    // A private own address follows allow_private.
    CHECK(vet_addresses(g, 22, addrs({"10.0.0.5"}), self).allowed);
    g.allow_private = false;
    CHECK(vet_addresses(g, 22, addrs({"10.0.0.5"}), self).reason == "private_address");
    // A listener bound to :: catches every address on its port.
    SelfAddresses any;
    any.listening.emplace_back(make_address("::"), 3128);
    g.allow_private = true;
    CHECK(vet_addresses(g, 3128, addrs({"10.9.9.9"}), any).reason == "gateway_self");
}
