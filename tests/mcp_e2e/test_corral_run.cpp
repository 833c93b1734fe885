// tests/mcp_e2e/test_corral_run.cpp — a worker's remote Streamable HTTP MCP
// server through `corral run` and its embedded gateway, end to end: the SDK
// client (client.mjs) runs IN the box against the box's MCP listener
// (http://127.0.0.1:3129/mcp/NAME); our test server (test_server.mjs, TLS
// with a test CA, reached through the server's connect_to) records every
// call that reaches it. Checked: the allowed call arrives with the injected
// credential, the denied one never arrives and the client gets corral's
// sentence as a JSON-RPC error, tools/list shows only the allowed tool, the
// box's environment and files never hold the secret, and the run's ledger
// has the decision and outcome lines. Root only (test_run_main.cpp).
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/mcp_e2e/box_run.hpp"
#include "tests/mcp_e2e/harness.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_pki.hpp"

namespace corral::test::mcp_e2e {

namespace fs = std::filesystem;

namespace {

// What the box runs: the client against the MCP listener, then a marker, and
// it waits (for the host's scan of the live box) until /workspace/done exists.
const char* kBoxScript = R"SH(#!/bin/sh
echo "== client"
node /opt/mcp/client/client.mjs --url http://127.0.0.1:3129/mcp/tools --list \
  --call echo_header '{"name":"authorization"}' --call echo '{"text":"hi"}'
echo "exit=$?"
echo "== ready"
while [ ! -e /workspace/done ]; do sleep 0.1; done
echo "== end"
)SH";

// The organisation: an egress-only worker whose one MCP server is the test
// server, by name mcp.test.invalid, dialled at its loopback port.
void write_org(const std::string& dir, int port) {
    fs::create_directories(dir + "/org/workers/w1");
    write_file(dir + "/org/org.toml",
               "[engine]\nagent = \"claude\"\n"
               "[gateway]\nstate_dir = \"" + dir + "/gwstate\"\n"
               "[credentials.mcpkey]\nkind = \"oauth_token\"\nfile = \"" + dir + "/mcp.secret\"\n");
    write_file(dir + "/org/workers/w1/worker.toml",
               "agent = \"none\"\n"
               "[mcp.servers.tools]\n"
               "url = \"https://mcp.test.invalid/mcp\"\n"
               "credential = \"mcpkey\"\n"
               "connect_to = \"127.0.0.1:" + std::to_string(port) + "\"\n"
               "upstream_ca_file = \"" + dir + "/ca.crt\"\n"
               "[[mcp.rules]]\nserver = \"tools\"\ntool = \"echo_header\"\naction = \"allow\"\n"
               "[[mcp.rules]]\nserver = \"tools\"\ntool = \"echo\"\naction = \"deny\"\n");
}

}  // namespace

