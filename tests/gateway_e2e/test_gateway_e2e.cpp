#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/un.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/gateway_e2e/fixture.hpp"

using namespace corral::test;
using namespace corral::test::gw;
using nlohmann::json;

namespace {

std::string main_port() { return std::to_string(world().ports.at("main")); }

// "connect=NNN status=NNN" from curl's -w line.
std::string codes(const Result& r) {
    auto p = r.out.rfind("connect=");
    return p == std::string::npos ? "(no codes) " + r.err : r.out.substr(p, r.out.find('\n', p) - p);
}

std::string body_of(const Result& r) {
    auto p = r.out.rfind("\nconnect=");
    return p == std::string::npos ? r.out : r.out.substr(0, p);
}

std::string status_line(const std::string& response) { return response.substr(0, response.find("\r\n")); }

std::string reason_header(const std::string& response) {
    auto p = response.find("X-Corral-Reason: ");
    if (p == std::string::npos) return "";
    p += 17;
    return response.substr(p, response.find("\r\n", p) - p);
}

json last_seen(const std::string& url_prefix) {
    auto stats = upstream_stats();
    json found;
    for (const auto& s : stats["seen"])
        if (s["url"].get<std::string>().rfind(url_prefix, 0) == 0) found = s;
    return found;
}

std::string temp_file_of(std::size_t bytes) {
    auto path = world().dir + "/body-" + std::to_string(bytes);
    std::ofstream f(path);
    f << std::string(bytes, 'b');
    return path;
}

}  // namespace

TEST_CASE("injection: the upstream receives the real API key, never the placeholders") {
    const std::string placeholder = "sk-ant-api03-PLACEHOLDER-from-the-box";
    auto r = curl({"-X", "POST", "https://api.anthropic.test/v1/messages?beta=true", "-H", "x-api-key: " + placeholder,
                   "-H", "Authorization: Bearer " + placeholder, "-H", "Cookie: session=" + placeholder, "-H",
                   "X-Api-Key: second-" + placeholder, "-H", "anthropic-version: 2023-06-01", "-H",
                   "content-type: application/json", "--data", "{\"model\":\"x\"}"});
    CHECK(codes(r) == "connect=200 status=200");
    auto echo = json::parse(body_of(r));
    CHECK(echo["headers"]["x-api-key"] == "sha256:" + sha256_hex(world().api_key));
    CHECK_FALSE(echo["headers"].contains("authorization"));
    CHECK_FALSE(echo["headers"].contains("cookie"));
    CHECK(echo["headers"]["anthropic-version"] == "2023-06-01");
    CHECK(echo["bodyBytes"] == 13);
    auto seen = last_seen("/v1/messages");
    REQUIRE(seen.is_object());
    CHECK(seen["headers"]["x-api-key"] == world().api_key);
    CHECK(seen.dump().find("PLACEHOLDER") == std::string::npos);
    CHECK(ledger_has("api.anthropic.test", ""));
    bool credential_logged = false;
    for (const auto& l : ledger_lines())
        if (l["host"] == "api.anthropic.test" && l["path"].get<std::string>().rfind("/v1/messages", 0) == 0 &&
            l["decision"] == "allow")
            credential_logged = credential_logged || (l["credential"] == "anthropic" && l["status"] == 200);
    CHECK(credential_logged);
}

TEST_CASE("injection from node: OAuth bearer, anthropic-beta extended once, ALPN http/1.1") {
    auto out = node_client({{"host", "oauth.test"}, {"port", 443}, {"mode", "http"}, {"method", "GET"},
                            {"path", "/v1/models"},
                            {"headers", {{"authorization", "Bearer sk-ant-oat01-PLACEHOLDER"},
                                         {"anthropic-beta", "claude-code-20250219,oauth-2025-04-20"}}}});
    CHECK(out["connectStatus"] == 200);
    CHECK(out["alpn"] == "http/1.1");
    REQUIRE(out["status"] == 200);
    auto echo = json::parse(out["body"].get<std::string>());
    CHECK(echo["headers"]["authorization"] == "sha256:" + sha256_hex("Bearer " + world().oauth_token));
    CHECK(echo["headers"]["anthropic-beta"] == "claude-code-20250219,oauth-2025-04-20");
    auto seen = last_seen("/v1/models");
    CHECK(seen["headers"]["authorization"] == "Bearer " + world().oauth_token);
    CHECK(seen.dump().find("PLACEHOLDER") == std::string::npos);
}

