// tests/mcp_e2e/test_pins_across_runs.cpp — tool pins that outlive a run,
// through real `corral run`s of a worker whose remote MCP server is our test
// server: run 1 trusts `drifting` on first sight and keeps it in the
// worker's pins store; the server then changes its description (its
// --drift-file), and run 2 hides it and refuses its call with corral's
// sentence, the store recording the quarantine; `corral mcp ls` shows it,
// `corral mcp trust` refuses a digest that is not the one seen and accepts
// the one seen; run 3 serves the tool again. Root only (test_run_main.cpp).
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
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

void write_pinning_org(const std::string& dir, int port) {
    fs::create_directories(dir + "/org/workers/w1");
    write_file(dir + "/org/org.toml",
               "[engine]\nagent = \"claude\"\n"
               "[gateway]\nstate_dir = \"" + dir + "/gwstate\"\n");
    write_file(dir + "/org/workers/w1/worker.toml",
               "agent = \"none\"\n"
               "[mcp.servers.tools]\n"
               "url = \"https://mcp.test.invalid/mcp\"\n"
               "connect_to = \"127.0.0.1:" + std::to_string(port) + "\"\n"
               "upstream_ca_file = \"" + dir + "/ca.crt\"\n"
               "[[mcp.rules]]\nserver = \"tools\"\ntool = \"drifting\"\naction = \"allow\"\n");
}

// One `corral run` whose box lists the tools and calls `drifting`: the
// client's two steps (list, call), or fewer when the run failed.
struct PinRun {
    Result raw;
    std::vector<json> steps;
};
PinRun run_listing(const std::string& dir, int n) {
    const std::string src = source_root();
    PinRun r;
    RunOptions o;
    o.timeout = std::chrono::seconds(150);
    o.env["CORRAL_STATE_DIR"] = dir + "/runs";
    r.raw = run({corral_bin(), "run", "--config", dir + "/org", "--worker", "w1", "--rootfs", "host", "--run-dir",
                 dir + "/run" + std::to_string(n), "--state-dir", dir + "/runs", "--timeout", "120s", "--ro-bind",
                 src + "/node_modules:/opt/mcp/node_modules", "--ro-bind", src + "/tests/mcp_e2e:/opt/mcp/client", "--",
                 "/usr/bin/node", "/opt/mcp/client/client.mjs", "--url", "http://127.0.0.1:3129/mcp/tools", "--list", "--call",
                 "drifting", "{}"},
                o);
    std::istringstream in(r.raw.out);
    for (std::string line; std::getline(in, line);) {
        json j = json::parse(line, nullptr, false);
        if (j.is_object() && j.contains("step")) r.steps.push_back(j);
    }
    return r;
}

std::vector<std::string> listed_names(const json& list_step) {
    std::vector<std::string> out;
    for (const auto& t : list_step.value("tools", json::array())) out.push_back(t.value("name", ""));
    return out;
}

Result corral_mcp(const std::string& dir, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {corral_bin(), "mcp"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--config", dir + "/org"});
    return run(argv);
}

// The store's entry of tools/drifting, as `corral mcp ls --json` shows it.
json drifting_entry(const std::string& dir) {
    Result ls = corral_mcp(dir, {"ls", "--json"});
    REQUIRE_MESSAGE(ls.exit_code == 0, ls.err);
    json doc = json::parse(ls.out, nullptr, false);
    REQUIRE(doc.is_object());
    for (const auto& w : doc["workers"])
        for (const auto& s : w["servers"])
            for (const auto& t : s["tools"])
                if (w["name"] == "w1" && s["name"] == "tools" && t["name"] == "drifting") return t;
    return nullptr;
}

}  // namespace

TEST_CASE("corral run: a tool pinned in one run is quarantined in the next when its description changed, "
          "until `corral mcp trust`") {
    TempDir t("corral-mcp-pins");
    const std::string& dir = t.path;
    const std::string drift = dir + "/drift";
    auto server = start_tls_test_server(dir, "corral mcp pins test CA", "", {"--drift-file", drift});
    write_pinning_org(dir, server.port);

    // Run 1: first sight, trusted and kept.
    PinRun r1 = run_listing(dir, 1);
    INFO("run 1 stdout:\n" << r1.raw.out << "\nstderr:\n" << r1.raw.err);
    REQUIRE(r1.raw.exit_code == 0);
    REQUIRE(r1.steps.size() == 2);
    CHECK(listed_names(r1.steps[0]) == std::vector<std::string>{"drifting"});
    CHECK_FALSE(r1.steps[1].contains("error"));
    struct stat st {};
    REQUIRE(::stat((dir + "/gwstate/mcp/w1/pins.json").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    REQUIRE(::stat((dir + "/gwstate/mcp/w1").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    json first = drifting_entry(dir);
    REQUIRE(first.is_object());
    const std::string trusted = first.value("trusted", "");
    CHECK(trusted.rfind("sha256:", 0) == 0);
    CHECK(first["quarantined"].is_null());
    CHECK(first.value("source", "") == "store");

    // The server changes the description: run 2 quarantines the tool.
    write_file(drift, "");
    PinRun r2 = run_listing(dir, 2);
    INFO("run 2 stdout:\n" << r2.raw.out << "\nstderr:\n" << r2.raw.err);
    REQUIRE(r2.raw.exit_code == 0);
    REQUIRE(r2.steps.size() == 2);
    CHECK(listed_names(r2.steps[0]).empty());
    REQUIRE(r2.steps[1].contains("error"));
    CHECK(r2.steps[1]["error"]["message"].get<std::string>().find(
              "refused by corral: tool drifting changed its description since it was trusted and is quarantined "
              "until the operator accepts it") != std::string::npos);
    json quarantined = drifting_entry(dir);
    REQUIRE(quarantined["quarantined"].is_object());
    CHECK(quarantined.value("trusted", "") == trusted);
    const std::string fresh = quarantined["quarantined"].value("digest", "");
    CHECK(fresh.rfind("sha256:", 0) == 0);
    CHECK(fresh != trusted);
    Result table = corral_mcp(dir, {"ls"});
    CHECK(table.exit_code == 0);
    CHECK(table.out.find("QUARANTINED: new " + fresh) != std::string::npos);

    // trust: a digest that is not the one seen is refused, naming both.
    Result wrong = corral_mcp(dir, {"trust", "tools/drifting", trusted});
    CHECK(wrong.exit_code == 1);
    CHECK(wrong.err.find("was quarantined with the new digest " + fresh + ", not " + trusted) != std::string::npos);
    Result usage = corral_mcp(dir, {"trust", "tools/drifting"});
    CHECK(usage.exit_code == 2);
    Result ok = corral_mcp(dir, {"trust", "--worker", "w1", "tools/drifting", fresh});
    CHECK_MESSAGE(ok.exit_code == 0, ok.err);
    json accepted = drifting_entry(dir);
    CHECK(accepted.value("trusted", "") == fresh);
    CHECK(accepted["quarantined"].is_null());

    // Run 3 serves it again.
    PinRun r3 = run_listing(dir, 3);
    INFO("run 3 stdout:\n" << r3.raw.out << "\nstderr:\n" << r3.raw.err);
    REQUIRE(r3.raw.exit_code == 0);
    REQUIRE(r3.steps.size() == 2);
    CHECK(listed_names(r3.steps[0]) == std::vector<std::string>{"drifting"});
    CHECK_FALSE(r3.steps[1].contains("error"));
}

}  // namespace corral::test::mcp_e2e
