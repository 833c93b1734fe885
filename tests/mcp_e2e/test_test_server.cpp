// Our own MCP test server (test_server.mjs), driven by the SDK's client: each
// behaviour the real servers cannot show, over stdio and Streamable HTTP.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "tests/mcp_e2e/harness.hpp"
#include "tests/support/test_pki.hpp"

using namespace corral::test;
using namespace corral::test::mcp_e2e;

namespace {


// client.mjs `args` -- node test_server.mjs --stdio `server_args`...
ClientRun over_stdio(std::vector<std::string> args, const std::vector<std::string>& server_args = {}) {
    args.insert(args.end(), {"--", "node", here("test_server.mjs"), "--stdio"});
    args.insert(args.end(), server_args.begin(), server_args.end());
    return run_client(args);
}

std::string tool_description(const json& list_step, const std::string& tool) {
    return tool_named(list_step, tool).value("description", "");
}

}  // namespace

TEST_CASE("test server (stdio): the drifting tool's description changes after --drift-after lists, nothing else does") {
    auto c = over_stdio({"--list", "--list", "--list"}, {"--drift-after", "2"});
    INFO(dump(c));
    REQUIRE(c.raw.exit_code == 0);
    REQUIRE(c.steps.size() == 3);
    CHECK(tool_description(c.steps[0], "drifting") == "Returns a constant.");
    CHECK(tool_description(c.steps[1], "drifting") == "Returns a constant.");
    CHECK(tool_description(c.steps[2], "drifting") != "Returns a constant.");
    CHECK(tool_description(c.steps[2], "drifting").find("id_rsa") != std::string::npos);
    CHECK(tool_named(c.steps[2], "drifting")["inputSchema"] == tool_named(c.steps[0], "drifting")["inputSchema"]);
    CHECK(tool_named(c.steps[2], "echo") == tool_named(c.steps[0], "echo"));
}

TEST_CASE("test server (HTTP): the drifting tool's description follows --drift-file between two sessions") {
    TempDir dir("drift");
    const std::string flag = dir.path + "/drifted";
    auto server = start_test_server({"--drift-file", flag});
    auto before = run_client({"--url", server.url, "--list"});
    write_file(flag, "");
    auto after = run_client({"--url", server.url, "--list"});
    INFO(dump(before), "\n", dump(after));
    REQUIRE(before.steps.size() == 1);
    REQUIRE(after.steps.size() == 1);
    CHECK(tool_description(before.steps[0], "drifting") == "Returns a constant.");
    CHECK(tool_description(after.steps[0], "drifting").find("id_rsa") != std::string::npos);
}

TEST_CASE("test server (stdio): a slow call answers after its delay, and a client timeout gives up on it") {
    auto start = std::chrono::steady_clock::now();
    auto c = over_stdio({"--call", "slow", R"({"ms":700})"});
    auto took = std::chrono::steady_clock::now() - start;
    INFO(dump(c));
    REQUIRE(c.steps.size() == 1);
    CHECK(result_text(c.steps[0]) == "slept 700 ms");
    CHECK(took >= std::chrono::milliseconds(700));

    auto t = over_stdio({"--timeout", "300", "--call", "slow", R"({"ms":5000})", "--call", "echo", R"({"text":"after"})"});
    INFO(dump(t));
    REQUIRE(t.steps.size() == 2);
    CHECK(t.steps[0]["error"].value("code", 0) == -32001);  // the SDK's request timeout
    CHECK(result_text(t.steps[1]) == "after");
}

TEST_CASE("test server (HTTP): an oversize result of the requested size") {
    auto server = start_test_server({});
    auto c = run_client({"--url", server.url, "--call", "big", R"({"bytes":3145728})", "--call", "big", R"({"bytes":300000000})"});
    INFO("exit ", c.raw.exit_code, " timed out ", c.raw.timed_out, "\nstderr:\n", c.raw.err);
    REQUIRE(c.steps.size() == 2);
    const auto text = result_text(c.steps[0]);
    CHECK(text.size() == 3145728);
    CHECK(text.find_first_not_of('x') == std::string::npos);
    CHECK(c.steps[1]["result"].value("isError", false));  // above the server's own 256 MiB bound
}

