#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/sys_error.hpp"
#include "config/gateway_config.hpp"
#include "gateway/grants.hpp"
#include "gateway/host.hpp"

using namespace corral;
using namespace corral::config;
using namespace std::chrono_literals;

namespace {

struct TempDir {
    std::filesystem::path path;
    TempDir() {
        char tmpl[] = "/tmp/corral-gwcfg-XXXXXX";
        REQUIRE(::mkdtemp(tmpl));
        path = tmpl;
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    std::string write(const std::string& name, const std::string& text, mode_t mode = 0600) const {
        auto p = (path / name).string();
        {
            std::ofstream f(p);
            f << text;
        }
        ::chmod(p.c_str(), mode);
        return p;
    }
};

const char* base_gateway = R"([gateway]
listen_tcp = "127.0.0.1:0"
ledger = "/tmp/ledger.jsonl"
)";

// The one-line error of loading `text`, with the file path replaced by "F".
std::string error_of(const std::string& text) {
    TempDir d;
    auto p = d.write("g.toml", text);
    try {
        load_gateway_config(p);
    } catch (const ConfigError& e) {
        std::string m = e.what();
        CHECK(m.find('\n') == std::string::npos);
        if (m.rfind(p, 0) == 0) m = "F" + m.substr(p.size());
        return m;
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("a full configuration loads into typed structs") {
    TempDir d;
    auto p = d.write("gateway.toml", R"(
[gateway]
listen_unix = "/run/corral/gateway.sock"
listen_tcp = "127.0.0.1:3128"
tcp_identity = "bench/run-0"
ledger = "/var/lib/corral/ledger.jsonl"
state_dir = "/var/lib/corral"
upstream_ca_file = "/etc/corral/test-ca.pem"
hosts_file = "/etc/corral/hosts"

[gateway.limits]
max_header_bytes = "32KiB"
max_body_bytes = "2MiB"
max_response_bytes = 1048576
read_timeout = "5s"
idle_timeout = 60
max_connections = 64
max_connections_per_identity = 16
requests_per_identity = 1000
ledger_refusals_per_identity = 0

[credentials.anthropic]
kind = "api_key"
env = "ANTHROPIC_API_KEY"

[credentials.claude]
kind = "oauth_token"
file = "/root/claude-token"
anthropic_beta = "oauth-2025-04-20"

[credentials.custom]
kind = "api_key"
env = "CUSTOM_KEY"
template = { "X-Goog-Api-Key" = "{key}", "x-other" = "Token {key}" }

[[grants]]
host = "API.Anthropic.com."
mode = "inject"
credential = "anthropic"
routes = ["POST /v1/messages", "GET /v1/models/*"]
identities = ["worker-a", "worker-b/*"]

[[grants]]
host = "*.github.com"
port = 443
mode = "tunnel"

[[grants]]
host = "upstream.test"
port = 8443
mode = "inject"
allow_private = true
connect_to = "127.0.0.1:9443"
upstream_ca_file = "/tmp/ca.pem"

[[grants]]
host = "[::1]"
port = 9000
mode = "tunnel"
allow_private = true
)");
    auto cfg = load_gateway_config(p);
    CHECK(cfg.file == p);
    CHECK(cfg.gateway.listen_unix == "/run/corral/gateway.sock");
    CHECK(cfg.gateway.listen_tcp == "127.0.0.1:3128");
    CHECK(cfg.gateway.listen_tcp_host == "127.0.0.1");
    CHECK(cfg.gateway.listen_tcp_port == 3128);
    CHECK(cfg.gateway.tcp_identity == "bench/run-0");
    CHECK(cfg.gateway.hosts_file == "/etc/corral/hosts");
    CHECK(cfg.gateway.limits.max_header_bytes == 32 * 1024);
    CHECK(cfg.gateway.limits.max_body_bytes == 2 * 1024 * 1024);
    CHECK(cfg.gateway.limits.max_response_bytes == 1048576);
    CHECK(cfg.gateway.limits.read_timeout == 5s);
    CHECK(cfg.gateway.limits.idle_timeout == 60s);
    CHECK(cfg.gateway.limits.max_connections == 64);
    CHECK(cfg.gateway.limits.max_connections_per_identity == 16);
    CHECK(cfg.gateway.limits.requests_per_identity == 1000);
    CHECK(cfg.gateway.limits.ledger_refusals_per_identity == 0);

    REQUIRE(cfg.credentials.size() == 3);
    const auto& a = cfg.credentials.at("anthropic");
    CHECK(a.kind == CredentialKind::api_key);
    CHECK(a.env == "ANTHROPIC_API_KEY");
    CHECK(a.headers == std::vector<std::pair<std::string, std::string>>{{"x-api-key", "{key}"}});
    const auto& c = cfg.credentials.at("claude");
    CHECK(c.kind == CredentialKind::oauth_token);
    CHECK(c.headers == std::vector<std::pair<std::string, std::string>>{{"authorization", "Bearer {token}"}});
    CHECK(c.anthropic_beta == "oauth-2025-04-20");
    const auto& x = cfg.credentials.at("custom");
    CHECK(x.headers ==
          std::vector<std::pair<std::string, std::string>>{{"x-goog-api-key", "{key}"}, {"x-other", "Token {key}"}});
    // Only a written template counts as the operator's: it beats a grant's default_headers.
    CHECK_FALSE(a.template_given);
    CHECK_FALSE(c.template_given);
    CHECK(x.template_given);

    REQUIRE(cfg.grants.size() == 4);
    const auto& g0 = cfg.grants[0];
    CHECK(g0.host == "api.anthropic.com");
    CHECK(g0.port == 443);
    CHECK(g0.mode == GrantMode::inject);
    CHECK(g0.credential == "anthropic");
    REQUIRE(g0.routes.size() == 2);
    CHECK(g0.routes[0].method == "POST");
    CHECK(g0.routes[0].path == "/v1/messages");
    CHECK_FALSE(g0.routes[0].prefix);
    CHECK(g0.routes[1].path == "/v1/models/");
    CHECK(g0.routes[1].prefix);
    CHECK(g0.identities == std::vector<std::string>{"worker-a", "worker-b/*"});
    CHECK_FALSE(g0.allow_private);
    CHECK(g0.index == 0);
    CHECK(cfg.grants[1].host == "*.github.com");
    CHECK(cfg.grants[1].mode == GrantMode::tunnel);
    const auto& g2 = cfg.grants[2];
    CHECK(g2.allow_private);
    REQUIRE(g2.connect_host);
    CHECK(g2.connect_host->text() == "127.0.0.1");
    CHECK(g2.connect_port == 9443);
    CHECK(g2.upstream_ca_file == "/tmp/ca.pem");
    CHECK(cfg.grants[3].host == "::1");
    // `where` is the line of the section header.
    auto line_of = [&](const std::string& needle) {
        std::ifstream f(p);
        std::string line;
        for (int n = 1; std::getline(f, line); ++n)
            if (line == needle) return p + ":" + std::to_string(n);
        return std::string("?");
    };
    CHECK(c.where == line_of("[credentials.claude]"));
    CHECK(g2.where.rfind(p + ":", 0) == 0);
}

TEST_CASE("defaults when keys are omitted") {
    TempDir d;
    auto cfg = load_gateway_config(d.write("g.toml", "[gateway]\nlisten_unix = \"/run/g.sock\"\n"));
    CHECK(cfg.gateway.listen_tcp.empty());
    CHECK(cfg.gateway.ledger == "/var/lib/corral/ledger.jsonl");
    CHECK(cfg.gateway.state_dir == "/var/lib/corral");
    CHECK(cfg.gateway.limits.max_body_bytes == 1024 * 1024);
    CHECK(cfg.gateway.limits.max_header_bytes == 16 * 1024);
    CHECK(cfg.gateway.limits.max_response_bytes == 256ull * 1024 * 1024);
    CHECK(cfg.gateway.limits.read_timeout == 30s);
    CHECK(cfg.gateway.limits.idle_timeout == 120s);
    CHECK(cfg.gateway.limits.max_connections == 1024);
    CHECK(cfg.gateway.limits.max_connections_per_identity == 256);
    CHECK(cfg.gateway.limits.requests_per_identity == 0);
    CHECK(cfg.gateway.limits.ledger_refusals_per_identity == 10'000);
    CHECK(cfg.grants.empty());
}

TEST_CASE("max_connections_per_identity: at most max_connections; omitted, it shrinks with a small max_connections") {
    TempDir d;
    const std::string g = "[gateway]\nlisten_unix = \"/run/g.sock\"\n[gateway.limits]\n";
    auto small = load_gateway_config(d.write("small.toml", g + "max_connections = 64\n"));
    CHECK(small.gateway.limits.max_connections_per_identity == 64);
    auto equal = load_gateway_config(d.write("equal.toml", g + "max_connections = 64\nmax_connections_per_identity = 64\n"));
    CHECK(equal.gateway.limits.max_connections_per_identity == 64);
    auto big = load_gateway_config(d.write("big.toml", g + "max_connections = 4096\n"));
    CHECK(big.gateway.limits.max_connections_per_identity == 256);
}

TEST_CASE("errors name file:line, the key, what was given and what is allowed") {
    std::string g = base_gateway;
    CHECK(error_of(g + "[[grants]]\nhost = \"a.example.com\"\nmode = \"x\"\n") ==
          "F:6: key 'grants[0].mode': got \"x\", allowed: tunnel | inject");
    CHECK(error_of(g + "[[grants]]\nhost = \"a.example.com\"\nmode = \"tunnel\"\n[[grants]]\nhost = \"b.example.com\"\n"
                       "mode = \"tunnel\"\nport = 70000\n") ==
          "F:10: key 'grants[1].port': got 70000, allowed: an integer 1..65535");
    CHECK(error_of(g + "bogus = 1\n") ==
          "F:4: unknown key 'gateway.bogus', allowed: approval_command | approval_command_user | hosts_file | journal | "
          "ledger | limits | listen_tcp | listen_unix | state_dir | tcp_identity | upstream_ca_file");
    // The notifier hook: an absolute program, a user other than root.
    CHECK(error_of(g + "approval_command = \"notify\"\n").find(
              "F:4: key 'gateway.approval_command': got \"notify\", allowed: an array of strings, the first an "
              "absolute path") == 0);
    CHECK(error_of(g + "approval_command = [\"notify\", \"--now\"]\n").find("allowed: an array of strings") !=
          std::string::npos);
    CHECK(error_of(g + "approval_command = []\n").find("allowed: an array of strings") != std::string::npos);
    CHECK(error_of(g + "approval_command_user = \"root\"\n").find(
              "F:4: key 'gateway.approval_command_user': got \"root\", allowed: a user name of the host other than "
              "root") == 0);
    CHECK(error_of(g + "approval_command_user = \"Bob Smith\"\n").find("approval_command_user") != std::string::npos);
    CHECK(error_of(g + "[gateway.limits]\nmax_body_bytes = \"12XB\"\n").find(
              "F:5: key 'gateway.limits.max_body_bytes': got \"12XB\", allowed: a size") == 0);
    CHECK(error_of(g + "[gateway.limits]\nread_timeout = \"forever\"\n").find(
              "F:5: key 'gateway.limits.read_timeout': got \"forever\", allowed: a duration") == 0);
    CHECK(error_of(g + "[gateway.limits]\nmax_body_bytes = 0\n").find("max_body_bytes': got 0") != std::string::npos);
    CHECK(error_of(g + "[gateway.limits]\nmax_connections = \"10\"\n") ==
          "F:5: key 'gateway.limits.max_connections': got \"10\", allowed: an integer 1..1000000");
    CHECK(error_of(g + "[gateway.limits]\nmax_connections = 64\nmax_connections_per_identity = 65\n") ==
          "F:6: key 'gateway.limits.max_connections_per_identity': got 65, allowed: an integer 1..max_connections (64)");
    CHECK(error_of(g + "[gateway.limits]\nmax_connections_per_identity = 0\n") ==
          "F:5: key 'gateway.limits.max_connections_per_identity': got 0, allowed: an integer 1..1000000");
    CHECK(error_of(g + "[gateway.limits]\nledger_refusals_per_identity = -1\n") ==
          "F:5: key 'gateway.limits.ledger_refusals_per_identity': got -1, allowed: an integer 0..9223372036854775807");
    CHECK(error_of(g + "[gateway.limits]\nspeed = 3\n").find("unknown key 'gateway.limits.speed'") != std::string::npos);
    CHECK(error_of(g + "[other]\nx = 1\n") == "F:4: unknown key 'other', allowed: gateway | credentials | grants | budget | prices");
    CHECK(error_of("[gateway]\nlisten_tcp = \"0.0.0.0:3128\"\n").find(
              "F:2: key 'gateway.listen_tcp': got \"0.0.0.0:3128\", allowed: \"\" or a loopback") == 0);
    CHECK(error_of("[gateway]\nlisten_tcp = \"10.0.0.1:3128\"\n").find("allowed: \"\" or a loopback") !=
          std::string::npos);
    CHECK(error_of("[gateway]\nlisten_tcp = \"localhost:3128\"\n").find("listen_tcp") != std::string::npos);
    CHECK(error_of("[gateway]\nlisten_unix = \"\"\n").find("both empty") != std::string::npos);
    CHECK(error_of("[gateway]\nlisten_unix = \"relative.sock\"\n") ==
          "F:2: key 'gateway.listen_unix': got \"relative.sock\", allowed: \"\" or an absolute path");
    CHECK(error_of(g + "tcp_identity = \"nobody\"\n").find("key 'gateway.tcp_identity': got \"nobody\"") !=
          std::string::npos);
    CHECK(error_of("x = [1,\n").find("F:") == 0);  // syntax error: still one line with the file
    CHECK(error_of("").find("[gateway] is missing") != std::string::npos);
}

TEST_CASE("grant validation: hosts, routes, identities, cross-references") {
    std::string g = base_gateway;
    auto grant_err = [&](const std::string& body) { return error_of(g + "[[grants]]\n" + body); };
    for (const char* host : {"127.1", "2130706433", "0x7f.1", "*.com", "*", "a.*.com", "exa mple.com", "[a.com]",
                             "", "foo.example.123", "fe80::1%eth0"}) {
        CAPTURE(host);
        CHECK(grant_err(std::string("host = \"") + host + "\"\nmode = \"tunnel\"\n")
                  .find("key 'grants[0].host'") != std::string::npos);
    }
    CHECK(grant_err("mode = \"tunnel\"\n").find("key 'grants[0].host' is missing") != std::string::npos);
    CHECK(grant_err("host = \"a.example.com\"\n").find("key 'grants[0].mode' is missing, allowed: tunnel | inject") !=
          std::string::npos);
    CHECK(grant_err("host = \"a.example.com\"\nmode = \"inject\"\ncredential = \"nope\"\n")
              .find("key 'grants[0].credential': got \"nope\", allowed: (no [credentials.NAME] sections defined)") !=
          std::string::npos);
    CHECK(grant_err("host = \"a.example.com\"\nmode = \"tunnel\"\nroutes = [\"GET /\"]\n")
              .find("no routes with mode = \"tunnel\"") != std::string::npos);
    for (const char* route : {"GET", "get /x", "GET x", "GET /a/../b", "GET /a//b", "GET /a/%2e", "GET /a?x",
                              "GET /a*", "GET /a/*/b", "GET  /a", "GET /a;b", "GET /a/./b"}) {
        CAPTURE(route);
        CHECK(grant_err(std::string("host = \"a.example.com\"\nmode = \"inject\"\nroutes = [\"") + route + "\"]\n")
                  .find("key 'grants[0].routes[0]'") != std::string::npos);
    }
    CHECK(grant_err("host = \"a.example.com\"\nmode = \"inject\"\nidentities = [\"a/b/c\"]\n")
              .find("key 'grants[0].identities[0]'") != std::string::npos);
    CHECK(grant_err("host = \"a.example.com\"\nmode = \"tunnel\"\nallow_private = \"yes\"\n")
              .find("got \"yes\", allowed: true | false") != std::string::npos);
    CHECK(grant_err("host = \"a.example.com\"\nmode = \"tunnel\"\nconnect_to = \"127.0.0.1\"\n")
              .find("key 'grants[0].connect_to'") != std::string::npos);
    CHECK(grant_err("host = \"a.example.com\"\nmode = \"tunnel\"\nupstream_ca_file = \"/x.pem\"\n")
              .find("no upstream_ca_file with mode = \"tunnel\"") != std::string::npos);
    CHECK(grant_err("host = \"a.example.com\"\nmode = \"tunnel\"\nhots = 1\n")
              .find("unknown key 'grants[0].hots'") != std::string::npos);
    CHECK(error_of(g + "[[grants]]\nhost = \"A.example.com\"\nmode = \"tunnel\"\n[[grants]]\nhost = "
                       "\"a.example.com.\"\nmode = \"inject\"\n")
              .find("duplicates grants[0]") != std::string::npos);
}

TEST_CASE("credential validation") {
    std::string g = base_gateway;
    CHECK(error_of(g + "[credentials.a]\nkind = \"password\"\nenv = \"X\"\n") ==
          "F:5: key 'credentials.a.kind': got \"password\", allowed: api_key | oauth_token");
    CHECK(error_of(g + "[credentials.a]\nkind = \"api_key\"\n").find("neither set, allowed: exactly one of them") !=
          std::string::npos);
    CHECK(error_of(g + "[credentials.a]\nkind = \"api_key\"\nenv = \"X\"\nfile = \"/x\"\n").find("both set") !=
          std::string::npos);
    CHECK(error_of(g + "[credentials.a]\nkind = \"api_key\"\nfile = \"rel\"\n") ==
          "F:6: key 'credentials.a.file': got \"rel\", allowed: an absolute path");
    CHECK(error_of(g + "[credentials.a]\nkind = \"api_key\"\nenv = \"1X\"\n").find("credentials.a.env") !=
          std::string::npos);
    CHECK(error_of(g + "[credentials.a]\nkind = \"api_key\"\nenv = \"X\"\ntemplate = { \"x-api-key\" = \"{secret}\" }\n")
              .find("key 'credentials.a.template.x-api-key'") != std::string::npos);
    CHECK(error_of(g + "[credentials.a]\nkind = \"api_key\"\nenv = \"X\"\ntemplate = { \"bad name\" = \"{key}\" }\n")
              .find("header name") != std::string::npos);
    CHECK(error_of(g + "[credentials.a]\nkind = \"api_key\"\nenv = \"X\"\ntemplate = { \"Host\" = \"{key}\" }\n")
              .find("any header except host") != std::string::npos);
    CHECK(error_of(g + "[credentials.a]\nkind = \"api_key\"\nenv = \"X\"\ntemplate = { \"x\" = \"a\\r\\nb: {key}\" }\n")
              .find("credentials.a.template.x") != std::string::npos);
    CHECK(error_of(g + "[credentials.a]\nkind = \"oauth_token\"\nenv = \"X\"\nanthropic_beta = \"a,b\"\n")
              .find("credentials.a.anthropic_beta") != std::string::npos);
    CHECK(error_of(g + "[credentials.a]\nkind = \"api_key\"\nenv = \"X\"\nextra = 1\n")
              .find("unknown key 'credentials.a.extra'") != std::string::npos);
    CHECK(error_of(g + "[credentials.a]\nkind = \"api_key\"\nenv = \"X\"\n[[grants]]\nhost = \"a.example.com\"\n"
                       "mode = \"tunnel\"\ncredential = \"a\"\n")
              .find("no credential with mode = \"tunnel\"") != std::string::npos);
}

TEST_CASE("parse_gateway_sections ignores other org.toml sections but checks its own") {
    std::istringstream org(std::string("[engine]\nkind = \"claude\"\n[workers]\nx = 1\n") + base_gateway +
                           "[[grants]]\nhost = \"a.example.com\"\nmode = \"tunnel\"\n");
    auto root = toml::parse(org, "org.toml");
    auto cfg = parse_gateway_sections(root, "org.toml");
    CHECK(cfg.grants.size() == 1);
    CHECK(cfg.file == "org.toml");
    std::istringstream bad(std::string(base_gateway) + "[[grants]]\nhost = \"a.example.com\"\nmode = \"nope\"\n");
    auto root2 = toml::parse(bad, "org.toml");
    try {
        parse_gateway_sections(root2, "org.toml");
        FAIL("accepted mode nope");
    } catch (const ConfigError& e) {
        CHECK(std::string(e.what()) == "org.toml:6: key 'grants[0].mode': got \"nope\", allowed: tunnel | inject");
    }
}

TEST_CASE("load_credential_secrets: root-only files and environment variables, never echoing the secret") {
    TempDir d;
    auto key = d.write("key", "sk-ant-api03-SECRETVALUE\n", 0600);
    auto ro = d.write("ro", "  tok-RO  \n", 0400);
    auto loose = d.write("loose", "sk-LOOSE-SECRET\n", 0640);
    auto world = d.write("world", "sk-WORLD-SECRET\n", 0604);
    auto empty = d.write("empty", "\n\n", 0600);
    auto spaced = d.write("spaced", "sk-a b-SECRET\n", 0600);
    auto link = (d.path / "link").string();
    std::filesystem::create_symlink(key, link);
    std::string dirpath = d.path.string();

    auto cfg_with = [&](std::string kind_and_source) {
        return d.write("c.toml", std::string(base_gateway) + "[credentials.c]\nkind = \"api_key\"\n" + kind_and_source);
    };
    auto secrets = load_credential_secrets(load_gateway_config(cfg_with("file = \"" + key + "\"\n")));
    CHECK(secrets.at("c") == "sk-ant-api03-SECRETVALUE");
    CHECK(load_credential_secrets(load_gateway_config(cfg_with("file = \"" + ro + "\"\n"))).at("c") == "tok-RO");

    ::setenv("CORRAL_TEST_CRED_VAR", "env-SECRET-1", 1);
    CHECK(load_credential_secrets(load_gateway_config(cfg_with("env = \"CORRAL_TEST_CRED_VAR\"\n"))).at("c") ==
          "env-SECRET-1");
    ::unsetenv("CORRAL_TEST_CRED_UNSET");
    ::setenv("CORRAL_TEST_CRED_EMPTY", "", 1);

    struct Case {
        std::string source;
        std::string expect;
        std::string secret;
    };
    std::vector<Case> cases = {
        {"file = \"" + loose + "\"\n", "mode 0640, allowed: owner uid", "sk-LOOSE-SECRET"},
        {"file = \"" + world + "\"\n", "mode 0604", "sk-WORLD-SECRET"},
        {"file = \"" + empty + "\"\n", "empty secret", ""},
        {"file = \"" + spaced + "\"\n", "whitespace, control or non-ASCII", "sk-a b-SECRET"},
        {"file = \"" + link + "\"\n", "no symlink", "SECRETVALUE"},
        {"file = \"" + dirpath + "\"\n", "not a regular file", ""},
        {"file = \"" + dirpath + "/missing\"\n", "open: No such file", ""},
        {"env = \"CORRAL_TEST_CRED_UNSET\"\n", "CORRAL_TEST_CRED_UNSET is not set", ""},
        {"env = \"CORRAL_TEST_CRED_EMPTY\"\n", "empty secret", ""},
    };
    for (const auto& c : cases) {
        CAPTURE(c.source);
        auto cfg = load_gateway_config(cfg_with(c.source));
        try {
            load_credential_secrets(cfg);
            FAIL("accepted");
        } catch (const ConfigError& e) {
            std::string m = e.what();
            CHECK(m.find(c.expect) != std::string::npos);
            CHECK(m.find("credentials.c") != std::string::npos);
            CHECK(m.find(d.path.string() + "/c.toml:4: credentials.c") == 0);  // the [credentials.c] line
            if (!c.secret.empty()) CHECK(m.find(c.secret) == std::string::npos);
            CHECK(m.find("SECRET") == std::string::npos);
        }
    }
}

TEST_CASE("every problem is reported, one per line: every bad route, each section and grant, no follow-on errors") {
    TempDir d;
    auto p = d.write("g.toml", std::string(base_gateway) +
                                   "bogus = 1\n"                                            // 4
                                   "[gateway.limits]\nmax_body_bytes = 0\nspeed = 3\n"     // 5-7
                                   "[credentials.a]\nkind = \"password\"\nenv = \"X\"\n"   // 8-10
                                   "[credentials.b]\nkind = \"api_key\"\n"                  // 11-12
                                   "[[grants]]\nhost = \"*.com\"\nmode = \"teleport\"\n"   // 13-15
                                   "routes = [\"GET /ok\"]\n"                               // 16
                                   "[[grants]]\nhost = \"api.example.com\"\nmode = \"inject\"\n"  // 17-19
                                   "credential = \"a\"\n"                                   // 20
                                   "routes = [\"GET /v1/x\", \"get /bad\", \"POST /v1/*\", \"GET /a/../b\"]\n"  // 21
                                   "[other]\nx = 1\n");                                     // 22
    std::string m;
    try {
        load_gateway_config(p);
        FAIL("accepted");
    } catch (const ConfigError& e) {
        m = e.what();
    }
    auto has = [&](const std::string& line) {
        CAPTURE(line);
        CHECK(m.find(p + line) != std::string::npos);
    };
    has(":22: unknown key 'other', allowed: gateway | credentials | grants");
    has(":4: unknown key 'gateway.bogus'");
    has(":6: key 'gateway.limits.max_body_bytes': got 0, allowed: a size");
    has(":7: unknown key 'gateway.limits.speed'");
    has(":9: key 'credentials.a.kind': got \"password\", allowed: api_key | oauth_token");
    has(":11: keys 'credentials.b.file' and 'credentials.b.env': neither set, allowed: exactly one of them");
    has(":14: key 'grants[0].host': got \"*.com\"");
    has(":15: key 'grants[0].mode': got \"teleport\", allowed: tunnel | inject");
    has(":21: key 'grants[1].routes[1]': got \"get /bad\", allowed: \"METHOD /path\"");
    has(":21: key 'grants[1].routes[3]': got \"GET /a/../b\", allowed: \"METHOD /path\"");
    CHECK(std::count(m.begin(), m.end(), '\n') == 9);  // 10 lines: nothing else
    // Credential 'a' has its own error: the grant naming it gets no second one.
    CHECK(m.find("grants[1].credential") == std::string::npos);
}

// docs/gateway.md's limits are the config's: the example block parses as
// written, and each timeout is described as the code uses it (the upstream's
// answer is awaited under idle_timeout; read_timeout bounds the request and
// the upstream's connect and handshakes).
TEST_CASE("docs/gateway.md: the [gateway.limits] example parses and the timeouts say what the code does") {
    const char* root = std::getenv("CORRAL_SOURCE_ROOT");
    REQUIRE_MESSAGE(root, "CORRAL_SOURCE_ROOT is set by meson test");
    std::ifstream in(std::string(root) + "/docs/gateway.md");
    REQUIRE(in);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string doc = ss.str();
    auto start = doc.find("[gateway.limits]\n");
    REQUIRE(start != std::string::npos);
    auto end = doc.find("\n\n", start);
    const std::string block = doc.substr(start, end - start) + "\n";
    TempDir d;
    auto cfg = load_gateway_config(d.write("gw.toml", "[gateway]\nlisten_unix = \"/run/x.sock\"\n\n" + block));
    CHECK(cfg.gateway.limits.read_timeout == 30s);
    CHECK(cfg.gateway.limits.idle_timeout == 120s);

    auto line_with = [&](const std::string& text, std::size_t from) {
        auto at = doc.find(text, from);
        REQUIRE_MESSAGE(at != std::string::npos, text);
        return doc.substr(at, doc.find('\n', at) - at);
    };
    const std::vector<std::pair<std::string, bool>> lines{
        {line_with("read_timeout = ", start), false},
        {line_with("idle_timeout = ", start), true},
        {line_with("| `read_timeout` |", 0), false},
        {line_with("| `idle_timeout` |", 0), true},
    };
    for (const auto& entry : lines) {
        // Named copies: clang 14 cannot capture structured bindings in doctest's lambdas.
        const std::string line = entry.first;
        const bool bounds_the_answer = entry.second;
        CAPTURE(line);
        CHECK((line.find("answer") != std::string::npos) == bounds_the_answer);
    }
}

TEST_CASE("a grant may name every host a request can name: \"0x\" and non-hex digits end a name") {
    // The config refused "x.0xz" and "x.0x1g" as numeric while the gateway
    // took them as names (WHATWG: "0x" and hex digits only is a number).
    TempDir d;
    auto cfg = load_gateway_config(d.write("g.toml", std::string(base_gateway) +
                                                         "[[grants]]\nhost = \"x.0xz\"\nmode = \"tunnel\"\n"
                                                         "[[grants]]\nhost = \"X.0x1G.\"\nmode = \"tunnel\"\n"
                                                         "[[grants]]\nhost = \"*.a.0xz\"\nmode = \"tunnel\"\n"));
    REQUIRE(cfg.grants.size() == 3);
    const gateway::Identity id{"w", "r"};
    for (const char* request : {"x.0xz", "X.0XZ.", "x.0x1g", "b.a.0xz"}) {
        CAPTURE(request);
        auto h = gateway::normalize_host(request);
        REQUIRE(h.host);
        CHECK(gateway::find_grant(cfg, id, *h.host, 443) != nullptr);
    }
    // A last label that is a number is refused on both sides.
    CHECK(error_of(std::string(base_gateway) + "[[grants]]\nhost = \"x.0x1f\"\nmode = \"tunnel\"\n")
              .find("key 'grants[0].host'") != std::string::npos);
    CHECK_FALSE(gateway::normalize_host("x.0x1f").host);
}

TEST_CASE("[gateway] approval_command and approval_command_user: the notifier hook, default user nobody") {
    TempDir d;
    auto cfg = load_gateway_config(d.write("g.toml", std::string(base_gateway) + "approval_command = [\"/usr/local/bin/notify\", \"--chat\"]\n"));
    CHECK(cfg.gateway.approval_command == std::vector<std::string>{"/usr/local/bin/notify", "--chat"});
    CHECK(cfg.gateway.approval_command_user == "nobody");
    auto none = load_gateway_config(d.write("h.toml", std::string(base_gateway)));
    CHECK(none.gateway.approval_command.empty());
    auto user = load_gateway_config(d.write("i.toml", std::string(base_gateway) + "approval_command_user = \"corral-notify\"\n"));
    CHECK(user.gateway.approval_command_user == "corral-notify");
}
