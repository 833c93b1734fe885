// The real MCP servers from npm (pinned in package.json), driven directly by
// the SDK's client (client.mjs) and by inspector-cli: what the governed-tools
// tests will push through corral, shown working without it first.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "tests/mcp_e2e/harness.hpp"

using namespace corral::test;
using namespace corral::test::mcp_e2e;

namespace {


}  // namespace

TEST_CASE("server-filesystem (stdio): lists its tools, reads a file in its root, refuses one outside") {
    TempDir dir("fs");
    write_file(dir.path + "/notes.txt", "hello from the filesystem server\n");
    auto c = run_client({"--list", "--call", "read_text_file", json{{"path", dir.path + "/notes.txt"}}.dump(),
                         "--call", "read_text_file", json{{"path", "/etc/hostname"}}.dump(),
                         "--", "node", filesystem_server(), dir.path});
    INFO(dump(c));
    REQUIRE(c.raw.exit_code == 0);
    CHECK(c.connected["server"].value("name", "") == "secure-filesystem-server");
    REQUIRE(c.steps.size() == 3);
    for (const char* tool : {"read_text_file", "list_directory", "write_file", "move_file"})
        CHECK_MESSAGE(tool_named(c.steps[0], tool).is_object(), tool);
    CHECK(tool_named(c.steps[0], "read_text_file")["inputSchema"]["properties"].contains("path"));
    CHECK(result_text(c.steps[1]) == "hello from the filesystem server\n");
    CHECK_FALSE(c.steps[1]["result"].value("isError", false));
    CHECK(c.steps[2]["result"].value("isError", false));
    CHECK(result_text(c.steps[2]).find("Access denied") != std::string::npos);
}

TEST_CASE("server-everything (stdio): lists its tools and answers echo and get-sum") {
    auto c = run_client({"--list", "--call", "echo", R"({"message":"ping 1"})", "--call", "get-sum", R"({"a":2,"b":40})",
                         "--", "node", everything_server(), "stdio"});
    INFO(dump(c));
    REQUIRE(c.raw.exit_code == 0);
    CHECK(c.connected["server"].value("name", "") == "mcp-servers/everything");
    REQUIRE(c.steps.size() == 3);
    for (const char* tool : {"echo", "get-sum", "get-env", "trigger-long-running-operation"})
        CHECK_MESSAGE(tool_named(c.steps[0], tool).is_object(), tool);
    // Listed only to a client that declares sampling (the HTTP case below does).
    CHECK(tool_named(c.steps[0], "trigger-sampling-request").is_null());
    CHECK(result_text(c.steps[1]) == "Echo: ping 1");
    CHECK(result_text(c.steps[2]) == "The sum of 2 and 40 is 42.");
}

TEST_CASE("server-everything (Streamable HTTP on 127.0.0.1): a session, echo, and its sampling request to the client") {
    TempDir dir("everything-http");
    auto server = start_everything_http(dir.path);
    auto c = run_client({"--url", server.url, "--sampling", "sampled by the test client", "--list",
                         "--call", "echo", R"({"message":"over http"})",
                         "--call", "trigger-sampling-request", R"({"prompt":"say something"})"});
    INFO(dump(c));
    REQUIRE(c.raw.exit_code == 0);
    CHECK(c.connected.value("protocol", "") == "2025-11-25");
    REQUIRE(c.steps.size() == 3);
    CHECK(tool_named(c.steps[0], "echo").is_object());
    CHECK(result_text(c.steps[1]) == "Echo: over http");
    // The server asked the client to sample during the call, on the call's stream.
    REQUIRE(c.server_requests.size() == 1);
    CHECK(c.server_requests[0].value("method", "") == "sampling/createMessage");
    CHECK(result_text(c.steps[2]).find("sampled by the test client") != std::string::npos);
}

// server-everything registers its sampling tool only for a client that
// declares sampling; a call of an unknown tool is a tool error from the
// SDK's McpServer (isError), not a JSON-RPC error (test_server.mjs gives that).
TEST_CASE("server-everything (Streamable HTTP): no sampling tool for a client without the sampling capability") {
    TempDir dir("everything-nosampling");
    auto server = start_everything_http(dir.path);
    auto c = run_client({"--url", server.url, "--list", "--call", "trigger-sampling-request", R"({"prompt":"x"})"});
    INFO(dump(c));
    REQUIRE(c.raw.exit_code == 0);
    REQUIRE(c.steps.size() == 2);
    CHECK(tool_named(c.steps[0], "trigger-sampling-request").is_null());
    CHECK(c.server_requests.empty());
    CHECK(c.steps[1]["result"].value("isError", false));
    CHECK(result_text(c.steps[1]).find("Tool trigger-sampling-request not found") != std::string::npos);
}

// inspector-cli 1.0.3 imports "../package.json" if it exists relative to the
// working directory, else "../../package.json", both resolved from its own
// module: run from its build/ directory so the first is its own manifest.
TEST_CASE("inspector-cli --cli: tools/call on server-everything (stdio)") {
    RunOptions o;
    o.cwd = package_file("@modelcontextprotocol/inspector-cli", "build");
    auto r = run({"node", package_file("@modelcontextprotocol/inspector-cli", "build/cli.js"), "--cli", "node",
                  everything_server(), "stdio", "--method", "tools/call", "--tool-name", "get-sum", "--tool-arg", "a=2",
                  "--tool-arg", "b=40"},
                 o);
    INFO("exit ", r.exit_code, "\nstdout:\n", r.out, "\nstderr:\n", r.err);
    REQUIRE(r.exit_code == 0);
    auto brace = r.out.find('{');
    REQUIRE(brace != std::string::npos);
    auto result = json::parse(r.out.substr(brace));
    CHECK(result["content"][0].value("text", "") == "The sum of 2 and 40 is 42.");
}

// The official conformance suite's server scenarios against server-everything
// over Streamable HTTP, with the failures it has today as the baseline: exit
// 0 means exactly the expected scenarios failed (an unexpected failure or an
// unexpected pass is exit 1). Through corral, the same baseline must hold.
TEST_CASE("conformance 0.1.13: server-everything (Streamable HTTP) passes and fails exactly as its baseline") {
    TempDir dir("conformance");
    auto server = start_everything_http(dir.path);
    RunOptions o;
    o.timeout = std::chrono::seconds(240);
    o.cwd = dir.path;
    auto r = run({"node", package_file("@modelcontextprotocol/conformance", "dist/index.js"), "server", "--url", server.url,
                  "--expected-failures", here("conformance-baseline.yml"), "-o", dir.path + "/results"},
                 o);
    INFO("exit ", r.exit_code, "\nstdout:\n", r.out, "\nstderr:\n", r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("✓ tools-list: 1 passed, 0 failed") != std::string::npos);
    CHECK(r.out.find("✓ server-initialize: 1 passed, 0 failed") != std::string::npos);
}
