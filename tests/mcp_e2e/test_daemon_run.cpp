// tests/mcp_e2e/test_daemon_run.cpp — a worker's remote Streamable HTTP MCP
// server served by a real `corral gateway --org` daemon for `corral run
// --gateway unix:PATH`: the SDK client (client.mjs) runs IN the box against
// the box's MCP listener (127.0.0.1:3129), which the run relays to the daemon
// (CORRAL-MCP); our test server (test_server.mjs, TLS with a test CA, reached
// through connect_to) records every call that reaches it. Checked: the
// allowed call arrives with the injected credential, the denied one never
// arrives and the client reads corral's sentence; run.json's `tools` counts
// come from the daemon; [mcp.budget] tool_calls_per_worker counts the
// worker's calls across two runs and goes on after the daemon restarts,
// refusing the call over it before it is forwarded. Root only.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/mcp_e2e/box_run.hpp"
#include "tests/mcp_e2e/harness.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_pki.hpp"

namespace corral::test::mcp_e2e {

namespace fs = std::filesystem;

namespace {

// An egress-only worker whose one MCP server is the test server (by name
// mcp.test.invalid, dialled at its loopback port); the daemon listens on
// DIR/gw.sock and keeps its state (CA, pins, budgets) in DIR/gwstate.
void write_daemon_org(const std::string& dir, int port, int per_worker) {
    fs::create_directories(dir + "/org/workers/w1");
    write_file(dir + "/org/org.toml",
               "[engine]\nagent = \"claude\"\n"
               "[gateway]\nstate_dir = \"" + dir + "/gwstate\"\nlisten_unix = \"" + dir + "/gw.sock\"\n"
               "ledger = \"" + dir + "/daemon-ledger.jsonl\"\n"
               "[credentials.mcpkey]\nkind = \"oauth_token\"\nfile = \"" + dir + "/mcp.secret\"\n");
    write_file(dir + "/org/workers/w1/worker.toml",
               "agent = \"none\"\n"
               "[mcp.servers.tools]\n"
               "url = \"https://mcp.test.invalid/mcp\"\n"
               "credential = \"mcpkey\"\n"
               "connect_to = \"127.0.0.1:" + std::to_string(port) + "\"\n"
               "upstream_ca_file = \"" + dir + "/ca.crt\"\n"
               "[[mcp.rules]]\nserver = \"tools\"\ntool = \"echo_header\"\naction = \"allow\"\n"
               "[[mcp.rules]]\nserver = \"tools\"\ntool = \"echo\"\naction = \"deny\"\n"
               "[mcp.budget]\ntool_calls_per_worker = " + std::to_string(per_worker) + "\n");
}

std::unique_ptr<Background> start_daemon(const std::string& dir, int n) {
    RunOptions o;
    o.stderr_file = dir + "/daemon" + std::to_string(n) + ".stderr";
    auto d = std::make_unique<Background>(
        std::vector<std::string>{corral_bin(), "gateway", "--org", dir + "/org", "--threads", "1"}, o);
    REQUIRE_MESSAGE(d->wait_for_stdout("listening unix:", std::chrono::seconds(30)), read_file(o.stderr_file));
    return d;
}

std::vector<json> output_lines(const std::string& text) {
    std::vector<json> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(json::parse(line, nullptr, false));
    return out;
}

// One `corral run --gateway unix:DIR/gw.sock` whose box runs the client with
// `steps`: its result, the client's steps and run.json.
struct DaemonRun {
    Result raw;
    std::vector<json> steps;
    json record;
};
DaemonRun run_through_daemon(const std::string& dir, int n, const std::vector<std::string>& steps) {
    const std::string src = source_root();
    const std::string run_dir = dir + "/run" + std::to_string(n);
    std::vector<std::string> argv = {corral_bin(), "run", "--config", dir + "/org", "--worker", "w1", "--gateway",
                                     "unix:" + dir + "/gw.sock", "--rootfs", "host", "--run-dir", run_dir,
                                     "--state-dir", dir + "/runs", "--timeout", "120s", "--ro-bind",
                                     src + "/node_modules:/opt/mcp/node_modules", "--ro-bind",
                                     src + "/tests/mcp_e2e:/opt/mcp/client", "--", "/usr/bin/node",
                                     "/opt/mcp/client/client.mjs", "--url", "http://127.0.0.1:3129/mcp/tools"};
    argv.insert(argv.end(), steps.begin(), steps.end());
    RunOptions o;
    o.timeout = std::chrono::seconds(150);
    o.env["CORRAL_STATE_DIR"] = dir + "/runs";
    DaemonRun r;
    r.raw = run(argv, o);
    for (const auto& j : output_lines(r.raw.out))
        if (j.is_object() && j.contains("step")) r.steps.push_back(j);
    r.record = json::parse(read_file(run_dir + "/run.json"), nullptr, false);
    return r;
}

std::string error_message(const json& step) { return step["error"].value("message", ""); }

}  // namespace

TEST_CASE("corral gateway --org serves a run's MCP calls: policy, injection, counts, tool_calls_per_worker across runs and a restart") {
    TempDir t("corral-mcp-daemon");
    const std::string& dir = t.path;
    const std::string secret = "mcp-secret-" + random_hex(32);
    auto server = start_tls_test_server(dir, "corral mcp daemon test CA", secret, {"--calls-file", dir + "/calls.jsonl"});
    write_daemon_org(dir, server.port, 3);
    auto daemon = start_daemon(dir, 1);
    const std::string socket_mode = "unix:" + dir + "/gw.sock";

    // Run 1: the list shows the allowed tool only; the allowed call reaches
    // the server with the real credential, the denied one never does.
    DaemonRun r1 = run_through_daemon(dir, 1, {"--list", "--call", "echo_header", R"({"name":"authorization"})",
                                               "--call", "echo", R"({"text":"hi"})"});
    INFO("run 1: exit " << r1.raw.exit_code << "\nstdout:\n" << r1.raw.out << "\nstderr:\n" << r1.raw.err);
    REQUIRE(r1.raw.exit_code == 0);
    REQUIRE(r1.steps.size() == 3);
    std::vector<std::string> listed;
    for (const auto& tool : r1.steps[0].value("tools", json::array())) listed.push_back(tool.value("name", ""));
    CHECK(listed == std::vector<std::string>{"echo_header"});
    CHECK(r1.steps[1].contains("result"));
    CHECK_FALSE(r1.steps[1].contains("error"));
    CHECK(r1.steps[2]["error"]["code"] == -32001);
    CHECK(error_message(r1.steps[2]).find("refused by corral: tool echo is denied for this worker; do not retry it "
                                          "by other means") != std::string::npos);
    auto calls = output_lines(read_file(dir + "/calls.jsonl"));
    REQUIRE(calls.size() == 1);
    CHECK(calls[0]["name"] == "echo_header");
    CHECK(calls[0]["authorization"] == "Bearer " + secret);
    CHECK(r1.raw.out.find(secret) == std::string::npos);
    // The counts are the daemon's, asked for at the run's end.
    REQUIRE(r1.record.is_object());
    CHECK(r1.record["gateway"]["mode"] == socket_mode);
    CHECK(r1.record["tools"] == json{{"calls", 2}, {"allowed", 1}, {"refused", {{"tool_denied", 1}}},
                                     {"per_tool", {{"tools/echo", {{"calls", 1}, {"refused", 1}}},
                                                   {"tools/echo_header", {{"calls", 1}, {"refused", 0}}}}}});
    CHECK(r1.raw.err.find("; 2 tool calls, 1 refused; record ") != std::string::npos);
    // The daemon's ledger holds the run's decisions, under its identity.
    const std::string id1 = r1.record.value("identity", "");
    int allowed_lines = 0, refused_lines = 0;
    for (const auto& l : output_lines(read_file(dir + "/daemon-ledger.jsonl"))) {
        if (l.value("mode", "") != "mcp" || !l.contains("tool") || l["tool"].value("phase", "") != "decision") continue;
        if (l["tool"].value("method", "") != "tools/call") continue;
        CHECK(l["identity"] == id1);
        (l["decision"] == "allow" ? allowed_lines : refused_lines) += 1;
    }
    CHECK(allowed_lines == 1);
    CHECK(refused_lines == 1);
    // The first sights are in the worker's pins store (kept by the daemon as they happen).
    CHECK(read_file(dir + "/gwstate/mcp/w1/pins.json").find("\"tools/echo_header\"") != std::string::npos);

    // Run 2: two more calls; with run 1's one, the worker's budget of 3 is spent.
    DaemonRun r2 = run_through_daemon(dir, 2, {"--call", "echo_header", R"({"name":"authorization"})", "--call",
                                               "echo_header", R"({"name":"authorization"})"});
    INFO("run 2: exit " << r2.raw.exit_code << "\nstdout:\n" << r2.raw.out << "\nstderr:\n" << r2.raw.err);
    REQUIRE(r2.raw.exit_code == 0);
    REQUIRE(r2.steps.size() == 2);
    CHECK(r2.steps[0].contains("result"));
    CHECK(r2.steps[1].contains("result"));
    CHECK(r2.record["tools"]["allowed"] == 2);
    CHECK(output_lines(read_file(dir + "/calls.jsonl")).size() == 3);
    auto kept = json::parse(read_file(dir + "/gwstate/budgets/tool_calls/w1.json"), nullptr, false);
    CHECK(kept["tool_calls"] == 3);

    // The daemon restarts: the count goes on from the file, not from 0.
    daemon->signal(SIGTERM);
    REQUIRE(daemon->wait_exit(std::chrono::seconds(30)) == 0);
    daemon = start_daemon(dir, 2);
    DaemonRun r3 = run_through_daemon(dir, 3, {"--call", "echo_header", R"({"name":"authorization"})"});
    INFO("run 3: exit " << r3.raw.exit_code << "\nstdout:\n" << r3.raw.out << "\nstderr:\n" << r3.raw.err);
    REQUIRE(r3.steps.size() == 1);
    CHECK(r3.steps[0]["error"]["code"] == -32001);
    CHECK(error_message(r3.steps[0]).find("refused by corral: the tool-call budget of worker w1 across its runs (3 "
                                          "calls) is spent; do not retry ([mcp.budget] tool_calls_per_worker = 3, 0 "
                                          "left)") != std::string::npos);
    CHECK(output_lines(read_file(dir + "/calls.jsonl")).size() == 3);  // never forwarded
    CHECK(r3.raw.err.find("refused POST mcp.test.invalid:443 (budget_exhausted, 200): a budget is spent: the "
                          "grant's requests, or for an MCP call ([mcp.budget]) the tool calls") != std::string::npos);
    CHECK(r3.record["tools"] == json{{"calls", 1}, {"allowed", 0}, {"refused", {{"budget_exhausted", 1}}},
                                     {"per_tool", {{"tools/echo_header", {{"calls", 1}, {"refused", 1}}}}}});

    // `corral budget show|reset` shows and resets it; the next run's call goes through.
    auto show = run({corral_bin(), "budget", "show", "w1", "--gateway", socket_mode});
    CHECK_MESSAGE(show.exit_code == 0, show.err);
    auto shown = json::parse(show.out, nullptr, false);
    CHECK(shown["tool_calls"]["used"] == 3);
    CHECK(shown["tool_calls"]["remaining"] == 0);
    CHECK(shown["tool_calls"]["file"] == dir + "/gwstate/budgets/tool_calls/w1.json");
    auto reset = run({corral_bin(), "budget", "reset", "w1", "--gateway", socket_mode});
    CHECK_MESSAGE(reset.exit_code == 0, reset.err);
    CHECK(json::parse(reset.out, nullptr, false)["tool_calls"]["used"] == 0);
    DaemonRun r4 = run_through_daemon(dir, 4, {"--call", "echo_header", R"({"name":"authorization"})"});
    REQUIRE(r4.steps.size() == 1);
    CHECK(r4.steps[0].contains("result"));
    CHECK(output_lines(read_file(dir + "/calls.jsonl")).size() == 4);
    daemon->signal(SIGTERM);
    CHECK(daemon->wait_exit(std::chrono::seconds(30)) == 0);
}

TEST_CASE("corral gateway --org: a tool quarantined in one run, trusted with `corral mcp trust` while the daemon runs, "
          "is served to the next run") {
    TempDir t("corral-mcp-daemon-trust");
    const std::string& dir = t.path;
    const std::string drift = dir + "/drift";
    auto server = start_tls_test_server(dir, "corral mcp daemon trust test CA", "s-" + random_hex(16), {"--drift-file", drift});
    write_daemon_org(dir, server.port, 100);
    write_file(dir + "/org/workers/w1/worker.toml", read_file(dir + "/org/workers/w1/worker.toml") +
                   "[[mcp.rules]]\nserver = \"tools\"\ntool = \"drifting\"\naction = \"allow\"\n");
    auto daemon = start_daemon(dir, 1);
    const std::vector<std::string> steps = {"--list", "--call", "drifting", "{}"};

    DaemonRun r1 = run_through_daemon(dir, 1, steps);
    INFO("run 1: " << r1.raw.out << r1.raw.err);
    REQUIRE(r1.steps.size() == 2);
    CHECK_FALSE(r1.steps[1].contains("error"));

    write_file(drift, "");  // the server changes the tool's description
    DaemonRun r2 = run_through_daemon(dir, 2, steps);
    INFO("run 2: " << r2.raw.out << r2.raw.err);
    REQUIRE(r2.steps.size() == 2);
    CHECK(error_message(r2.steps[1]).find("tool drifting changed its description since it was trusted and is "
                                          "quarantined") != std::string::npos);
    // The daemon kept the quarantine in the store as it happened; trust the digest seen.
    auto ls = run({corral_bin(), "mcp", "ls", "--json", "--config", dir + "/org"});
    REQUIRE_MESSAGE(ls.exit_code == 0, ls.err);
    std::string fresh;
    const json doc = json::parse(ls.out, nullptr, false);
    for (const auto& w : doc.value("workers", json::array()))
        for (const auto& s : w["servers"])
            for (const auto& tool : s["tools"])
                if (tool["name"] == "drifting" && tool["quarantined"].is_object())
                    fresh = tool["quarantined"].value("digest", "");
    REQUIRE(fresh.rfind("sha256:", 0) == 0);
    auto trust = run({corral_bin(), "mcp", "trust", "--worker", "w1", "tools/drifting", fresh, "--config", dir + "/org"});
    REQUIRE_MESSAGE(trust.exit_code == 0, trust.err);

    // Run 3, the same daemon (not restarted): served again.
    DaemonRun r3 = run_through_daemon(dir, 3, steps);
    INFO("run 3: " << r3.raw.out << r3.raw.err);
    REQUIRE(r3.steps.size() == 2);
    std::vector<std::string> listed;
    for (const auto& tool : r3.steps[0].value("tools", json::array())) listed.push_back(tool.value("name", ""));
    CHECK(std::find(listed.begin(), listed.end(), "drifting") != listed.end());
    CHECK_FALSE(r3.steps[1].contains("error"));
    daemon->signal(SIGTERM);
    CHECK(daemon->wait_exit(std::chrono::seconds(30)) == 0);
}

TEST_CASE("corral run --gateway unix:PATH: a daemon that serves the worker no MCP servers refuses the run before it starts") {
    TempDir t("corral-mcp-daemon-stale");
    const std::string& dir = t.path;
    ::chmod(dir.c_str(), 0711);
    write_daemon_org(dir, 9, 3);
    write_file(dir + "/mcp.secret", "unused\n", 0600);
    const std::string with_mcp = read_file(dir + "/org/workers/w1/worker.toml");
    write_file(dir + "/org/workers/w1/worker.toml", "agent = \"none\"\n");
    auto daemon = start_daemon(dir, 1);
    write_file(dir + "/org/workers/w1/worker.toml", with_mcp);  // written after the daemon started
    DaemonRun r = run_through_daemon(dir, 1, {"--list"});
    CHECK(r.raw.exit_code == 125);
    CHECK(r.steps.empty());
    CHECK_MESSAGE(r.raw.err.find("--gateway unix:" + dir + "/gw.sock: the daemon serves worker w1 no MCP servers") !=
                      std::string::npos, r.raw.err);
    daemon->signal(SIGTERM);
    CHECK(daemon->wait_exit(std::chrono::seconds(30)) == 0);
}

TEST_CASE("corral run --gateway unix:PATH refuses a worker's stdio MCP server before anything starts, saying why") {
    TempDir t("corral-mcp-daemon-stdio");
    const std::string& dir = t.path;
    write_daemon_org(dir, 9, 3);
    write_file(dir + "/mcp.secret", "unused\n", 0600);
    write_file(dir + "/org/workers/w1/worker.toml",
               read_file(dir + "/org/workers/w1/worker.toml") +
                   "[mcp.servers.files]\ncommand = [\"/usr/bin/node\", \"/opt/fs.js\"]\n");
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = dir + "/runs";
    auto r = run({corral_bin(), "run", "--config", dir + "/org", "--worker", "w1", "--gateway",
                  "unix:" + dir + "/no-daemon.sock", "--rootfs", "host", "--run-dir", dir + "/run", "--state-dir",
                  dir + "/runs", "--", "/bin/sh", "-c", "echo started"},
                 o);
    CHECK(r.exit_code == 125);
    CHECK(r.out.find("started") == std::string::npos);
    CHECK_MESSAGE(r.err.find("corral run: --gateway unix:" + dir + "/no-daemon.sock: worker w1: MCP server files (" +
                             dir + "/org/workers/w1/worker.toml:") != std::string::npos, r.err);
    CHECK(r.err.find(") is a stdio server, and the gateway daemon serves remote Streamable HTTP servers only") !=
          std::string::npos);
}

}  // namespace corral::test::mcp_e2e
