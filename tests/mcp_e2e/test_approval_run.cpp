// tests/mcp_e2e/test_approval_run.cpp — a tool call that needs a person's
// approval (an `action = "approval"` rule, docs/approvals.md), end to end:
// the SDK client in the box calls it through the box's MCP listener, the
// call waits in the run's embedded gateway, and `corral approve` / `corral
// deny` run on the host as other processes decide. Checked: what the box's
// client got each time, that only the approved call reached the server (our
// test server records every call), the pending entry as `corral approvals`
// shows it, and the ledger's approval records. Root only (test_run_main.cpp).
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <atomic>
#include <filesystem>
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

const char* kApprovalBoxScript = R"SH(#!/bin/sh
echo "== client"
node /opt/mcp/client/client.mjs --url http://127.0.0.1:3129/mcp/tools --timeout 60000 --list \
  --call echo '{"text":"approved"}' --call echo '{"text":"denied"}'
echo "exit=$?"
echo "== ready"
while [ ! -e /workspace/done ]; do sleep 0.1; done
echo "== end"
)SH";

// An egress-only worker whose test server's echo needs a person's approval.
void write_approval_org(const std::string& dir, int port) {
    fs::create_directories(dir + "/org/workers/w1");
    write_file(dir + "/org/org.toml",
               "[gateway]\nstate_dir = \"" + dir + "/gwstate\"\n"
               "[credentials.mcpkey]\nkind = \"oauth_token\"\nfile = \"" + dir + "/mcp.secret\"\n");
    write_file(dir + "/org/workers/w1/worker.toml",
               "agent = \"none\"\n"
               "[mcp.servers.tools]\n"
               "url = \"https://mcp.test.invalid/mcp\"\n"
               "credential = \"mcpkey\"\n"
               "connect_to = \"127.0.0.1:" + std::to_string(port) + "\"\n"
               "upstream_ca_file = \"" + dir + "/ca.crt\"\n"
               "[[mcp.rules]]\nserver = \"tools\"\ntool = \"echo\"\naction = \"approval\"\n");
}

// What the host's approver did, checked after the run (doctest's checks
// belong to the test's thread).
struct Approver {
    std::vector<json> seen;     // each entry as `corral approvals --json` showed it
    std::vector<int> decided;   // each decision's exit status
};

// Approves the first tool call that waits, denies the second.
void approve_then_deny(const std::string& state_dir, Approver& a, const std::atomic<bool>& stop) {
    std::string last;
    while (!stop && a.seen.size() < 2) {
        auto r = run({corral_bin(), "approvals", "--json", "--state-dir", state_dir});
        for (const auto& e : json_lines(r.out)) {
            if (!e.is_object() || e.value("id", "") == last) continue;
            last = e["id"];
            a.seen.push_back(e);
            auto d = a.seen.size() == 1 ? run({corral_bin(), "approve", last, "--state-dir", state_dir})
                                        : run({corral_bin(), "deny", last, "--reason", "not this one", "--state-dir",
                                               state_dir});
            a.decided.push_back(d.exit_code);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

}  // namespace

TEST_CASE("corral run: a tool call under an approval rule waits for `corral approve`; a denied one never reaches the server") {
    TempDir t("corral-mcp-approval");
    const std::string& dir = t.path;
    const std::string secret = "mcp-secret-" + random_hex(32);
    auto server = start_tls_test_server(dir, "corral mcp approval test CA", secret, {"--calls-file", dir + "/calls.jsonl"});
    write_approval_org(dir, server.port);
    fs::create_directories(dir + "/ws");
    ::chmod((dir + "/ws").c_str(), 0777);
    write_file(dir + "/ws/box.sh", kApprovalBoxScript, 0755);

    Approver approver;
    std::atomic<bool> stop{false};
    std::thread host([&] { approve_then_deny(dir + "/runs", approver, stop); });
    BoxRun b = run_box(dir, secret, {});
    stop = true;
    host.join();
    INFO("corral's stdout:\n" << b.out << "\ncorral's stderr:\n" << b.corral_err);
    REQUIRE(b.exit_code == 0);

    REQUIRE(approver.seen.size() == 2);
    CHECK(approver.decided == std::vector<int>{0, 0});
    const json& first = approver.seen[0];
    CHECK(first["kind"] == "tool");
    CHECK(first["server"] == "tools");
    CHECK(first["tool"] == "echo");
    CHECK(first["arguments"] == "{\"text\":\"approved\"}");
    CHECK(first["arguments_digest"].get<std::string>().starts_with("sha256:"));
    CHECK(approver.seen[1]["digest"] != first["digest"]);  // other arguments: another request

    // The box: echo is listed (a person may let it through), the approved
    // call answered, the denied one refused with who and why.
    const std::vector<json> steps = client_steps(b.out);
    REQUIRE(steps.size() == 3);
    std::vector<std::string> listed;
    for (const auto& tool : steps[0].value("tools", json::array())) listed.push_back(tool.value("name", ""));
    CHECK(listed == std::vector<std::string>{"echo"});
    CHECK(steps[1].contains("result"));
    CHECK_FALSE(steps[1].contains("error"));
    CHECK(steps[2]["error"]["code"] == -32001);
    CHECK(steps[2]["error"]["message"].get<std::string>().find(
              "refused by corral: the call of tool echo of MCP server tools was denied by root (uid 0) (not this one); "
              "do not retry it by other means") != std::string::npos);

    // The server saw the approved call only, once.
    auto calls = json_lines(read_file(dir + "/calls.jsonl"));
    REQUIRE(calls.size() == 1);
    CHECK(calls[0]["name"] == "echo");

    std::vector<std::string> states;
    for (const auto& l : json_lines(read_file(b.run_dir + "/ledger.jsonl")))
        if (l.contains("approval") && l["approval"].value("phase", "") == "decided") states.push_back(l["approval"]["state"]);
    CHECK(states == std::vector<std::string>{"approved", "denied"});
    json record = json::parse(read_file(b.run_dir + "/run.json"), nullptr, false);
    CHECK(record["tools"]["refused"] == json{{"approval_denied", 1}});
    CHECK(record["gateway"]["approvals"]["approved"] == 1);
    CHECK(record["gateway"]["approvals"]["denied"] == 1);
}

}  // namespace corral::test::mcp_e2e