TEST_CASE("a tunnel grant relays blindly: the client verifies the upstream itself") {
    auto& w = world();
    std::vector<std::string> args = {"--cacert", w.test_ca, "https://tunnel.test:" + main_port() + "/echo", "-H",
                                     "x-api-key: client-own-key"};
    auto r = curl(args);
    CHECK(codes(r) == "connect=200 status=200");
    auto echo = json::parse(body_of(r));
    CHECK(echo["headers"]["x-api-key"] == "sha256:" + sha256_hex("client-own-key"));
    CHECK(ledger_has("tunnel.test", ""));
}

TEST_CASE("ungranted hosts and routes get 403 and a ledger line") {
    auto r = curl({"https://not-granted.test/v1/messages"});
    CHECK(codes(r).rfind("connect=403", 0) == 0);
    CHECK(ledger_has("not-granted.test", "not_granted"));

    r = curl({"https://api.anthropic.test/v1/organizations"});
    CHECK(codes(r) == "connect=200 status=403");
    CHECK(ledger_has("api.anthropic.test", "route_denied"));

    // Paths that are not canonical are refused whole (400), whether they would
    // normalise out of the granted prefix or into it: the path the routes are
    // checked against must be the path the upstream receives.
    for (const char* path : {"/v1/models/..%2f..%2fadmin", "/v1/models/%2e%2e/%2e%2e/admin", "/v1/models/../organizations",
                             "/v1/models/..;/organizations", "/../v1/models/x", "/v1//models/./claude",
                             "/admin/..;/v1/models/x", "/admin/x%2f..%2f..%2fv1/models/x", "/admin/../v1/models/x",
                             "/admin;/../v1/models/x"}) {
        CAPTURE(path);
        r = curl({"--path-as-is", std::string("https://api.anthropic.test") + path});
        CHECK(codes(r) == "connect=200 status=400");
    }
    // curl keeps a '#' to itself: send that one raw.
    auto out = node_client({{"host", "api.anthropic.test"}, {"port", 443}, {"mode", "raw"},
                            {"raw", "GET /v1/models/x#/../../../admin HTTP/1.1\r\nHost: api.anthropic.test\r\n\r\n"}});
    CHECK(out["raw"].get<std::string>().rfind("HTTP/1.1 400", 0) == 0);
    CHECK(ledger_has("api.anthropic.test", "non_canonical_path"));
    auto stats = upstream_stats();
    for (const auto& s : stats["seen"]) CHECK(s["url"].get<std::string>().find("admin") == std::string::npos);
    // The method is part of the route.
    r = curl({"-X", "DELETE", "https://api.anthropic.test/v1/messages"});
    CHECK(codes(r) == "connect=200 status=403");
    // A canonical path in the granted prefix passes.
    r = curl({"https://api.anthropic.test/v1/models/claude"});
    CHECK(codes(r) == "connect=200 status=200");
}

