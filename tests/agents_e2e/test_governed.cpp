// The three real CLIs, unmodified, finishing a prompt while a budget is in
// force on their worker (issue 37): under a budget every request is
// classified by route, its body read strictly (duplicate or case-variant
// keys refused), its method and header names checked. What the CLIs really
// send must pass all of it, metered; only codex's WebSocket is refused (426,
// by design), after which it streams over HTTPS.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "agents/agent_profile.hpp"
#include "tests/agents_e2e/checks.hpp"
#include "tests/agents_e2e/world.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace corral;
using namespace corral::test::agents;
using ::corral::agents::AgentKind;

namespace {

const WorkerSpec& governed_worker(const std::string& name) {
    for (const auto& s : workers())
        if (s.name == name) return s;
    throw std::runtime_error("no worker " + name);
}

void governed_layer(const WorkerSpec& spec) {
    auto& w = world();
    const std::string dir = w.dir + "/org-governed-" + spec.name;
    fs::remove_all(dir);
    fs::copy(org_dir(w, Org::primary), dir, fs::copy_options::recursive);
    const std::string worker_toml = dir + "/workers/" + spec.name + "/worker.toml";
    test::write_file(worker_toml, test::read_file(worker_toml) + "\n[budget]\nrequests = 200\n");
    const std::string run_dir = w.dir + "/run-governed-" + spec.name;
    const auto host = model_host(spec.kind, Org::primary);
    const auto before = standin_seen().size();
    test::RunOptions o;
    o.timeout = std::chrono::seconds(240);
    o.env["CORRAL_STATE_DIR"] = w.dir + "/corral-state";
    auto r = test::run({test::corral_bin(), "run", "--config", dir, "--worker", spec.name, "--run-dir", run_dir,
                        "--prompt", "Reply with exactly DONE"},
                       o);
    const std::string record_text = test::read_file(run_dir + "/run.json");
    INFO("exit ", r.exit_code, "\nstdout:\n", r.out, "\nstderr:\n", r.err, "\nrun.json:\n", record_text);
    CHECK(r.exit_code == 0);
    CHECK(finished_with_done(spec.kind, r.out));
    REQUIRE_FALSE(record_text.empty());
    const json record = json::parse(record_text);
    std::size_t metered = 0, websocket = 0, other_refusals = 0;
    for (const auto& l : ledger_lines(run_dir + "/ledger.jsonl")) {
        INFO(l.dump());
        const std::string reason = l.value("reason", "");
        if (reason == "model_websocket") ++websocket;
        else if (l.value("decision", "") != "allow") ++other_refusals;
        metered += l.contains("metering") && reason.empty();
    }
    CHECK(other_refusals == 0);
    CHECK(metered > 0);
    if (spec.kind != AgentKind::codex) CHECK(websocket == 0);
    CHECK(record["gateway"].value("refusals", -1) == static_cast<int>(websocket));
    const json& model = record["gateway"]["model"];
    CHECK(model.value("budget_refusals", 1ull) == websocket);  // codex's 426s are counted there
    if (spec.kind != AgentKind::codex) check_model_totals(model, seen_since(before, host, true));
    std::size_t answered = 0;
    for (const auto& s : seen_since(before, host, true)) answered += s.contains("usage");
    CHECK(model.value("requests", 0ull) == answered);
}

}  // namespace

TEST_CASE("run under a budget: claude's real requests are all classified, read strictly and metered") {
    governed_layer(governed_worker("claude"));
}
TEST_CASE("run under a budget: codex's real requests are all classified, read strictly and metered") {
    governed_layer(governed_worker("codex"));
}
TEST_CASE("run under a budget: pi's real requests are all classified, read strictly and metered") {
    governed_layer(governed_worker("pi"));
}