TEST_CASE("corral run: a worker's remote MCP server, governed end to end through the box's MCP listener") {
    TempDir t("corral-mcp-run");
    const std::string& dir = t.path;
    const std::string secret = "mcp-secret-" + random_hex(32);
    auto server = start_tls_test_server(dir, "corral mcp run test CA", secret, {"--calls-file", dir + "/calls.jsonl"});
    write_org(dir, server.port);
    fs::create_directories(dir + "/ws");
    ::chmod((dir + "/ws").c_str(), 0777);
    write_file(dir + "/ws/box.sh", kBoxScript, 0755);

    BoxRun b = run_box(dir, secret, {});
    INFO("corral's stdout:\n" << b.out << "\ncorral's stderr:\n" << b.corral_err);
    REQUIRE(b.exit_code == 0);

    // The client's steps, as the box saw them.
    const std::vector<json> steps = client_steps(b.out);
    REQUIRE(steps.size() == 3);
    std::vector<std::string> listed;
    for (const auto& tool : steps[0].value("tools", json::array())) listed.push_back(tool.value("name", ""));
    CHECK(listed == std::vector<std::string>{"echo_header"});
    CHECK(steps[1]["name"] == "echo_header");
    CHECK_FALSE(steps[1].contains("error"));
    CHECK(steps[1].contains("result"));
    CHECK(steps[2]["name"] == "echo");
    CHECK(steps[2]["error"]["code"] == -32001);
    CHECK(steps[2]["error"]["message"].get<std::string>().find(
              "refused by corral: tool echo is denied for this worker; do not retry it by other means") !=
          std::string::npos);

    // What reached the server: the allowed call only, with the real credential.
    auto calls = json_lines(read_file(dir + "/calls.jsonl"));
    REQUIRE(calls.size() == 1);
    CHECK(calls[0]["name"] == "echo_header");
    CHECK(calls[0]["authorization"] == "Bearer " + secret);

    // The box never held the secret: not in its answers, environment or tree.
    CHECK(b.out.find(secret) == std::string::npos);
    CHECK(b.environ_text.find("PATH=") != std::string::npos);  // really read
    CHECK(b.environ_text.find(secret) == std::string::npos);
    CHECK(b.scan_hits == "");

    // The run's ledger: a decision line per message, an outcome per request.
    std::vector<json> decisions, outcomes, first_sights;
    for (const auto& l : json_lines(read_file(b.run_dir + "/ledger.jsonl"))) {
        // The SDK's GET for an event stream is answered 405 before any message: no tool object.
        if (l.value("mode", "") != "mcp" || !l.contains("tool")) continue;
        CHECK(l["host"] == "mcp.test.invalid");
        const std::string phase = l["tool"].value("phase", "");
        if (phase == "decision") decisions.push_back(l);
        if (phase == "outcome") outcomes.push_back(l);
        if (phase == "first_sight") first_sights.push_back(l);
    }
    auto decided = [&](const std::string& tool) -> json {
        for (const auto& d : decisions)
            if (d["tool"].value("method", "") == "tools/call" && d["tool"].value("tool", "") == tool) return d;
        return nullptr;
    };
    REQUIRE(decided("echo_header").is_object());
    CHECK(decided("echo_header")["decision"] == "allow");
    REQUIRE(decided("echo").is_object());
    CHECK(decided("echo")["decision"] == "refuse");
    CHECK(decided("echo")["reason"] == "tool_denied");
    CHECK(decided("echo").value("status", 0) == 200);
    bool call_outcome = false;
    for (const auto& o : outcomes)
        if (o["tool"].value("tool", "") == "echo_header") {
            call_outcome = true;
            CHECK(o["status"] == 200);
            CHECK(o["credential"] == "mcpkey");
        }
    CHECK(call_outcome);
    // The tools/list's first sight of every listed tool, hidden and denied ones
    // included, once each, with its digest.
    std::vector<std::string> seen;
    for (const auto& l : first_sights) {
        seen.push_back(l["tool"].value("tool", ""));
        CHECK(l["tool"].value("digest", "").starts_with("sha256:"));
    }
    std::sort(seen.begin(), seen.end());
    CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end());
    CHECK(std::binary_search(seen.begin(), seen.end(), std::string("echo")));
    CHECK(std::binary_search(seen.begin(), seen.end(), std::string("echo_header")));
    CHECK(std::binary_search(seen.begin(), seen.end(), std::string("echo_env")));
    auto r = run({"grep", "-rlsF", "-e", secret, b.run_dir});
    CHECK_MESSAGE(r.exit_code == 1, "the secret is in the run dir: " << r.out);

    // run.json's tools counts, and the run's summary line.
    json record = json::parse(read_file(b.run_dir + "/run.json"), nullptr, false);
    REQUIRE(record.is_object());
    CHECK(record["tools"] == json{{"calls", 2}, {"allowed", 1}, {"refused", {{"tool_denied", 1}}},
                                  {"per_tool", {{"tools/echo", {{"calls", 1}, {"refused", 1}}},
                                                {"tools/echo_header", {{"calls", 1}, {"refused", 0}}}}}});
    CHECK(b.corral_err.find("; 2 tool calls, 1 refused; record " + b.run_dir + "/run.json") != std::string::npos);

    // The journal verifies and holds every ledger line as a decision record,
    // the tool decisions and first sights among them.
    auto verified = run({corral_bin(), "journal", "verify", b.run_dir + "/journal.jsonl", "--key",
                         dir + "/runs/journal/signing.pub"});
    CHECK_MESSAGE(verified.exit_code == 0, verified.out << verified.err);
    std::vector<std::string> journalled;
    for (const auto& rec : json_lines(read_file(b.run_dir + "/journal.jsonl")))
        if (rec.value("type", "") == "decision")
            for (const auto& line : rec["payload"]["ledger_lines"]) journalled.push_back(line.get<std::string>());
    std::vector<std::string> ledger_lines;
    for (const auto& l : json_lines(read_file(b.run_dir + "/ledger.jsonl"))) ledger_lines.push_back(l.dump());
    std::size_t tool_phases = 0;
    for (const auto& j : journalled) {
        json l = json::parse(j, nullptr, false);
        if (l.is_object() && l.contains("tool") &&
            (l["tool"].value("phase", "") == "decision" || l["tool"].value("phase", "") == "first_sight"))
            ++tool_phases;
    }
    CHECK(journalled.size() == ledger_lines.size());
    CHECK(tool_phases == decisions.size() + first_sights.size());
}

}  // namespace corral::test::mcp_e2e