TEST_CASE("listen_tcp serves root's connections only: another uid's requests never reach the upstream") {
    // Every TCP client gets tcp_identity, whose grants inject the real key: a
    // local user reaching the port used to send requests with it.
    constexpr unsigned kNobody = 65534;
    auto before = upstream_stats();
    auto r = curl_as(kNobody, {"https://api.anthropic.test/v1/models/from-nobody"});
    INFO(r.out, r.err);
    CHECK(codes(r).rfind("connect=403", 0) == 0);
    // Plain http:// shows the whole answer: the reason, and whose socket it was.
    r = curl_as(kNobody, {"-i", "http://tunnel.test:" + main_port() + "/from-nobody-plain"});
    CHECK(codes(r) == "connect=000 status=403");
    CHECK(reason_header(r.out) == "tcp_peer_not_root");
    CHECK(r.out.find("belongs to uid 65534") != std::string::npos);
    CHECK(ledger_has("", "tcp_peer_not_root"));
    // Both refusals are recorded; the second line may land a moment after
    // curl has its answer (the ledger is written when the exchange ends).
    auto refused = ledger_lines_with_reason("tcp_peer_not_root", 2);
    CHECK(refused.size() >= 2);
    for (const auto& l : refused) {
        CHECK(l["status"] == 403);
        CHECK(l["decision"] == "refuse");
        CHECK(l["identity"] == "e2e/run-1");
    }
    auto after = upstream_stats();
    CHECK(after["requests"] == before["requests"]);
    for (const auto& s : after["seen"]) CHECK(s["url"].get<std::string>().find("from-nobody") == std::string::npos);
    CHECK(read_file(world().gateway_stderr).find("refused a TCP client") != std::string::npos);

    // Root's connections are still served, with the key injected.
    r = curl({"https://api.anthropic.test/v1/models/from-root"});
    CHECK(codes(r) == "connect=200 status=200");
    auto seen = last_seen("/v1/models/from-root");
    REQUIRE(seen.is_object());
    CHECK(seen["headers"]["x-api-key"] == world().api_key);
}

TEST_CASE("SSRF: at least 40 forms refused before any connection attempt") {
    struct Case {
        std::string target;   // CONNECT authority
        std::string status;   // expected status code
        std::string reason;   // expected X-Corral-Reason / ledger reason
    };
    std::vector<Case> cases;
    // Numeric and odd host spellings.
    for (const char* t : {"2130706433:443", "0x7f.1:443", "0177.0.0.1:443", "127.1:443", "017700000001:443",
                          "0x7f000001:443", "0x7f.0.0.1:443", "127.0.1:443", "127.000.000.001:443",
                          "[fe80::1%25eth0]:443", "[fe80::1%eth0]:443"})
        cases.push_back({t, "403", "numeric_host"});
    for (const char* t : {"%31%32%37.0.0.1:443", "loop.ssrf%2etest:443", "[loop.ssrf.test]:443", "exa_mple..test:443"})
        cases.push_back({t, "400", "bad_host"});
    // Ungranted literals: refused by the grant check before anything is resolved or dialled.
    for (const char* t : {"127.0.0.1:443", "[::ffff:127.0.0.1]:443", "[::1]:22", "169.254.169.254:443"})
        cases.push_back({t, "403", "not_granted"});
    // Granted literals and names whose answers are special-purpose.
    for (const char* t : {"10.0.0.1:443", "[::1]:443", "[0:0:0:0:0:0:0:1]:443"})
        cases.push_back({t, "403", "private_address"});
    for (const char* n :
         {"r0", "r0b", "r10", "r10b", "cgnat", "cgnatb", "loop", "loopb", "meta", "r172", "r172b", "ietf", "doc1",
          "relay", "r192", "bench", "benchb", "doc2", "doc3", "mcast", "mcastb", "res", "bcast", "unspec6", "loop6",
          "ll6", "ula", "meta6", "mcast6", "doc6", "doc6b", "bench6", "discard6", "site6", "mapped", "mappedb",
          "compat", "nat64", "nat64b", "sixto4", "teredo"})
        cases.push_back({std::string(n) + ".ssrf.test:443", "403", "private_address"});
    cases.push_back({"LOOP.SSRF.TEST.:443", "403", "private_address"});
    // Mixed public + special answers: refused as a whole, even where private is allowed.
    cases.push_back({"mixed.ssrf.test:443", "403", "mixed_answers"});
    cases.push_back({"mixedb.ssrf.test:443", "403", "mixed_answers"});
    cases.push_back({"mixedok.test:443", "403", "mixed_answers"});
    // The gateway's own listener.
    cases.push_back({"self.test:" + std::to_string(world().gateway_port), "403", "gateway_self"});
    REQUIRE(cases.size() >= 40);

    for (const auto& c : cases) {
        CAPTURE(c.target);
        auto resp = raw_proxy("CONNECT " + c.target + " HTTP/1.1\r\nHost: " + c.target + "\r\n\r\n");
        CHECK(status_line(resp).rfind("HTTP/1.1 " + c.status, 0) == 0);
        CHECK(reason_header(resp) == c.reason);
    }
    // Every refusal left a ledger line with its reason.
    CHECK(ledger_has("meta.ssrf.test", "private_address"));
    CHECK(ledger_has("mixed.ssrf.test", "mixed_answers"));
    CHECK(ledger_has("mixedok.test", "mixed_answers"));
    CHECK(ledger_has("self.test", "gateway_self"));
    std::size_t refusals = 0;
    for (const auto& l : ledger_lines())
        if (l["decision"] == "refuse" && l["method"] == "CONNECT") ++refusals;
    CHECK(refusals >= cases.size());

    // Absolute-form requests go through the same checks.
    auto resp = raw_proxy("GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n");
    CHECK(status_line(resp).rfind("HTTP/1.1 403", 0) == 0);
    CHECK(reason_header(resp) == "private_address");
    resp = raw_proxy("GET http://2130706433/ HTTP/1.1\r\nHost: 2130706433\r\n\r\n");
    CHECK(reason_header(resp) == "numeric_host");
    resp = raw_proxy("GET http://meta.ssrf.test:443/ HTTP/1.1\r\nHost: meta.ssrf.test:443\r\n\r\n");
    CHECK(reason_header(resp) == "private_address");
}

