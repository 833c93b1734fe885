// Governed tools with the real CLIs (issues 29 and 30): claude and codex in a
// `corral run` whose worker has a remote MCP server (tests/mcp_e2e's
// test_server.mjs over TLS on loopback, its own test CA, reached through the
// server's connect_to), driven by the model stand-in scripted to call the
// server's tools (standin.js POST /script):
//   1. echo_header {"name": "authorization"}: allowed; reaches the server with
//      the server's real credential injected; the header comes back in the
//      result, so corral must mask it before the CLI sees it;
//   2. echo {"text": "ok, through"}: allowed by an argument constraint;
//   3. echo {"text": "forbidden"}: the same tool, refused by the constraint,
//      never reaches the server; the CLI hands corral's sentence back to the
//      model.
// The same with the server as a stdio server corral starts in a box of its
// own (test_server.mjs --stdio, its secret in its environment from
// secret_env): the first call is echo_env of that variable instead, and the
// server writes each call it gets to its stderr, which corral keeps in
// RUN_DIR/mcp-tools.stderr.log.
// Checked: the model saw only the tools the policy may allow (of the server's
// eight), every call's effect at the server, what the CLI handed back to the
// model, the CLI finished, the secret is nowhere the box could see it, and
// the run's ledger holds a decision line for every call.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "agents/agent_profile.hpp"
#include "tests/agents_e2e/checks.hpp"
#include "tests/agents_e2e/layers.hpp"
#include "tests/agents_e2e/world.hpp"
#include "tests/mcp_e2e/harness.hpp"
#include "tests/support/test_pki.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace corral;
using namespace corral::test::agents;
using ::corral::agents::AgentKind;

