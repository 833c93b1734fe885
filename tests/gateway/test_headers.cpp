#include <doctest/doctest.h>

#include <boost/beast/http/fields.hpp>

#include "gateway/headers.hpp"

using namespace corral;
using namespace corral::gateway;
namespace http = boost::beast::http;

namespace {

config::CredentialSpec api_key() {
    config::CredentialSpec c;
    c.name = "anthropic";
    c.kind = config::CredentialKind::api_key;
    c.headers = {{"x-api-key", "{key}"}};
    return c;
}

config::CredentialSpec oauth() {
    config::CredentialSpec c;
    c.name = "claude";
    c.kind = config::CredentialKind::oauth_token;
    c.headers = {{"authorization", "Bearer {token}"}};
    c.anthropic_beta = "oauth-2025-04-20";
    return c;
}

std::vector<std::pair<std::string, std::string>> all(const http::fields& h) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& f : h) out.emplace_back(std::string(f.name_string()), std::string(f.value()));
    return out;
}

std::size_t count(const http::fields& h, std::string_view name) {
    std::size_t n = 0;
    for (const auto& f : h)
        if (boost::beast::iequals(f.name_string(), name)) ++n;
    return n;
}

}  // namespace

TEST_CASE("render_template replaces {key} and {token}, everything else verbatim") {
    CHECK(render_template("{key}", "s3cr3t") == "s3cr3t");
    CHECK(render_template("Bearer {token}", "tok") == "Bearer tok");
    CHECK(render_template("{key}:{key}", "a") == "a:a");
    CHECK(render_template("no placeholder", "a") == "no placeholder");
    CHECK(render_template("{ke}y {tok", "a") == "{ke}y {tok");
    CHECK(render_template("", "a").empty());
}

TEST_CASE("the four client credential headers are recognised in any case") {
    for (const char* n : {"authorization", "Authorization", "X-API-KEY", "x-api-key", "Proxy-Authorization", "COOKIE"})
        CHECK(is_client_credential_header(n));
    for (const char* n : {"x-api-keys", "authorisation", "set-cookie", "anthropic-beta", ""})
        CHECK_FALSE(is_client_credential_header(n));
}

TEST_CASE("api key: every client auth header dropped (any case, duplicates), key injected, rest kept in order") {
    http::fields h;
    h.insert("Host", "api.anthropic.com");
    h.insert("Authorization", "Bearer sk-ant-placeholder");
    h.insert("X-Api-Key", "sk-ant-placeholder");
    h.insert("x-api-key", "second-placeholder");
    h.insert("PROXY-AUTHORIZATION", "Basic Zm9vOmJhcg==");
    h.insert("Cookie", "session=abc");
    h.insert("cookie", "other=1");
    h.insert("anthropic-version", "2023-06-01");
    h.insert("User-Agent", "claude-cli/1.0");
    h.insert("anthropic-beta", "tools-2024");
    rewrite_request_headers(h, api_key(), "REAL-KEY");
    CHECK(count(h, "authorization") == 0);
    CHECK(count(h, "proxy-authorization") == 0);
    CHECK(count(h, "cookie") == 0);
    CHECK(count(h, "x-api-key") == 1);
    CHECK(h["x-api-key"] == "REAL-KEY");
    CHECK(h["anthropic-beta"] == "tools-2024");  // untouched: no anthropic_beta configured
    auto fields = all(h);
    std::vector<std::string> names;
    for (auto& [n, v] : fields) {
        CHECK(v.find("placeholder") == std::string::npos);
        names.push_back(n);
    }
    CHECK(names == std::vector<std::string>{"Host", "anthropic-version", "User-Agent", "anthropic-beta", "x-api-key"});
}

TEST_CASE("oauth: Bearer injected; anthropic-beta extended once, client's tokens kept") {
    http::fields h;
    h.insert("authorization", "Bearer sk-ant-oat01-placeholder");
    h.insert("anthropic-beta", "claude-code-20250219, interleaved-thinking-2025-05-14");
    h.insert("Anthropic-Beta", "fine-grained-tool-streaming-2025-05-14,claude-code-20250219");
    rewrite_request_headers(h, oauth(), "sk-ant-oat01-REAL");
    CHECK(count(h, "authorization") == 1);
    CHECK(h["authorization"] == "Bearer sk-ant-oat01-REAL");
    CHECK(count(h, "anthropic-beta") == 1);
    CHECK(h["anthropic-beta"] ==
          "claude-code-20250219,interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14,oauth-2025-04-20");
}

TEST_CASE("anthropic-beta: added when absent, not duplicated when present in any case") {
    http::fields a;
    rewrite_request_headers(a, oauth(), "t");
    CHECK(a["anthropic-beta"] == "oauth-2025-04-20");

    http::fields b;
    b.insert("anthropic-beta", "OAUTH-2025-04-20");
    rewrite_request_headers(b, oauth(), "t");
    CHECK(b["anthropic-beta"] == "OAUTH-2025-04-20");

    http::fields c;
    c.insert("anthropic-beta", " , ,x ,, ");
    rewrite_request_headers(c, oauth(), "t");
    CHECK(c["anthropic-beta"] == "x,oauth-2025-04-20");
}

TEST_CASE("custom templates: the template's header names are replaced too, several headers") {
    config::CredentialSpec c;
    c.kind = config::CredentialKind::api_key;
    c.headers = {{"x-goog-api-key", "{key}"}, {"x-extra", "k={key};v=1"}};
    http::fields h;
    h.insert("X-Goog-Api-Key", "placeholder");
    h.insert("x-extra", "placeholder");
    h.insert("x-api-key", "placeholder");
    rewrite_request_headers(h, c, "REAL");
    CHECK(count(h, "x-goog-api-key") == 1);
    CHECK(h["x-goog-api-key"] == "REAL");
    CHECK(h["x-extra"] == "k=REAL;v=1");
    CHECK(count(h, "x-api-key") == 0);
}

TEST_CASE("request_scannable_response: identity replaces every Accept-Encoding, no WebSocket extensions") {
    http::fields h;
    h.insert("Accept-Encoding", "gzip, br");
    h.insert("accept-encoding", "zstd");
    h.insert("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits");
    h.insert("User-Agent", "x");
    request_scannable_response(h);
    CHECK(count(h, "accept-encoding") == 1);
    CHECK(h["accept-encoding"] == "identity");
    CHECK(count(h, "sec-websocket-extensions") == 0);
    CHECK(h["user-agent"] == "x");
}