TEST_CASE("request smuggling forms get 400, at the proxy and inside an inject tunnel") {
    const std::string host = "upstream.test:" + main_port();
    const std::vector<std::pair<std::string, std::string>> forms = {
        {"CL+TE", "POST /smuggled HTTP/1.1\r\nHost: " + host +
                      "\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
        {"duplicate CL", "POST /smuggled HTTP/1.1\r\nHost: " + host +
                             "\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"},
        {"obs-fold", "GET /smuggled HTTP/1.1\r\nHost: " + host + "\r\nX-Folded: a\r\n b\r\n\r\n"},
        {"bare LF", "GET /smuggled HTTP/1.1\nHost: " + host + "\n\n"},
        {"h2c upgrade", "GET /smuggled HTTP/1.1\r\nHost: " + host +
                            "\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n"},
    };
    for (const auto& form : forms) {
        const std::string& name = form.first;  // (not a structured binding: clang cannot capture those)
        const std::string& raw = form.second;
        CAPTURE(name);
        auto out = node_client({{"host", "upstream.test"}, {"port", world().ports.at("main")}, {"mode", "raw"}, {"raw", raw}});
        REQUIRE(out.contains("raw"));
        CHECK(out["raw"].get<std::string>().rfind("HTTP/1.1 400", 0) == 0);
        // At the proxy itself, in absolute form.
        std::string abs = raw;
        abs.replace(abs.find(' ') + 1, 0, "http://tunnel.test:" + main_port());
        auto resp = raw_proxy(abs);
        CHECK(status_line(resp).rfind("HTTP/1.1 400", 0) == 0);
    }
    CHECK(ledger_has("upstream.test", "smuggling"));
    auto stats = upstream_stats();  // named: a range-for over a temporary's member would dangle
    for (const auto& s : stats["seen"]) CHECK(s["url"].get<std::string>().find("/smuggled") == std::string::npos);
}

TEST_CASE("an oversize body gets 413 and the upstream never sees the excess") {
    auto big = temp_file_of(1024 * 1024);
    auto before = upstream_stats();
    // The client is still sending when the 413 comes: the gateway must let it read the
    // answer (half-close and drain) rather than reset the connection under it.
    auto r = curl({"-X", "POST", "https://api.anthropic.test/upload", "--data-binary", "@" + big});
    CAPTURE(r.err);
    CHECK(codes(r) == "connect=200 status=413");
    r = curl({"-X", "POST", "https://api.anthropic.test/upload", "-H", "Transfer-Encoding: chunked", "--data-binary",
              "@" + big});
    CHECK(codes(r) == "connect=200 status=413");
    CHECK(ledger_has("api.anthropic.test", "body_too_large"));
    // Both refusals (declared length and chunked) name what was refused.
    int refused_lines = 0;
    for (const auto& l : ledger_lines_with_reason("body_too_large", 2))
        if (l.value("reason", "") == "body_too_large") {
            ++refused_lines;
            CHECK(l.value("path", "") == "/upload");
            CHECK(l.value("status", 0) == 413);
        }
    CHECK(refused_lines >= 2);
    auto after = upstream_stats();
    CHECK(after["maxBodyBytes"].get<std::uint64_t>() <= 64 * 1024);
    // A body just under the cap passes whole.
    auto ok = temp_file_of(60 * 1024);
    r = curl({"-X", "POST", "https://api.anthropic.test/upload", "--data-binary", "@" + ok});
    CHECK(codes(r) == "connect=200 status=200");
    CHECK(json::parse(body_of(r))["bodyBytes"] == 60 * 1024);
    (void)before;
}

TEST_CASE("chunked trailers are refused, and a 70000-byte one does not take the daemon down") {
    const std::string host = "Host: upstream.test:" + main_port() + "\r\n";
    const std::string head = "POST /trailered HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n";
    // Before: Beast threw std::length_error out of the daemon's event loop (the process died).
    auto out = node_client({{"host", "upstream.test"}, {"port", world().ports.at("main")}, {"mode", "raw"},
                            {"raw", head + "X-Big: " + std::string(70000, 'v') + "\r\n\r\n"}});
    REQUIRE(out.contains("raw"));
    CHECK(out["raw"].get<std::string>().rfind("HTTP/1.1 4", 0) == 0);
    // A trailer the head checks would have refused as a header.
    out = node_client({{"host", "upstream.test"}, {"port", world().ports.at("main")}, {"mode", "raw"},
                       {"raw", head + "Host: evil.test\r\n\r\n"}});
    CHECK(out["raw"].get<std::string>().rfind("HTTP/1.1 400", 0) == 0);
    CHECK(reason_header(out["raw"].get<std::string>()) == "trailers_refused");
    CHECK(ledger_has("upstream.test", "trailers_refused"));
    // The daemon still serves.
    auto r = curl({"https://api.anthropic.test/v1/models/claude"});
    CHECK(codes(r) == "connect=200 status=200");
    auto stats = upstream_stats();
    for (const auto& s : stats["seen"]) CHECK(s["url"].get<std::string>().find("/trailered") == std::string::npos);
}

TEST_CASE("a client sending one byte a second is cut off") {
    auto& w = world();
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(w.gateway_port));
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    const std::string drip = "CONNECT upstream.test:" + main_port() + " HTTP/1.1\r\nX-Slow: " + std::string(200, 'z');
    bool cut = false;
    std::string answer;
    // Bounded wait (read_timeout is 3s): 60 bytes at one per second must not keep it open.
    for (std::size_t i = 0; i < 60 && !cut; ++i) {
        if (::send(fd, &drip[i % drip.size()], 1, MSG_NOSIGNAL) != 1) cut = true;
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 1000) > 0) {
            char buf[1024];
            ssize_t n = ::recv(fd, buf, sizeof buf, 0);
            if (n > 0) answer.append(buf, static_cast<std::size_t>(n));
            cut = true;
        }
    }
    ::close(fd);
    CHECK(cut);
    if (!answer.empty()) CHECK(answer.rfind("HTTP/1.1 408", 0) == 0);
}

