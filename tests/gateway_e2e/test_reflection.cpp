// An upstream that sends the injected credential back (upstream.js /reflect/*,
// /ws-reflect): whatever the form and framing, the real node client never
// sees it, and every scrub is a secret_reflected ledger line.
#include <doctest/doctest.h>

#include <openssl/evp.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tests/gateway_e2e/fixture.hpp"

using namespace corral::test;
using namespace corral::test::gw;
using nlohmann::json;

namespace {

std::string b64(const std::string& s) {
    std::string out(4 * ((s.size() + 2) / 3) + 1, '\0');
    int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

std::string hex(const std::string& s, bool upper) {
    const char* h = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) out += h[c >> 4], out += h[c & 15];
    return out;
}

// What must never reach the box: the secret and substrings of its encodings
// long enough to give it away.
std::vector<std::string> telltales(const std::string& secret) {
    std::vector<std::string> t{secret, secret.substr(0, secret.size() / 2 + 4), secret.substr(secret.size() / 2 - 4),
                               hex(secret, false), hex(secret, true)};
    std::string pct, ju;
    for (unsigned char c : secret) {
        pct += '%' + hex(std::string(1, static_cast<char>(c)), true);
        ju += "\\u00" + hex(std::string(1, static_cast<char>(c)), false);
    }
    t.push_back(pct);
    t.push_back(ju);
    for (std::string pad : {"", "x", "xx", "ab"}) {
        auto enc = b64(pad + secret + "!");
        t.push_back(enc.substr(8, enc.size() - 16));
        std::string url = enc;
        for (auto& c : url) c = c == '+' ? '-' : c == '/' ? '_' : c;
        t.push_back(url.substr(8, url.size() - 16));
    }
    return t;
}

void check_never_seen(const std::string& visible, const std::string& secret) {
    for (const auto& t : telltales(secret)) {
        CAPTURE(t);
        CHECK(visible.find(t) == std::string::npos);
    }
}

// The secret_reflected line for `path` (waits up to 5 s: it follows the exchange).
json reflected_line(const std::string& path) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    do {
        for (const auto& l : ledger_lines())
            if (l.value("reason", "") == "secret_reflected" && l.value("path", "") == path) return l;
        ::usleep(50'000);
    } while (std::chrono::steady_clock::now() < deadline);
    return json();
}

json reflect(const std::string& host, const std::string& path, const std::string& mode = "http") {
    return node_client({{"host", host}, {"port", 443}, {"mode", mode}, {"path", path},
                        {"headers", {{"x-api-key", "sk-ant-PLACEHOLDER"}, {"authorization", "Bearer PLACEHOLDER"}}}});
}

}  // namespace

TEST_CASE("reflection: the credential comes back in a body, header, base64, percent, JSON, hex, 401: always masked") {
    const auto& key = world().api_key;
    struct Case {
        std::string path;
        int status;
        std::string form;  // the ledger's form
    };
    for (const Case& c : std::vector<Case>{{"/reflect/body", 200, "literal"},
                                           {"/reflect/header", 200, "literal"},
                                           {"/reflect/base64", 200, "base64"},
                                           {"/reflect/base64?pad=1", 200, "base64"},
                                           {"/reflect/base64?pad=2", 200, "base64"},
                                           {"/reflect/base64url?pad=1", 200, "base64"},
                                           {"/reflect/percent", 200, "literal,percent"},
                                           {"/reflect/json", 200, "literal,json"},
                                           {"/reflect/hex", 200, "hex"},
                                           {"/reflect/401", 401, "literal"},
                                           {"/reflect/split", 200, "literal"}}) {
        CAPTURE(c.path);
        auto out = reflect("api.anthropic.test", c.path);
        CHECK(out["connectStatus"] == 200);
        CHECK(out["status"] == c.status);
        CHECK_FALSE(out.contains("responseError"));  // a wrong Content-Length would break the message
        std::string visible = out.dump();
        check_never_seen(visible, key);
        CHECK(visible.find("********") != std::string::npos);
        auto line = reflected_line(c.path.substr(0, c.path.find('?')));
        REQUIRE(line.is_object());
        CHECK(line["decision"] == "allow");
        CHECK(line["credential"] == "anthropic");
        CHECK(line["host"] == "api.anthropic.test");
        // base64url of this key (hex and '-' only) shares its patterns with base64.
        auto form = line["form"].get<std::string>();
        CHECK(form.find(c.form.substr(0, c.form.find(','))) != std::string::npos);
        CHECK(line["matches"].get<int>() >= 1);
    }
    // Masked in place: the JSON body still parses and has the original length.
    auto out = reflect("api.anthropic.test", "/reflect/body");
    auto body = json::parse(out["body"].get<std::string>());
    CHECK(body["echo"] == std::string(key.size(), '*'));
    out = reflect("api.anthropic.test", "/reflect/header");
    CHECK(out["headers"]["x-echo"] == std::string(key.size(), '*'));
    CHECK(out["body"] == "ok");
    out = reflect("api.anthropic.test", "/reflect/split");
    CHECK(out["body"] == "first chunk: " + std::string(key.size(), '*') + " :second chunk");
}