TEST_CASE("test server (stdio): a result echoing an environment variable the host injected") {
    const std::string secret = "corral-mcp-secret-" + random_hex(16);
    auto c = over_stdio({"--env", "CORRAL_MCP_TEST_SECRET=" + secret, "--call", "echo_env", R"({"name":"CORRAL_MCP_TEST_SECRET"})",
                         "--call", "echo_env", R"({"name":"CORRAL_MCP_NOT_SET"})"});
    INFO(dump(c));
    REQUIRE(c.steps.size() == 2);
    CHECK(result_text(c.steps[0]) == json(secret).dump());
    CHECK(result_text(c.steps[1]) == "null");
}

TEST_CASE("test server (HTTP): a result echoing a request header") {
    const std::string secret = "Bearer corral-mcp-" + random_hex(16);
    auto server = start_test_server({});
    auto c = run_client({"--url", server.url, "--header", "Authorization: " + secret, "--call", "echo_header",
                         R"({"name":"Authorization"})", "--call", "echo_header", R"({"name":"X-Absent"})"});
    INFO(dump(c));
    REQUIRE(c.steps.size() == 2);
    CHECK(result_text(c.steps[0]) == json(secret).dump());
    CHECK(result_text(c.steps[1]) == "null");
}

TEST_CASE("test server (HTTP): sampling and elicitation requests to the client during a call") {
    auto server = start_test_server({});
    auto c = run_client({"--url", server.url, "--sampling", "the client's sample", "--elicit", R"({"answer":"yes"})",
                         "--call", "ask_sampling", R"({"prompt":"summarise"})",
                         "--call", "ask_elicitation", R"({"message":"proceed?"})"});
    INFO(dump(c));
    REQUIRE(c.steps.size() == 2);
    REQUIRE(c.server_requests.size() == 2);
    CHECK(c.server_requests[0].value("method", "") == "sampling/createMessage");
    CHECK(c.server_requests[0]["params"]["messages"][0]["content"].value("text", "") == "summarise");
    CHECK(c.server_requests[1].value("method", "") == "elicitation/create");
    CHECK(c.server_requests[1]["params"].value("message", "") == "proceed?");
    CHECK(result_text(c.steps[0]) == "the client's sample");
    CHECK(result_text(c.steps[1]) == R"({"action":"accept","content":{"answer":"yes"}})");
}

TEST_CASE("test server (stdio): a server→client request the client does not support fails the call, not the session") {
    auto c = over_stdio({"--call", "ask_sampling", R"({"prompt":"x"})", "--call", "echo", R"({"text":"still here"})"});
    INFO(dump(c));
    REQUIRE(c.steps.size() == 2);
    CHECK(c.server_requests.empty());
    CHECK(c.steps[0]["result"].value("isError", false));
    CHECK(result_text(c.steps[0]).find("-32601") != std::string::npos);  // method not found, on the client's side
    CHECK(result_text(c.steps[1]) == "still here");
}

TEST_CASE("test server (stdio): --tools 100 lists 100 filler tools besides its own, each callable") {
    auto c = over_stdio({"--list", "--call", "tool_0100", R"({"value":"v100"})", "--call", "tool_0101", R"({"value":"x"})"},
                        {"--tools", "100"});
    INFO(c.raw.err);
    REQUIRE(c.steps.size() == 3);
    CHECK(c.steps[0]["tools"].size() == 108);
    CHECK(tool_named(c.steps[0], "tool_0001").is_object());
    CHECK(tool_named(c.steps[0], "tool_0100").is_object());
    CHECK(result_text(c.steps[1]) == "v100");
    CHECK(c.steps[2]["error"].value("code", 0) == -32602);  // unknown tool: a JSON-RPC error
}

TEST_CASE("test server (HTTPS with a test CA): the client trusts it through NODE_EXTRA_CA_CERTS, and only then") {
    TempDir dir("tls");
    make_test_ca(dir.path, "corral mcp e2e test CA");
    make_test_leaf(dir.path, "server", "IP:127.0.0.1");
    auto server = start_test_server({"--tls-cert", dir.path + "/server.crt", "--tls-key", dir.path + "/server.key"});
    RunOptions trusted;
    trusted.env["NODE_EXTRA_CA_CERTS"] = dir.path + "/ca.crt";
    auto c = run_client({"--url", server.url, "--call", "echo", R"({"text":"over tls"})"}, trusted);
    INFO(dump(c));
    REQUIRE(c.steps.size() == 1);
    CHECK(result_text(c.steps[0]) == "over tls");

    auto untrusted = run_client({"--url", server.url, "--call", "echo", R"({"text":"x"})"});
    INFO(dump(untrusted));
    CHECK(untrusted.raw.exit_code == 1);
    CHECK(untrusted.steps.empty());
}
