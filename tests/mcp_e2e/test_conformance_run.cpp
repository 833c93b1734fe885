// The official conformance suite (@modelcontextprotocol/conformance 0.1.13,
// its server scenarios) run IN a corral box against the box's MCP listener,
// with server-everything (streamableHttp) behind corral's gateway: corral
// must be transparent to a conforming exchange, so the suite must pass and
// fail exactly as it does with the server direct (conformance-baseline.yml,
// test_real_servers.cpp). server-everything speaks plain HTTP and a remote
// MCP server is https:// only, so tls_front.mjs puts TLS (a test CA's
// certificate) in front of it. Root only (test_run_main.cpp).
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/mcp_e2e/harness.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_pki.hpp"

namespace corral::test::mcp_e2e {

namespace fs = std::filesystem;

namespace {

// tls_front.mjs in front of 127.0.0.1:`to`; its port.
int start_tls_front(const std::string& dir, int to, std::unique_ptr<Background>& process) {
    process = std::make_unique<Background>(std::vector<std::string>{
        "node", here("tls_front.mjs"), "--cert", dir + "/front.crt", "--key", dir + "/front.key", "--to", std::to_string(to)});
    if (!process->wait_for_stdout("\n", std::chrono::seconds(30))) throw std::runtime_error("tls_front.mjs did not start");
    auto line = process->drain_stdout();
    auto brace = line.find('{');
    if (line.rfind("ready ", 0) != 0 || brace == std::string::npos) throw std::runtime_error("tls_front.mjs said: " + line);
    return json::parse(line.substr(brace)).at("port").get<int>();
}

// A worker whose one MCP server is server-everything, every tool allowed and
// its server→client requests (sampling, elicitation) passed: the suite
// checks the protocol, not a policy.
void write_everything_org(const std::string& dir, int port) {
    fs::create_directories(dir + "/org/workers/w1");
    write_file(dir + "/org/org.toml", "[gateway]\nstate_dir = \"" + dir + "/gwstate\"\n");
    write_file(dir + "/org/workers/w1/worker.toml",
               "agent = \"none\"\n"
               "[mcp.servers.everything]\n"
               "url = \"https://everything.test.invalid/mcp\"\n"
               "connect_to = \"127.0.0.1:" + std::to_string(port) + "\"\n"
               "upstream_ca_file = \"" + dir + "/ca.crt\"\n"
               "allow_server_requests = true\n"
               "[[mcp.rules]]\nserver = \"everything\"\ntool = \"*\"\naction = \"allow\"\n");
}

}  // namespace

TEST_CASE("conformance 0.1.13 through corral run: server-everything behind corral's gateway passes and fails as direct") {
    TempDir t("corral-mcp-conformance");
    const std::string& dir = t.path;
    ::chmod(dir.c_str(), 0711);
    make_test_ca(dir, "corral mcp conformance test CA");
    make_test_leaf(dir, "front", "DNS:everything.test.invalid");
    auto server = start_everything_http(dir);
    std::unique_ptr<Background> front;
    const int front_port = start_tls_front(dir, server.port, front);
    write_everything_org(dir, front_port);
    fs::create_directories(dir + "/ws");
    ::chmod((dir + "/ws").c_str(), 0777);

    const std::string src = source_root();
    RunOptions o;
    o.timeout = std::chrono::seconds(280);
    o.env["CORRAL_STATE_DIR"] = dir + "/runs";
    auto r = run({corral_bin(), "run", "--config", dir + "/org", "--worker", "w1", "--rootfs", "host", "--workspace",
                  dir + "/ws", "--run-dir", dir + "/run", "--state-dir", dir + "/runs", "--timeout", "270s", "--ro-bind",
                  src + "/node_modules:/opt/mcp/node_modules", "--ro-bind", src + "/tests/mcp_e2e:/opt/mcp/client", "--",
                  "node", "/opt/mcp/node_modules/@modelcontextprotocol/conformance/dist/index.js", "server", "--url",
                  "http://127.0.0.1:3129/mcp/everything", "--expected-failures", "/opt/mcp/client/conformance-baseline.yml",
                  "-o", "/workspace/results"},
                 o);
    INFO("exit ", r.exit_code, "\nstdout:\n", r.out, "\nstderr:\n", r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("✓ tools-list: 1 passed, 0 failed") != std::string::npos);
    CHECK(r.out.find("✓ tools-call-simple-text: 1 passed, 0 failed") != std::string::npos);
    CHECK(r.out.find("✓ server-initialize: 1 passed, 0 failed") != std::string::npos);
}

}  // namespace corral::test::mcp_e2e