namespace corral::test::mcp_e2e {

namespace {

// corral run of the worker in `dir`/org with `extra` options, as far as it
// gets; its exit status, stderr and run.json.
struct Refused {
    int exit_code = -1;
    std::string err;
    json record;
};
Refused run_refused(const std::string& dir, const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {corral_bin(), "run", "--config", dir + "/org", "--worker", "w1", "--rootfs", "host",
                                     "--run-dir", dir + "/run", "--state-dir", dir + "/runs"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {"--", "/bin/sh", "-c", "echo started"});
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = dir + "/runs";
    auto r = run(argv, o);
    Refused out{r.exit_code, r.err, json::parse(read_file(dir + "/run/run.json"), nullptr, false)};
    CHECK(r.out.find("started") == std::string::npos);
    return out;
}

}  // namespace

TEST_CASE("corral run: MCP servers a run cannot serve refuse it before anything starts, saying why") {
    TempDir t("corral-mcp-refused");
    const std::string& dir = t.path;
    write_org(dir, 9);
    write_file(dir + "/mcp.secret", "unused\n", 0600);

    SUBCASE("tool_calls_per_worker without the daemon: the embedded gateway cannot keep it") {
        write_file(dir + "/org/workers/w1/worker.toml", read_file(dir + "/org/workers/w1/worker.toml") +
                                                            "[mcp.budget]\ntool_calls_per_worker = 10\n");
        auto r = run_refused(dir, {});
        CHECK(r.exit_code == 125);
        CHECK_MESSAGE(r.err.find("corral run: worker w1: [mcp.budget] tool_calls_per_worker (a tool-call budget "
                                 "across the worker's runs) is kept by the gateway daemon: run with --gateway "
                                 "unix:PATH against `corral gateway --org DIR`") != std::string::npos, r.err);
        CHECK(r.record.value("outcome", "") == "setup_failed");
    }
    SUBCASE("a stdio server with --gateway unix:PATH: only a run's embedded gateway starts it") {
        write_file(dir + "/org/workers/w1/worker.toml",
                   read_file(dir + "/org/workers/w1/worker.toml") +
                       "[mcp.servers.files]\ncommand = [\"/usr/bin/node\", \"/opt/fs.js\"]\n");
        auto r = run_refused(dir, {"--gateway", "unix:" + dir + "/no-daemon.sock"});
        CHECK(r.exit_code == 125);
        CHECK(r.record.value("outcome", "") == "setup_failed");
    }
}

}  // namespace corral::test::mcp_e2e
