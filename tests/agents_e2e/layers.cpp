// tests/agents_e2e/layers.cpp — the layers of layers.hpp.
#include "tests/agents_e2e/layers.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <functional>
#include <sstream>

namespace agents_e2e {

// The CLI on the host: unprivileged, clean environment, its own PID namespace
// (a killed CLI takes its children with it), the profile's sentinel home.
test::Result run_cli_on_host(const World& w, const WorkerSpec& spec, Org org, const GatewayDaemon& gw) {
    auto run_dir = w.dir + "/host-" + spec.name + "-" + org_name(org);
    fs::create_directories(run_dir);
    ::chmod(run_dir.c_str(), 0755);
    ::corral::agents::AgentInputs in;
    in.run_id = "host-" + spec.name;
    in.worker = spec.name;
    in.prompt = kPrompt;
    in.credential = credential_mode(spec.kind, org);
    in.chatgpt_account_id = w.chatgpt_account;
    in.home_rel = "home";
    in.home_in_box = run_dir + "/home";  // the CLI runs on the host: the in-box path is the host path
    auto p = ::corral::agents::make_agent_profile(spec.kind, in);
    ::corral::agents::write_agent_home(p, run_dir, std::make_pair(kNobody, kNobody));

    std::vector<std::string> cmd = {"unshare", "-p", "-f", "--kill-child", "setpriv", "--reuid",
                                    std::to_string(kNobody), "--regid", std::to_string(kNobody), "--clear-groups",
                                    "env", "-i", "PATH=/usr/bin:/bin", "LANG=C.UTF-8"};
    for (const auto& [k, v] : p.env) cmd.push_back(k + "=" + v);
    for (const auto& [k, v] : ::corral::agents::proxy_environment(gw.ca, static_cast<unsigned>(gw.port)))
        cmd.push_back(k + "=" + v);
    cmd.insert(cmd.end(), p.argv.begin(), p.argv.end());
    test::RunOptions o;
    o.timeout = std::chrono::seconds(150);
    o.cwd = run_dir + "/home";
    return test::run(cmd, o);
}

// curl through a gateway: the refresh endpoints must be refused 403 (and
// refused before any lookup: these names are in no grant and no hosts file).
void check_refresh_refused(const GatewayDaemon& gw) {
    for (const std::string url :
         {"https://platform.claude.com/v1/oauth/token", "https://auth.openai.com/oauth/token",
          "https://console.anthropic.com/v1/oauth/token"}) {
        CAPTURE(url);
        auto r = test::run({"curl", "-sS", "-o", "/dev/null", "-w", "%{http_connect} %{http_code}", "--max-time", "20",
                            "--proxy", "http://127.0.0.1:" + std::to_string(gw.port), "--cacert", gw.ca, "-X", "POST",
                            "-d", "grant_type=refresh_token", url});
        CHECK(r.out.rfind("403", 0) == 0);
    }
}

// The daemon serves each worker's model grant to that worker's runs only: the
// relay's identity (this worker) is refused another worker's model host, 403
// before any lookup or dial.
void check_other_workers_hosts_refused(const GatewayDaemon& gw, const WorkerSpec& spec, Org org) {
    for (const auto& other : workers()) {
        const auto host = model_host(other.kind, org);
        if (host == model_host(spec.kind, org)) continue;
        CAPTURE(host);
        auto r = test::run({"curl", "-sS", "-o", "/dev/null", "-w", "%{http_connect}", "--max-time", "20", "--proxy",
                            "http://127.0.0.1:" + std::to_string(gw.port), "--cacert", gw.ca, "https://" + host + "/"});
        CHECK(r.out == "403");
    }
    CHECK(ledger_has_line(gw.ledger, [&](const json& l) {
        return l.value("reason", "") == "not_granted" && l.value("identity", "").rfind(spec.name + "/", 0) == 0;
    }));
}

void gateway_layer(const WorkerSpec& spec, Org org) {
    auto& w = world();
    const std::string tag = spec.name + "-" + org_name(org);
    const auto host = model_host(spec.kind, org);
    GatewayDaemon gw(w, org, tag, spec.name + "/host-" + org_name(org));
    auto before = standin_seen().size();
    auto r = run_cli_on_host(w, spec, org, gw);
    INFO("exit ", r.exit_code, std::string(r.timed_out ? " (timed out)" : ""), "\nstdout:\n", r.out, "\nstderr:\n", r.err,
         "\ngateway stderr:\n", read_file(gw.stderr_path), "\nledger:\n", read_file(gw.ledger));
    CHECK(r.exit_code == 0);
    CHECK(finished_with_done(spec.kind, r.out));
    // The ledger line of the last exchange is written when it ends.
    ::usleep(300'000);
    auto seen = seen_since(before, host);
    check_credentials_seen(w, spec.kind, org, seen);
    if (spec.kind == AgentKind::codex && org == Org::primary) {
        bool discovered = false;
        for (const auto& s : seen) discovered |= s.value("url", "") == "/backend-api/wham/accounts/check";
        CHECK(discovered);
    }
    check_ledger(ledger_lines(gw.ledger), spec.name + "/", host, spec.kind == AgentKind::codex ? "openai" : "anthropic");
    if (spec.kind == AgentKind::codex) CHECK(relayed_websocket(ledger_lines(gw.ledger)));
    check_refresh_refused(gw);
    check_other_workers_hosts_refused(gw, spec, org);
    check_stayed_on_loopback();
    for (const auto& s : standin_seen()) CHECK(s.value("url", "").find("oauth/token") == std::string::npos);
    auto out = r.out + r.err + read_file(gw.stderr_path);
    for (const auto& secret : {w.anthropic_key, w.anthropic_oauth, w.openai_token, w.openai_key})
        CHECK(out.find(secret) == std::string::npos);
}

// `corral run --config ORG --worker W --prompt P`: the CLI inside the sandbox
// (default host rootfs), through the bridge and the embedded gateway.
void run_layer(const WorkerSpec& spec, Org org, bool via_daemon, const std::string& rootfs, bool capture_only) {
    auto& w = world();
    const std::string tag = spec.name + "-" + org_name(org) + (via_daemon ? "-daemon" : "") + (rootfs != "host" ? "-image" : "") +
                            (capture_only ? "-captured" : "");
    auto run_dir = w.dir + "/run-" + tag;
    const auto host = model_host(spec.kind, org);
    std::unique_ptr<GatewayDaemon> daemon;
    if (via_daemon) daemon = std::make_unique<GatewayDaemon>(w, org, tag, "");
    auto before = standin_seen().size();
    test::RunOptions o;
    o.timeout = std::chrono::seconds(240);
    o.env["CORRAL_STATE_DIR"] = w.dir + "/corral-state";
    // Via the daemon, the run reads the organisation the daemon serves.
    std::vector<std::string> argv = {test::corral_bin(), "run", "--config", daemon ? daemon->org : org_dir(w, org),
                                     "--worker", spec.name, "--run-dir", run_dir, "--prompt", kPrompt};
    if (daemon) argv.insert(argv.begin() + 2, "--gateway=unix:" + daemon->socket);
    if (rootfs != "host") argv.insert(argv.begin() + 2, {"--rootfs", rootfs});
    if (capture_only) argv.insert(argv.begin() + 2, "--capture-only");
    auto r = test::run(argv, o);
    auto record_text = read_file(run_dir + "/run.json");
    INFO("exit ", r.exit_code, std::string(r.timed_out ? " (timed out)" : ""), "\nstdout:\n", r.out, "\nstderr:\n", r.err,
         "\nrun.json:\n", record_text);
    CHECK(r.exit_code == 0);
    CHECK(finished_with_done(spec.kind, r.out));
    CHECK(finished_with_done(spec.kind, read_file(run_dir + "/stdout.jsonl")));
    CHECK(read_file(run_dir + "/stdout.jsonl") == r.out);
    CHECK_FALSE(fs::exists(run_dir + "/stdout.log"));  // kept once, as stdout.jsonl
    REQUIRE_FALSE(record_text.empty());
    auto record = json::parse(record_text);
    CHECK(record.value("status", -1) == 0);
    CHECK(record.value("exit_code", -1) == 0);
    CHECK(record["teardown"].value("verdict", "") == "clean");
    CHECK(record.value("rootfs", "") == rootfs);
    // org.toml's [sandbox] timeout reaches the run (resolved worker limits).
    CHECK(record["limits"].value("timeout_ms", json()) == 300'000);
    CHECK(record.value("worker", "") == spec.name);
    CHECK(record.value("agent", "") == std::string(config::to_string(spec.kind)));
    CHECK(record.value("cli_version", "") == ::corral::agents::pinned_cli_version(spec.kind));
    REQUIRE(record.contains("gateway"));
    const auto& gw = record["gateway"];
    const std::string identity = record.value("identity", "");
    CHECK(identity.rfind(spec.name + "/", 0) == 0);
    std::vector<json> lines;
    if (daemon) {
        // The daemon keeps the counts (asked at the run's end) and the ledger;
        // its lines carry the run's identity.
        CHECK(gw.value("mode", "") == "unix:" + daemon->socket);
        ::usleep(300'000);
        lines = ledger_lines(daemon->ledger);
    } else {
        CHECK(gw.value("mode", "") == "embedded");
        lines = ledger_lines(gw.value("ledger", run_dir + "/ledger.jsonl"));
    }
    // Either way: no refusal, and every request of the run is one ledger line in its name.
    CHECK(gw.value("refusals", -1) == 0);
    CHECK(gw.value("requests", 0) > 0);
    // A tool's first sight (corral's own report_outcome, listed by the CLI)
    // is a record in the ledger, not a request.
    std::size_t mine = 0;
    for (const auto& l : lines)
        mine += l.value("identity", "") == identity && !(l.contains("tool") && l["tool"].value("phase", "") == "first_sight");
    CHECK(gw.value("requests", 0) == mine);
    check_credentials_seen(w, spec.kind, org, seen_since(before, host));
    check_model_totals(gw["model"], seen_since(before, host, true));
    check_ledger(lines, identity, host, spec.kind == AgentKind::codex ? "openai" : "anthropic");
    if (spec.kind == AgentKind::codex) CHECK(relayed_websocket(lines));
    if (capture_only) {
        // No proxy variable in the box: the CLI resolved the model host in the
        // box's DNS stub and every connection it made was captured.
        std::size_t captured = 0, proxied = 0;
        for (const auto& l : lines) {
            if (l.value("identity", "") != identity || l.contains("tool")) continue;
            (l.value("captured", false) ? captured : proxied) += 1;
        }
        CHECK(captured > 0);
        CHECK(proxied == 0);
    }
    check_stayed_on_loopback();
    // No real secret anywhere the box or its output could reach.
    auto out = r.out + r.err + read_file(run_dir + "/stdout.jsonl");
    for (const auto& secret : {w.anthropic_key, w.anthropic_oauth, w.openai_token, w.openai_key})
        CHECK(out.find(secret) == std::string::npos);
    auto scan = test::run({"grep", "-rlF", "-e", w.anthropic_key, "-e", w.anthropic_oauth, "-e", w.openai_token, "-e",
                           w.openai_key, run_dir});
    CHECK_MESSAGE(scan.out.empty(), scan.out);
}

// A budget spent: the worker's [budget] allows no model request. The real
// CLI must stop with corral's sentence visible in its output, after at most
// one further request (the SDKs would retry a 429 or 5xx, codex any status
// but 400; the refusal is a 400 in the provider's error shape with
// x-should-retry: false, and codex's WebSocket a 426, after which it streams
// over HTTP), and nothing may reach the model.
void budget_spent_layer(const WorkerSpec& spec) {
    auto& w = world();
    const Org org = Org::primary;
    const std::string dir = w.dir + "/org-budget-" + spec.name;
    fs::remove_all(dir);
    fs::copy(org_dir(w, org), dir, fs::copy_options::recursive);
    const std::string worker_toml = dir + "/workers/" + spec.name + "/worker.toml";
    write_file(worker_toml, read_file(worker_toml) + "\n[budget]\nrequests = 0\n");
    auto run_dir = w.dir + "/run-budget-" + spec.name;
    const auto host = model_host(spec.kind, org);
    auto before = standin_seen().size();
    test::RunOptions o;
    o.timeout = std::chrono::seconds(240);
    o.env["CORRAL_STATE_DIR"] = w.dir + "/corral-state";
    auto r = test::run({test::corral_bin(), "run", "--config", dir, "--worker", spec.name, "--run-dir", run_dir,
                        "--prompt", kPrompt},
                       o);
    auto record_text = read_file(run_dir + "/run.json");
    INFO("exit ", r.exit_code, std::string(r.timed_out ? " (timed out)" : ""), "\nstdout:\n", r.out, "\nstderr:\n", r.err,
         "\nrun.json:\n", record_text);
    CHECK_FALSE(r.timed_out);
    // claude and codex exit non-zero; pi reports the error in its JSON
    // stream (stopReason "error") and exits 0, as it does for any API error.
    if (spec.kind != AgentKind::pi) CHECK(r.exit_code != 0);
    // corral's sentence, as the CLI shows the provider's error message.
    CHECK((r.out + r.err).find("model_budget") != std::string::npos);
    auto lines = ledger_lines(run_dir + "/ledger.jsonl");
    std::size_t refused = 0, websocket = 0;
    for (const auto& l : lines) {
        refused += l.value("reason", "") == "model_budget";
        websocket += l.value("reason", "") == "model_websocket";
    }
    CHECK(refused >= 1);
    CHECK(refused <= 2);  // the refusal, and at most one further try
    CHECK(websocket <= 2);  // codex: its WebSocket refused, then HTTP
    std::size_t answered = 0;
    for (const auto& s : seen_since(before, host, true)) answered += s.contains("usage");
    CHECK(answered == 0);
    REQUIRE_FALSE(record_text.empty());
    auto record = json::parse(record_text);
    CHECK(record["gateway"]["model"].value("budget_refusals", 0ull) == refused + websocket);
    CHECK(r.err.find("corral run: model traffic: 0 requests") != std::string::npos);
}

// A session of the worker: two `corral exec --prompt` turns in one sandbox,
// each a finished agent run with its own exec record; every ledger line of
// the session (the embedded gateway's, or the daemon's through the
// announcement) names the agent role; a prompt for another role is refused.
void session_layer(const WorkerSpec& spec, bool via_daemon) {
    auto& w = world();
    const std::string tag = spec.name + "-session" + (via_daemon ? "-daemon" : "");
    const std::string state = w.dir + "/state-" + tag;
    std::unique_ptr<GatewayDaemon> daemon;
    if (via_daemon) daemon = std::make_unique<GatewayDaemon>(w, Org::primary, tag, "");
    test::RunOptions o;
    o.timeout = std::chrono::seconds(240);
    std::vector<std::string> start = {test::corral_bin(), "session", "start", "--state-dir", state, "--config",
                                      daemon ? daemon->org : org_dir(w, Org::primary), "--worker", spec.name};
    if (daemon) start.insert(start.begin() + 3, "--gateway=unix:" + daemon->socket);
    auto started = test::run(start, o);
    INFO("session start: exit ", started.exit_code, "\nstdout:\n", started.out, "\nstderr:\n", started.err);
    REQUIRE(started.exit_code == 0);
    const std::string id = started.out.substr(0, started.out.find('\n'));
    const std::string run_dir = state + "/runs/" + id;
    auto exec = [&](std::vector<std::string> options) {
        std::vector<std::string> argv = {test::corral_bin(), "exec", "--state-dir", state};
        argv.insert(argv.end(), options.begin(), options.end());
        argv.push_back(id);
        return test::run(argv, o);
    };
    for (int turn = 1; turn <= 2; ++turn) {
        CAPTURE(turn);
        auto r = exec({"--prompt", kPrompt});
        INFO("exec --prompt: exit ", r.exit_code, "\nstdout:\n", r.out, "\nstderr:\n", r.err);
        CHECK(r.exit_code == 0);
        CHECK(finished_with_done(spec.kind, r.out));
        const std::string exec_dir = run_dir + "/execs/" + std::to_string(turn);
        auto rec = json::parse(read_file(exec_dir + "/exec.json"));
        INFO(rec.dump(2));
        CHECK(rec["role"] == "agent");
        CHECK(rec["status"] == 0);
        CHECK(rec["prompt_bytes"] == std::string(kPrompt).size());
        CHECK(read_file(exec_dir + "/stdout.log") == r.out);
    }
    auto other_role = exec({"--role", "service", "--prompt", kPrompt});
    CHECK(other_role.exit_code == 2);
    CHECK(other_role.err.find("--role service cannot take it") != std::string::npos);
    auto stop = test::run({test::corral_bin(), "session", "stop", "--state-dir", state, id}, o);
    INFO("session stop: ", stop.out, stop.err);
    CHECK(stop.exit_code == 0);
    auto record = json::parse(read_file(run_dir + "/run.json"));
    CHECK(record["teardown"]["verdict"] == "clean");
    // The session's agent, as the plan has it: the one whose CLI version is recorded beside it.
    CHECK(record.value("agent", "") == std::string(config::to_string(spec.kind)));
    CHECK(record.value("cli_version", "") == ::corral::agents::pinned_cli_version(spec.kind));
    const std::string identity = spec.name + "/" + id;
    if (daemon) ::usleep(300'000);
    std::size_t mine = 0;
    for (const auto& l : ledger_lines(daemon ? daemon->ledger : run_dir + "/ledger.jsonl")) {
        if (l.value("identity", "") != identity) continue;
        ++mine;
        CHECK(l.value("role", "") == "agent");
    }
    CHECK(mine > 0);
    CHECK(record["gateway"]["refusals"] == 0);
    check_stayed_on_loopback();
    auto scan = test::run({"grep", "-rlF", "-e", w.anthropic_key, "-e", w.anthropic_oauth, "-e", w.openai_token, "-e",
                           w.openai_key, run_dir});
    CHECK_MESSAGE(scan.out.empty(), scan.out);
}

const WorkerSpec& spec_named(const std::string& name) {
    for (const auto& s : workers())
        if (s.name == name) return s;
    throw std::runtime_error("no worker " + name);
}

}  // namespace agents_e2e