namespace {

enum class Transport { http, stdio };

// The primary organisation with one more credential and, on the worker, the
// test server (remote over TLS, or stdio in its own box) and its rules
// (`rules`, or by default: the first tool allowed, echo of "ok*" only).
std::string write_mcp_org(const World& w, const WorkerSpec& spec, const std::string& dir, int port, Transport t,
                          const std::string& rules = "") {
    const std::string org = dir + "/org";
    fs::copy(org_dir(w, Org::primary), org, fs::copy_options::recursive);
    test::write_file(org + "/org.toml", test::read_file(org + "/org.toml") +
                                            "\n[credentials.mcpkey]\nkind = \"oauth_token\"\nfile = \"" + dir +
                                            "/mcp.secret\"\n");
    const std::string worker = org + "/workers/" + spec.name + "/worker.toml";
    const std::string server =
        t == Transport::http
            ? "url = \"https://mcp.test.invalid/mcp\"\n"
              "credential = \"mcpkey\"\n"
              "connect_to = \"127.0.0.1:" + std::to_string(port) + "\"\n"
              "upstream_ca_file = \"" + dir + "/ca.crt\"\n"
            : "command = [\"/usr/bin/node\", \"/opt/mcp/client/test_server.mjs\", \"--stdio\", \"--calls-file\", "
              "\"-\"]\n"
              "secret_env = { CORRAL_MCP_TEST_SECRET = \"mcpkey\" }\n";
    const std::string first_tool = t == Transport::http ? "echo_header" : "echo_env";
    const std::string default_rules =
        "[[mcp.rules]]\nserver = \"tools\"\ntool = \"" + first_tool + "\"\naction = \"allow\"\n"
        "[[mcp.rules]]\nserver = \"tools\"\ntool = \"echo\"\naction = \"allow\"\n"
        "when = [ { pointer = \"/text\", glob = \"ok*\" } ]\n";
    test::write_file(worker, test::read_file(worker) + "\n[mcp.servers.tools]\n" + server +
                                 (rules.empty() ? default_rules : rules));
    return org;
}

void script_tool_calls(const World& w, Transport t) {
    const json first = t == Transport::http ? json{{"tool", "echo_header"}, {"arguments", {{"name", "authorization"}}}}
                                            : json{{"tool", "echo_env"}, {"arguments", {{"name", "CORRAL_MCP_TEST_SECRET"}}}};
    post_script(w, {{"calls",
                     {first,
                      {{"tool", "echo"}, {"arguments", {{"text", "ok, through"}}}},
                      {{"tool", "echo"}, {"arguments", {{"text", "forbidden"}}}}}}});
}

// The MCP tool names the model was offered (a name with "tools__" in it,
// however the CLI prefixes it), and the tool results the CLI carried back.
void model_side(const std::vector<json>& seen, std::set<std::string>& offered, std::vector<std::string>& results) {
    for (const auto& s : seen) {
        for (const auto& t : s.value("tools", json::array()))
            if (t.get<std::string>().find("tools__") != std::string::npos) offered.insert(t.get<std::string>());
        for (const auto& r : s.value("tool_results", json::array())) results.push_back(r.get<std::string>());
    }
}

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void mcp_layer(const WorkerSpec& spec, Transport transport) {
    // The same npm install brings the SDK as the agents' `ws`: missing, it is a failure here.
    const std::string missing = test::mcp_e2e::missing_prerequisite();
    REQUIRE_MESSAGE(missing.empty(), missing);
    auto& w = world();
    const bool stdio = transport == Transport::stdio;
    const std::string dir = w.dir + "/mcp-" + spec.name + (stdio ? "-stdio" : "");
    fs::remove_all(dir);
    fs::create_directories(dir);
    test::make_test_ca(dir, "corral agents MCP test CA");
    test::make_test_leaf(dir, "mcp", "DNS:mcp.test.invalid");
    const std::string secret = "mcp-secret-" + test::random_hex(32);
    test::write_file(dir + "/mcp.secret", secret + "\n", 0600);
    std::optional<test::mcp_e2e::HttpServer> server;
    if (!stdio)
        server.emplace(test::mcp_e2e::start_test_server(
            {"--tls-cert", dir + "/mcp.crt", "--tls-key", dir + "/mcp.key", "--calls-file", dir + "/calls.jsonl"}));
    const std::string org = write_mcp_org(w, spec, dir, server ? server->port : 0, transport);
    script_tool_calls(w, transport);
    const std::string run_dir = dir + "/run";
    const auto host = model_host(spec.kind, Org::primary);
    const auto before = standin_seen().size();
    test::RunOptions o;
    o.timeout = std::chrono::seconds(240);
    o.env["CORRAL_STATE_DIR"] = w.dir + "/corral-state";
    std::vector<std::string> argv = {test::corral_bin(), "run", "--config", org, "--worker", spec.name, "--run-dir",
                                     run_dir, "--prompt", "Call the tools you are told to, then reply DONE"};
    if (stdio) {   // the stdio server's program and its SDK, read-only in its box (and the agent's)
        const std::string src = test::source_root();
        argv.insert(argv.begin() + 2, {"--ro-bind", src + "/node_modules:/opt/mcp/node_modules", "--ro-bind",
                                       src + "/tests/mcp_e2e:/opt/mcp/client"});
    }
    auto r = test::run(argv, o);
    // The calls as the server got them: its calls file, or (stdio) its stderr log's JSON lines.
    std::string calls;
    for (const auto& line : test::lines(test::read_file(stdio ? run_dir + "/mcp-tools.stderr.log" : dir + "/calls.jsonl")))
        if (line.rfind("{", 0) == 0) calls += line + "\n";
    INFO("exit ", r.exit_code, "\nstdout:\n", r.out, "\nstderr:\n", r.err, "\ncalls at the server:\n", calls);
    CHECK(r.exit_code == 0);
    CHECK(finished_with_done(spec.kind, r.out));

    std::set<std::string> offered;
    std::vector<std::string> results;
    const auto seen = seen_since(before, host, true);
    model_side(seen, offered, results);
    json model_requests = json::array();
    for (const auto& s : seen)
        model_requests.push_back({{"method", s.value("method", "")}, {"url", s.value("url", "")},
                                  {"tools", s.value("tools", json::array())}});
    INFO("offered: ", json(offered).dump(), "\nresults:\n", json(results).dump(1),
         "\nmodel requests:\n", model_requests.dump());
    CHECK(offered.size() == 2);  // of the server's eight tools, the two a rule may allow
    const std::string first_tool = stdio ? "echo_env" : "echo_header";
    for (const auto& name : offered) CHECK((ends_with(name, "__" + first_tool) || ends_with(name, "__echo")));

    // At the server: the two allowed calls, the first with the real credential.
    std::vector<json> at_server;
    for (const auto& line : test::lines(calls))
        if (!line.empty()) at_server.push_back(json::parse(line));
    REQUIRE(at_server.size() == 2);
    CHECK(at_server[0]["name"] == first_tool);
    if (!stdio) CHECK(at_server[0]["authorization"] == "Bearer " + secret);
    CHECK(at_server[1]["name"] == "echo");
    CHECK(at_server[1]["arguments"]["text"] == "ok, through");
    CHECK(calls.find("forbidden") == std::string::npos);

    // What the CLI handed back to the model: the header masked, the echo, and
    // corral's sentence for the refused call.
    REQUIRE(results.size() == 3);
    // The secret came back (the header, or the server's own variable), masked.
    CHECK(results[0].find(stdio ? std::string(secret.size(), '*') : std::string("Bearer")) != std::string::npos);
    CHECK(results[1].find("ok, through") != std::string::npos);
    CHECK(results[2].find("refused by corral") != std::string::npos);
    for (const auto& text : results) CHECK(text.find(secret) == std::string::npos);
    CHECK(r.out.find(secret) == std::string::npos);
    CHECK(test::read_file(run_dir + "/stdout.jsonl").find(secret) == std::string::npos);

    // The ledger: a decision line per call (and the lists), the refusal among them.
    std::size_t allowed_calls = 0, refused_calls = 0;
    for (const auto& l : ledger_lines(run_dir + "/ledger.jsonl")) {
        if (l.value("mode", "") != "mcp" || !l.contains("tool")) continue;
        const json& t = l["tool"];
        if (t.value("phase", "") != "decision" || t.value("method", "") != "tools/call") continue;
        if (l.value("decision", "") == "allow") ++allowed_calls;
        else if (l.value("reason", "") == "argument_denied") ++refused_calls;
    }
    CHECK(allowed_calls == 2);
    CHECK(refused_calls == 1);
}

// Approves, from a second process on the host (`corral approve`), the one
// pending request whose arguments hold `text`; nothing else. Polls until
// it did or `stop` is set (a hang guard of 120 s).
void approve_when_asked(const std::string& state_dir, const std::string& text, const std::atomic<bool>& stop,
                        std::string& approved_id) {
    for (int i = 0; i < 1200 && !stop; ++i) {
        auto list = test::run({test::corral_bin(), "approvals", "--json", "--state-dir", state_dir});
        for (const auto& l : test::lines(list.out)) {
            if (l.empty()) continue;
            json e = json::parse(l);
            if (e.value("arguments", "").find(text) == std::string::npos) continue;
            if (test::run({test::corral_bin(), "approve", e["id"], "--state-dir", state_dir}).exit_code == 0)
                approved_id = e["id"];
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

// Issue 30 with a real CLI under --prompt: echo is under approval rules
// (each rule's own approval_timeout: 120 s for "approve me", so a loaded
// machine cannot turn the approval into a race; 3 s for any other text).
// The first call ("approve me") is approved from a second process and
// reaches the server once; the second ("nobody answers", another entry)
// is never decided: it times out, never reaches the server, and the CLI
// carries corral's sentence back without calling again. Then the agent
// reports needs_review through corral's own report_outcome, which run.json
// keeps beside the host's evidence.
void approval_layer(const WorkerSpec& spec) {
    const std::string missing = test::mcp_e2e::missing_prerequisite();
    REQUIRE_MESSAGE(missing.empty(), missing);
    auto& w = world();
    const std::string dir = w.dir + "/approval-" + spec.name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    test::make_test_ca(dir, "corral agents MCP test CA");
    test::make_test_leaf(dir, "mcp", "DNS:mcp.test.invalid");
    test::write_file(dir + "/mcp.secret", "mcp-secret-" + test::random_hex(32) + "\n", 0600);
    auto server = test::mcp_e2e::start_test_server(
        {"--tls-cert", dir + "/mcp.crt", "--tls-key", dir + "/mcp.key", "--calls-file", dir + "/calls.jsonl"});
    const std::string org = write_mcp_org(w, spec, dir, server.port, Transport::http,
                                          "[[mcp.rules]]\nserver = \"tools\"\ntool = \"echo\"\naction = \"approval\"\n"
                                          "approval_timeout = \"120s\"\nwhen = [ { pointer = \"/text\", exact = \"approve me\" } ]\n"
                                          "[[mcp.rules]]\nserver = \"tools\"\ntool = \"echo\"\naction = \"approval\"\n"
                                          "approval_timeout = \"3s\"\n");
    post_script(w, {{"calls",
                     {{{"tool", "echo"}, {"arguments", {{"text", "approve me"}}}},
                      {{"tool", "echo"}, {"arguments", {{"text", "nobody answers"}}}},
                      {{"tool", "report_outcome"},
                       {"arguments", {{"status", "needs_review"}, {"summary", "one call was not approved"}}}}}}});
    const std::string run_dir = dir + "/run";
    const std::string state_dir = w.dir + "/corral-state";
    const auto before = standin_seen().size();
    std::atomic<bool> stop{false};
    std::string approved_id;
    std::thread approver([&] { approve_when_asked(state_dir, "approve me", stop, approved_id); });
    test::RunOptions o;
    o.timeout = std::chrono::seconds(240);
    o.env["CORRAL_STATE_DIR"] = state_dir;
    auto r = test::run({test::corral_bin(), "run", "--config", org, "--worker", spec.name, "--run-dir", run_dir,
                        "--prompt", "Call the tools you are told to, then reply DONE"}, o);
    stop = true;
    approver.join();
    const std::string calls = test::read_file(dir + "/calls.jsonl");
    INFO("exit ", r.exit_code, "\nstdout:\n", r.out, "\nstderr:\n", r.err, "\ncalls at the server:\n", calls);
    CHECK(r.exit_code == 0);
    CHECK(finished_with_done(spec.kind, r.out));
    CHECK(!approved_id.empty());

    // At the server: the approved call, once; never the one nobody approved.
    std::vector<json> at_server;
    for (const auto& line : test::lines(calls))
        if (line.rfind("{", 0) == 0) at_server.push_back(json::parse(line));
    REQUIRE(at_server.size() == 1);
    CHECK(at_server[0]["arguments"]["text"] == "approve me");

    std::set<std::string> offered;
    std::vector<std::string> results;
    model_side(seen_since(before, model_host(spec.kind, Org::primary), true), offered, results);
    INFO("results:\n", json(results).dump(1));
    REQUIRE(results.size() == 3);
    CHECK(results[0].find("approve me") != std::string::npos);
    CHECK(results[1].find("no consent was given; do not try to reach the same result another way") != std::string::npos);
    CHECK(results[2].find("recorded: needs_review") != std::string::npos);

    // No retry: one decision line per scripted echo.
    std::size_t echo_decisions = 0;
    for (const auto& l : ledger_lines(run_dir + "/ledger.jsonl"))
        if (l.contains("tool") && l["tool"].value("phase", "") == "decision" && l["tool"].value("tool", "") == "echo")
            ++echo_decisions;
    CHECK(echo_decisions == 2);
    const json record = json::parse(test::read_file(run_dir + "/run.json"));
    CHECK(record["gateway"]["approvals"] ==
          json{{"requested", 2}, {"approved", 1}, {"denied", 0}, {"timed_out", 1}, {"cancelled", 0}});
    CHECK(record["attested"]["outcome"] == "needs_review");
    CHECK(record["attested"]["agent_report"] == json{{"status", "needs_review"}, {"summary", "one call was not approved"}});
    CHECK(r.err.find("; attested needs_review;") != std::string::npos);
}

}  // namespace

TEST_CASE("approval: claude's tool call waits for a person: approved, called once; timed out, never called; then it "
          "reports its outcome") {
    approval_layer(agents_e2e::spec_named("claude"));
}
TEST_CASE("approval: codex's tool call waits for a person: approved, called once; timed out, never called; then it "
          "reports its outcome") {
    approval_layer(agents_e2e::spec_named("codex"));
}

TEST_CASE("mcp: claude calls a worker's MCP tools inside corral run; only allowed tools, the secret injected and masked") {
    mcp_layer(agents_e2e::spec_named("claude"), Transport::http);
}
TEST_CASE("mcp: claude calls a stdio MCP server corral starts in a box of its own; its secret never in the agent's box") {
    mcp_layer(agents_e2e::spec_named("claude"), Transport::stdio);
}
TEST_CASE("mcp: codex calls a worker's MCP tools inside corral run; only allowed tools, the secret injected and masked") {
    mcp_layer(agents_e2e::spec_named("codex"), Transport::http);
}
TEST_CASE("mcp: codex calls a stdio MCP server corral starts in a box of its own; its secret never in the agent's box") {
    mcp_layer(agents_e2e::spec_named("codex"), Transport::stdio);
}