TEST_CASE("reflection: the rendered header value (Bearer <token>) is masked whole") {
    auto out = reflect("oauth.test", "/reflect/body");
    REQUIRE(out["status"] == 200);
    auto body = json::parse(out["body"].get<std::string>());
    CHECK(body["echo"] == std::string(7 + world().oauth_token.size(), '*'));
    check_never_seen(out.dump(), world().oauth_token);
}

TEST_CASE("reflection: inside a server-sent event, split across two writes; the stream still streams") {
    auto out = reflect("api.anthropic.test", "/reflect/sse", "sse");
    CHECK(out["status"] == 200);
    CHECK(out["events"] == json::array({"first", "leak", "last"}));
    check_never_seen(out.dump(), world().api_key);
    CHECK(reflected_line("/reflect/sse").is_object());
}

TEST_CASE("reflection: a connection-close body and a 103 interim head are scrubbed too") {
    for (std::string form : {"close", "interim"}) {
        CAPTURE(form);
        auto out = node_client({{"host", "api.anthropic.test"}, {"port", 443}, {"mode", "raw"},
                                {"raw", "GET /reflect/" + form +
                                            " HTTP/1.1\r\nHost: api.anthropic.test\r\nx-api-key: placeholder\r\n\r\n"}});
        auto raw = out["raw"].get<std::string>();
        CAPTURE(raw);
        CHECK(raw.find(form == "close" ? "until close: ****" : "link: </hint?k=****") != std::string::npos);
        check_never_seen(raw, world().api_key);
        CHECK(reflected_line("/reflect/" + form).is_object());
    }
}

TEST_CASE("reflection: a gzip body on an inject grant is refused (502), never passed on unscanned") {
    auto out = reflect("api.anthropic.test", "/reflect/gzip");
    CHECK(out["status"] == 502);
    CHECK(out["headers"]["x-corral-reason"] == "upstream_encoding");
    // The gateway asked for identity, whatever the box accepted.
    json seen;
    const json stats = upstream_stats();
    for (const auto& s : stats["seen"])
        if (s["url"] == "/reflect/gzip") seen = s;
    REQUIRE(seen.is_object());
    CHECK(seen["headers"]["accept-encoding"] == "identity");
    CHECK(ledger_has("api.anthropic.test", "upstream_encoding"));
}

TEST_CASE("reflection: WebSocket messages, a fragmented one and a base64 binary one, no permessage-deflate") {
    auto out = reflect("api.anthropic.test", "/ws-reflect", "ws-collect");
    CAPTURE(out.dump());
    CHECK(out["closeCode"] == 1000);
    const auto& key = world().api_key;
    REQUIRE(out["messages"].size() == 3);
    CHECK(out["messages"][0] == "text: " + std::string(key.size(), '*'));
    CHECK(out["messages"][1] == "fragmented: " + std::string(key.size(), '*') + " :end");
    CHECK(out["messages"][2].get<std::string>().rfind("binary bin:", 0) == 0);
    check_never_seen(out.dump(), key);
    // The node ws client offers permessage-deflate; the gateway took the offer out.
    json seen;
    const json stats = upstream_stats();
    for (const auto& s : stats["seen"])
        if (s["url"] == "/ws-reflect") seen = s;
    REQUIRE(seen.is_object());
    CHECK_FALSE(seen["headers"].contains("sec-websocket-extensions"));
    auto line = reflected_line("/ws-reflect");
    REQUIRE(line.is_object());
    CHECK(line["status"] == 101);
    CHECK(line["matches"].get<int>() >= 3);
}

TEST_CASE("reflection: the first scrub of an identity is one warning on the gateway's stderr") {
    reflect("api.anthropic.test", "/reflect/body");
    REQUIRE(reflected_line("/reflect/body").is_object());
    std::ifstream f(world().gateway_stderr);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string err = ss.str();
    std::size_t n = 0;
    for (auto p = err.find("sent the injected credential"); p != std::string::npos;
         p = err.find("sent the injected credential", p + 1))
        ++n;
    CHECK(n == 1);
    CHECK(err.find(world().api_key) == std::string::npos);
}