TEST_CASE("bad upstream certificates: expired, self-signed, wrong host → 502 and a ledger line") {
    for (const char* host : {"expired.test", "selfsigned.test", "wronghost.test"}) {
        CAPTURE(host);
        auto r = curl({std::string("https://") + host + "/echo"});
        CHECK(codes(r) == "connect=200 status=502");
        CHECK(ledger_has(host, "upstream_tls"));
    }
}

TEST_CASE("SNI or Host different from the CONNECT host is refused") {
    auto out = node_client({{"host", "api.anthropic.test"}, {"port", 443}, {"sni", "oauth.test"}, {"mode", "http"},
                            {"path", "/v1/models/x"}});
    CHECK(out["connectStatus"] == 200);
    CHECK(out.contains("tlsError"));
    CHECK_FALSE(out.contains("status"));
    CHECK(ledger_has("api.anthropic.test", "sni_mismatch"));

    out = node_client({{"host", "api.anthropic.test"}, {"port", 443}, {"mode", "raw"},
                       {"raw", "GET /v1/models/x HTTP/1.1\r\nHost: oauth.test\r\n\r\n"}});
    CHECK(out["raw"].get<std::string>().rfind("HTTP/1.1 403", 0) == 0);
    CHECK(ledger_has("api.anthropic.test", "host_mismatch"));
}

TEST_CASE("server-sent events: the first event reaches the client before the upstream finishes") {
    // upstream.js holds the second event until the client, having received the
    // first, calls /release. A gateway that buffers the response deadlocks here.
    auto out = node_client({{"host", "api.anthropic.test"}, {"port", 443}, {"mode", "sse"}, {"path", "/sse"},
                            {"headers", {{"x-api-key", "placeholder"}}}},
                           std::chrono::seconds(30));
    CHECK_FALSE(out.contains("timedOut"));
    CHECK(out["status"] == 200);
    CHECK(out["events"] == json::array({"first", "second"}));
}

TEST_CASE("WebSocket echo through an inject tunnel, with the credential injected on the upgrade") {
    auto out = node_client({{"host", "api.anthropic.test"}, {"port", 443}, {"mode", "ws"}, {"path", "/ws"},
                            {"body", "ping through corral"}, {"headers", {{"x-api-key", "sk-ant-PLACEHOLDER"}}}});
    CHECK(out["echo"] == "ping through corral");
    auto seen = last_seen("/ws");
    REQUIRE(seen.is_object());
    CHECK(seen["headers"]["x-api-key"] == world().api_key);
}

TEST_CASE("large responses stream through whole") {
    auto r = curl({"-o", "/dev/null", "https://api.anthropic.test/large?bytes=5000000", "-w", "size=%{size_download}\n"});
    CHECK(r.out.find("size=5000000") != std::string::npos);
}

namespace {

// A Unix-socket client of a `corral gateway` daemon, announcing `identity`
// the way corral run's bridge does, then sending `bytes`.
struct UnixClient {
    int fd = -1;
    UnixClient(const std::string& path, const std::string& first_line, const std::string& bytes = "") {
        fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
        REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        std::string out = first_line + bytes;
        REQUIRE(::send(fd, out.data(), out.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(out.size()));
    }
    ~UnixClient() { close(); }
    void close() {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
    bool readable(int ms) const {
        pollfd p{fd, POLLIN, 0};
        return ::poll(&p, 1, ms) > 0;
    }
    // What the gateway sends until it closes, or until `until` is seen, or `timeout`.
    std::string read(const std::string& until = "", std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
        std::string got;
        auto deadline = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < deadline && (until.empty() || got.find(until) == std::string::npos)) {
            if (!readable(100)) continue;
            char b[4096];
            ssize_t n = ::recv(fd, b, sizeof b, 0);
            if (n <= 0) break;
            got.append(b, static_cast<std::size_t>(n));
        }
        return got;
    }
};

std::vector<json> lines_of(const std::string& path) {
    std::vector<json> out;
    std::ifstream f(path);
    for (std::string line; std::getline(f, line);)
        if (!line.empty()) out.push_back(json::parse(line));
    return out;
}

}  // namespace

// A second daemon, serving two boxes over its Unix socket as corral run's
// bridges do, with small caps: one box's connections and refusals must
// neither starve the other box nor grow the ledger without bound, and the
// counts a run's supervisor reads (CORRAL-COUNTS) must stay exact.
TEST_CASE("shared daemon: per-identity connection cap and bounded refusal lines, exact counts") {
    if (!corral::test::running_as_root()) {
        MESSAGE("skipped: the Unix listener serves root peers only; run as root");
        return;
    }
    auto& w = world();
    const std::string d = w.dir + "/shared";
    std::filesystem::create_directories(d);
    ::chmod(d.c_str(), 0700);
    const std::string sock = d + "/gw.sock", ledger = d + "/ledger.jsonl";
    write_file(d + "/gateway.toml",
               "[gateway]\nlisten_unix = \"" + sock + "\"\nledger = \"" + ledger + "\"\nstate_dir = \"" + d +
                   "/state\"\nhosts_file = \"" + w.dir + "/hosts\"\n"
                   "[gateway.limits]\nmax_connections = 4\nmax_connections_per_identity = 2\n"
                   "ledger_refusals_per_identity = 5\n"
                   "[[grants]]\nhost = \"tunnel.test\"\nport = " + main_port() +
                   "\nmode = \"tunnel\"\nallow_private = true\n");
    Background daemon({corral::test::corral_bin(), "gateway", "--config", d + "/gateway.toml", "--threads", "2"});
    REQUIRE(daemon.wait_for_stdout("listening unix:" + sock, std::chrono::seconds(20)));
    const std::string tunnel = "tunnel.test:" + main_port();
    const std::string connect_tunnel = "CONNECT " + tunnel + " HTTP/1.1\r\nHost: " + tunnel + "\r\n\r\n";

    // Box A opens more idle connections than the whole daemon allows.
    std::vector<std::unique_ptr<UnixClient>> a;
    for (int i = 0; i < 5; ++i) a.push_back(std::make_unique<UnixClient>(sock, "CORRAL-IDENTITY box-a/run-1\n"));
    int refused = 0;
    for (auto& c : a) {
        if (!c->readable(1000)) continue;
        auto answer = c->read();
        CHECK(status_line(answer) == "HTTP/1.1 503 Service Unavailable");
        CHECK(reason_header(answer) == "identity_connection_cap");
        ++refused;
    }
    CHECK(refused == 3);
    // Box B still gets through.
    {
        UnixClient b(sock, "CORRAL-IDENTITY box-b/run-1\n", connect_tunnel);
        CHECK(status_line(b.read("\r\n\r\n")) == "HTTP/1.1 200 Connection Established");
    }
    // Closing A's holders frees its slots once the daemon has seen the EOFs:
    // give it that moment, or the first refusals below would be connection caps.
    a.clear();
    ::usleep(500'000);

    // Box A loops on a refused CONNECT (refused before any connection attempt).
    for (int i = 0; i < 30; ++i) {
        UnixClient c(sock, "CORRAL-IDENTITY box-a/run-1\n", "CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n");
        auto answer = c.read();
        CHECK(reason_header(answer) == "not_granted");
    }
    auto counts = [&](const std::string& id) {
        UnixClient c(sock, "CORRAL-COUNTS " + id + "\n");
        auto line = c.read("\n");
        return json::parse(line.substr(0, line.find('\n')));
    };
    // B's tunnel line is written when the tunnel ends.
    for (int i = 0; i < 100 && counts("box-b/run-1")["requests"] != 1; ++i) ::usleep(50'000);
    json count_b = counts("box-b/run-1"), count_a = counts("box-a/run-1");
    CHECK(count_b["instance"] == count_a["instance"]);
    CHECK(count_b["instance"].get<std::string>().size() == 16);
    for (json* c : {&count_a, &count_b}) {
        CHECK((*c)["ledger"] == "ok");
        // No model traffic here: every model total is 0.
        CHECK((*c)["model"]["requests"] == 0);
        CHECK((*c)["model"]["budget_refusals"] == 0);
        // Nobody was asked for an approval.
        CHECK((*c)["approvals"] == json{{"requested", 0}, {"approved", 0}, {"denied", 0}, {"timed_out", 0}, {"cancelled", 0}});
        c->erase("instance");
        c->erase("ledger");
        c->erase("model");
        c->erase("approvals");
    }
    // The refused host:ports, each once with its count: what a run prints live.
    CHECK(count_b["refused"].empty());
    REQUIRE(count_a["refused"].size() == 2);
    CHECK(count_a["refused"][0]["reason"] == "identity_connection_cap");
    CHECK(count_a["refused"][0]["count"] == 3);
    CHECK(count_a["refused"][1]["host"] == "127.0.0.1");
    CHECK(count_a["refused"][1]["reason"] == "not_granted");
    CHECK(count_a["refused"][1]["count"] == 30);
    for (json* c : {&count_a, &count_b}) c->erase("refused");
    CHECK(count_b == json{{"requests", 1}, {"refusals", 0}, {"secrets_reflected", 0}});
    CHECK(count_a == json{{"requests", 33}, {"refusals", 33}, {"secrets_reflected", 0}});

    ::kill(daemon.pid(), SIGTERM);  // syncs the ledger
    for (int i = 0; i < 100 && ::access(sock.c_str(), F_OK) == 0; ++i) ::usleep(50'000);
    std::vector<json> a_lines;
    int b_lines = 0;
    for (const auto& l : lines_of(ledger)) {
        if (l["identity"] == "box-a/run-1") a_lines.push_back(l);
        if (l["identity"] == "box-b/run-1") ++b_lines;
    }
    CHECK(b_lines == 1);
    // A's first 5 refusals line by line (3 connection caps, 2 not_granted), the
    // 6th writes the cap line, then counts at 10 and 20: 8 lines for 33 refusals.
    REQUIRE(a_lines.size() == 8);
    for (int i = 0; i < 3; ++i) CHECK(a_lines[i]["reason"] == "identity_connection_cap");
    CHECK(a_lines[3]["reason"] == "not_granted");
    CHECK(a_lines[4]["reason"] == "not_granted");
    CHECK(a_lines[5]["reason"] == "ledger_refusal_cap_reached");
    CHECK(a_lines[5]["refusals"] == 6);
    CHECK(a_lines[6]["reason"] == "ledger_refusals_suppressed");
    CHECK(a_lines[6]["refusals"] == 10);
    CHECK(a_lines[7]["refusals"] == 20);
}

// Runs last (doctest orders by file and line): scans everything for the secrets.
TEST_CASE("the real secrets appear nowhere: ledger, gateway stdout/stderr, client-visible bytes") {
    auto& w = world();
    auto read = [](const std::string& p) {
        std::ifstream f(p);
        std::stringstream ss;
        ss << f.rdbuf();
        return ss.str();
    };
    auto ledger = read(w.ledger);
    CHECK(ledger.size() > 1000);
    auto stdout_text = w.gateway->drain_stdout();
    auto stderr_text = read(w.gateway_stderr);
    for (const auto& secret : {w.api_key, w.oauth_token}) {
        auto tail = secret.substr(secret.size() - 16);  // also no fragment of it
        CHECK(ledger.find(tail) == std::string::npos);
        CHECK(stdout_text.find(tail) == std::string::npos);
        CHECK(stderr_text.find(tail) == std::string::npos);
        CHECK(w.client_visible.find(tail) == std::string::npos);
    }
    CHECK(w.client_visible.size() > 1000);
}
