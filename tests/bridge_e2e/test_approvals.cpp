// tests/bridge_e2e — approvals from outside the box (docs/approvals.md): a
// real curl (and node) in a real box asks through a grant with approval = true; its
// request is held by the run's embedded gateway until `corral approve` or
// `corral deny`, run as a second process on the host, decides, or its
// approval_timeout passes. Each case judges what the client got, what the
// upstream saw, the ledger, the run's journal and run.json.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <csignal>

#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/bridge_e2e/world.hpp"
#include "tests/support/process.hpp"

namespace corral::test::bridge {

namespace fs = std::filesystem;

namespace {

// An egress-only organisation: worker "ask" reaches the stand-in only once a
// person approves (20 s to decide), worker "hasty" the same with 2 s.
std::string approval_org() {
    World& w = world();
    const std::string org = w.dir + "/org-approvals";
    if (fs::exists(org)) return org;
    const std::string grant = "[[grants]]\nhost = \"127.0.0.1\"\nport = " + std::to_string(w.upstream_port) +
                              "\nmode = \"tunnel\"\nallow_private = true\napproval = true\n";
    fs::create_directories(org + "/workers/ask");
    fs::create_directories(org + "/workers/hasty");
    write_file(org + "/org.toml", "");
    write_file(org + "/workers/ask/worker.toml", "agent = \"none\"\n" + grant + "approval_timeout = \"20s\"\n");
    write_file(org + "/workers/hasty/worker.toml", "agent = \"none\"\n" + grant + "approval_timeout = \"2s\"\n");
    fs::create_directories(org + "/workers/open");  // no grant at all: only --ask lets it out
    write_file(org + "/workers/open/worker.toml", "agent = \"none\"\n");
    return org;
}

std::string state_dir() { return world().dir + "/approvals-state"; }

// `corral run` of `script` (sh -c) for worker `worker` of `org` (default
// approval_org()), in the background. `options` go before the command (e.g. --ask).
std::unique_ptr<Background> start_run(const std::string& run_dir, const std::string& worker, const std::string& script,
                                      const std::vector<std::string>& options = {}, const std::string& org = "") {
    std::vector<std::string> argv{corral_bin(), "run", "--config", org.empty() ? approval_org() : org, "--worker", worker,
                                  "--rootfs", "host",
                                  "--run-dir", run_dir, "--state-dir", state_dir(), "--ro-bind", test_ca_dir() + ":/testca",
                                  "--timeout", "90s"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
    RunOptions o;
    o.stderr_file = run_dir + ".corral-stderr";
    return std::make_unique<Background>(argv, o);
}

// The box's HTTPS request to the stand-in, through the proxy (CONNECT).
std::string https_probe(const std::string& path) {
    return "curl -sS --noproxy '' --cacert /testca/ca.crt -o /dev/null -w 'connect=%{http_connect} code=%{http_code}\\n' "
           "https://127.0.0.1:" + std::to_string(world().upstream_port) + path;
}
// A plain request through the proxy: the gateway's refusal body is printed.
std::string plain_probe(const std::string& path) {
    return "curl -sS --noproxy '' -x http://127.0.0.1:3128 -w '\\nstatus=%{http_code}\\n' "
           "http://127.0.0.1:" + std::to_string(world().upstream_port) + path;
}

Result corral_cmd(std::vector<std::string> args) {
    args.insert(args.begin(), corral_bin());
    args.insert(args.end(), {"--state-dir", state_dir()});
    return run(args);
}

// The pending requests as `corral approvals --json` prints them.
std::vector<json> pending() {
    auto r = corral_cmd({"approvals", "--json"});
    std::vector<json> out;
    for (const auto& l : lines(r.out))
        if (!l.empty()) out.push_back(json::parse(l));
    return out;
}

// Waits (bounded: a hang guard) for a pending request other than `not_id`.
json wait_pending(const std::string& not_id = "") {
    for (int i = 0; i < 300; ++i) {
        for (const auto& e : pending())
            if (e["id"] != not_id) return e;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return json();
}

// The run's output (stdout.log) once it ended.
std::string finish(Background& run, const std::string& run_dir) {
    CHECK(run.wait_exit(std::chrono::seconds(90)) == 0);
    return read_file(run_dir + "/stdout.log");
}

std::vector<json> approval_lines(const std::string& run_dir) {
    std::vector<json> out;
    for (const auto& l : ledger(run_dir + "/ledger.jsonl"))
        if (l.contains("approval")) out.push_back(l);
    return out;
}

// Every ledger line the run's signed journal holds (its decision records).
std::string journal_ledger_lines(const std::string& run_dir) {
    std::string all;
    for (const auto& l : lines(read_file(run_dir + "/journal.jsonl"))) {
        if (l.empty()) continue;
        auto r = json::parse(l);
        if (r["type"] == "decision")
            for (const auto& line : r["payload"]["ledger_lines"]) all += line.get<std::string>() + "\n";
    }
    return all;
}

}  // namespace

TEST_CASE("approval: curl's CONNECT waits, held, until `corral approve` from another process; then it goes through once") {
    World& w = world();
    const std::string run_dir = w.dir + "/run-approve";
    const int before = upstream_stats()["requests"];
    auto corral = start_run(run_dir, "ask", https_probe("/approved") + "; " + https_probe("/again"));

    json e = wait_pending();
    REQUIRE(e.is_object());
    CHECK(e["kind"] == "egress");
    CHECK(e["method"] == "CONNECT");
    CHECK(e["host"] == "127.0.0.1");
    CHECK(e["port"] == w.upstream_port);
    CHECK(e["identity"].get<std::string>().rfind("ask/", 0) == 0);
    CHECK(e["digest"].get<std::string>().rfind("sha256:", 0) == 0);
    CHECK(e["state"] == "pending");
    // Held before any connection: the stand-in has seen nothing.
    CHECK(upstream_stats()["requests"] == before);
    auto table = corral_cmd({"approvals"});
    CHECK(table.out.find(e["id"].get<std::string>()) != std::string::npos);
    CHECK(table.out.find("CONNECT 127.0.0.1:" + std::to_string(w.upstream_port)) != std::string::npos);

    auto ok = corral_cmd({"approve", e["id"]});
    INFO(ok.out << ok.err);
    CHECK(ok.exit_code == 0);
    CHECK(ok.out.find("approved") != std::string::npos);
    // Single-use: the second connection asks again, a new request.
    json again = wait_pending(e["id"]);
    REQUIRE(again.is_object());
    CHECK(again["id"] != e["id"]);
    CHECK(again["digest"] == e["digest"]);  // the same request; a new approval
    // A decision is made once.
    auto twice = corral_cmd({"approve", e["id"]});
    CHECK(twice.exit_code == 1);
    CHECK(corral_cmd({"approve", again["id"]}).exit_code == 0);

    const std::string out = finish(*corral, run_dir);
    INFO(out);
    CHECK(out == "connect=200 code=200\nconnect=200 code=200\n");  // the stand-in answered both
    CHECK(upstream_stats()["requests"] == before + 2);

    auto records = approval_lines(run_dir);
    REQUIRE(records.size() == 4);
    CHECK(records[0]["approval"]["phase"] == "requested");
    CHECK(records[0]["approval"]["id"] == e["id"]);
    CHECK(records[1]["approval"]["phase"] == "decided");
    CHECK(records[1]["approval"]["state"] == "approved");
    CHECK(records[1]["approval"]["decided_by"] == "root (uid 0)");
    CHECK(records[1]["approval"]["digest"] == e["digest"]);
    const std::string journal = journal_ledger_lines(run_dir);
    CHECK(journal.find("\"id\":\"" + e["id"].get<std::string>() + "\"") != std::string::npos);
    CHECK(journal.find("\"state\":\"approved\"") != std::string::npos);
    auto record = json::parse(read_file(run_dir + "/run.json"));
    CHECK(record["gateway"]["approvals"] == json{{"requested", 2}, {"approved", 2}, {"denied", 0},
                                                 {"timed_out", 0}, {"cancelled", 0}});
    CHECK(!fs::exists(state_dir() + "/approvals/" + record["id"].get<std::string>() + ".sock"));
}

TEST_CASE("approval: --always makes the host a grant for the rest of the run; a non-root user cannot decide") {
    World& w = world();
    const std::string run_dir = w.dir + "/run-always";
    auto corral = start_run(run_dir, "ask", https_probe("/one") + "; " + https_probe("/two") + "; " + https_probe("/three"));
    json e = wait_pending();
    REQUIRE(e.is_object());
    // nobody, on the same state dir: refused, and the request still waits.
    auto nobody = run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", corral_bin(), "approve",
                       e["id"], "--state-dir", state_dir()});
    INFO(nobody.out << nobody.err);
    CHECK(nobody.exit_code != 0);
    CHECK(nobody.err.find("root") != std::string::npos);
    CHECK(pending().size() == 1);

    auto ok = corral_cmd({"approve", e["id"], "--always"});
    INFO(ok.out << ok.err);
    CHECK(ok.exit_code == 0);
    CHECK(ok.out.find("granted for the rest of the run") != std::string::npos);
    const std::string out = finish(*corral, run_dir);
    INFO(out);
    std::size_t passed = 0;
    for (std::size_t at = 0; (at = out.find("connect=200", at)) != std::string::npos; ++at) ++passed;
    CHECK(passed == 3);
    auto records = approval_lines(run_dir);
    REQUIRE(records.size() == 2);  // one request, one decision: the rest went through the grant
    CHECK(records[1]["approval"]["always"] == true);
}

TEST_CASE("approval: a deny reaches the box with who and why; a changed request is a new entry") {
    World& w = world();
    const std::string run_dir = w.dir + "/run-deny";
    const int before = upstream_stats()["requests"];
    auto corral = start_run(run_dir, "ask", plain_probe("/first") + "; " + plain_probe("/second"));
    json first = wait_pending();
    REQUIRE(first.is_object());
    CHECK(first["method"] == "GET");
    CHECK(first["path"] == "/first");
    auto no = corral_cmd({"deny", first["id"], "--reason", "not today"});
    INFO(no.out << no.err);
    CHECK(no.exit_code == 0);
    json second = wait_pending(first["id"]);
    REQUIRE(second.is_object());
    CHECK(second["path"] == "/second");
    CHECK(second["digest"] != first["digest"]);
    CHECK(corral_cmd({"deny", second["id"]}).exit_code == 0);

    const std::string out = finish(*corral, run_dir);
    INFO(out);
    CHECK(out.find("denied by root (uid 0) (not today); do not retry it by other means") != std::string::npos);
    CHECK(out.find("status=403") != std::string::npos);
    CHECK(upstream_stats()["requests"] == before);
    auto refusals = ledger(run_dir + "/ledger.jsonl");
    std::size_t denied = 0;
    for (const auto& l : refusals)
        if (!l.contains("approval") && l["reason"] == "approval_denied") ++denied;
    CHECK(denied == 2);
    auto record = json::parse(read_file(run_dir + "/run.json"));
    CHECK(record["gateway"]["approvals"]["denied"] == 2);
}

TEST_CASE("approval: --ask turns an unlisted host's refusal into a request a person decides; nothing is dialled "
          "before") {
    World& w = world();
    const std::string run_dir = w.dir + "/run-ask";
    const int before = upstream_stats()["requests"];
    auto corral = start_run(run_dir, "open", https_probe("/asked") + "; " + plain_probe("/asked-plain"), {"--ask"});
    json e = wait_pending();
    REQUIRE(e.is_object());
    CHECK(e["method"] == "CONNECT");
    CHECK(e["host"] == "127.0.0.1");
    CHECK(upstream_stats()["requests"] == before);
    CHECK(corral_cmd({"approve", e["id"]}).exit_code == 0);
    json plain = wait_pending(e["id"]);
    REQUIRE(plain.is_object());
    CHECK(plain["path"] == "/asked-plain");
    CHECK(corral_cmd({"deny", plain["id"], "--reason", "not this one"}).exit_code == 0);

    const std::string out = finish(*corral, run_dir);
    INFO(out);
    CHECK(out.find("connect=200 code=200\n") == 0);
    CHECK(out.find("denied by root (uid 0) (not this one)") != std::string::npos);
    CHECK(upstream_stats()["requests"] == before + 1);
    auto record = json::parse(read_file(run_dir + "/run.json"));
    CHECK(record["gateway"]["approvals"]["approved"] == 1);
    CHECK(record["gateway"]["approvals"]["denied"] == 1);

    // Without --ask the same host is refused at once, and nobody is asked.
    const std::string plain_dir = w.dir + "/run-no-ask";
    auto refused = start_run(plain_dir, "open", https_probe("/unasked") + "; true");
    const std::string refused_out = finish(*refused, plain_dir);
    CHECK(refused_out.find("connect=403") != std::string::npos);
    CHECK(json::parse(read_file(plain_dir + "/run.json"))["gateway"]["approvals"]["requested"] == 0);
}

// An organisation whose gateway resolves asked.capture.test to the loopback
// stand-in from a hosts file (nothing is ever asked of the host's resolver):
// an approved connection to it is then refused private_address, after the
// approval and before any dial (an --ask grant of a name allows public
// addresses only).
std::string ask_capture_org() {
    World& w = world();
    const std::string org = w.dir + "/org-ask-capture";
    if (fs::exists(org)) return org;
    fs::create_directories(org + "/workers/open");
    write_file(org + "/hosts", "127.0.0.1 asked.capture.test\n");
    write_file(org + "/org.toml", "[gateway]\nhosts_file = \"" + org + "/hosts\"\n");
    write_file(org + "/workers/open/worker.toml", "agent = \"none\"\n");
    return org;
}

TEST_CASE("approval: --ask at DNS time: an unlisted name resolves in the box, its captured connection is asked; a "
          "port approved --always gets its listener at the next query") {
    if (!have_program("getent")) {
        MESSAGE("skipped: getent is not installed (the box resolves the name with it)");
        return;
    }
    World& w = world();
    const std::string run_dir = w.dir + "/run-ask-capture";
    const int before = upstream_stats()["requests"];
    const std::string script =
        "echo \"== resolved $(getent ahostsv4 asked.capture.test | head -1)\"; "
        "curl -sS --noproxy '*' -w '\\nplain=%{http_code}\\n' http://asked.capture.test/asked-captured; "
        "curl -sS --noproxy '*' --cacert /testca/ca.crt -o /dev/null https://asked.capture.test/; echo \"tls_exit=$?\"; "
        "curl -sS -x http://127.0.0.1:3128 --cacert /testca/ca.crt -o /dev/null https://asked.capture.test:8443/; "
        "getent ahostsv4 asked.capture.test > /dev/null; "
        "curl -sS --noproxy '*' --cacert /testca/ca.crt -o /dev/null https://asked.capture.test:8443/; "
        "echo \"later_exit=$?\"";
    auto corral = start_run(run_dir, "open", script, {"--ask"}, ask_capture_org());
    // The plain request, captured: asked with its method and path, denied.
    json plain = wait_pending();
    REQUIRE(plain.is_object());
    CHECK(plain["host"] == "asked.capture.test");
    CHECK(plain["port"] == 80);
    CHECK(plain["path"] == "/asked-captured");
    CHECK(corral_cmd({"deny", plain["id"], "--reason", "not from here"}).exit_code == 0);
    // The TLS connection, captured: asked as a CONNECT; approved, then refused private_address.
    json tls = wait_pending(plain["id"]);
    REQUIRE(tls.is_object());
    CHECK(tls["method"] == "CONNECT");
    CHECK(tls["port"] == 443);
    CHECK(corral_cmd({"approve", tls["id"]}).exit_code == 0);
    // Port 8443 through the proxy, approved --always: the captured 8443 that follows is not asked again.
    json proxied = wait_pending(tls["id"]);
    REQUIRE(proxied.is_object());
    CHECK(proxied["port"] == 8443);
    CHECK(corral_cmd({"approve", proxied["id"], "--always"}).exit_code == 0);

    const std::string out = finish(*corral, run_dir);
    INFO(out);
    CHECK(out.find("== resolved 198.18.") != std::string::npos);
    CHECK(out.find("denied by root (uid 0) (not from here)") != std::string::npos);
    CHECK(out.find("plain=403") != std::string::npos);
    // Accepted by a captured listener, then closed (not 7, ECONNREFUSED: there was a listener).
    CHECK(out.find("tls_exit=7") == std::string::npos);
    CHECK(out.find("later_exit=7") == std::string::npos);
    CHECK(upstream_stats()["requests"] == before);
    int captured_private = 0, captured_8443 = 0;
    for (const auto& l : ledger(run_dir + "/ledger.jsonl")) {
        if (l.contains("approval") || !l.value("captured", false)) continue;
        if (l["reason"] == "private_address") ++captured_private;
        if (l["port"] == 8443) ++captured_8443;
    }
    CHECK(captured_private == 2);  // 443 after its approval, 8443 by --always without asking
    CHECK(captured_8443 == 1);
    auto record = json::parse(read_file(run_dir + "/run.json"));
    CHECK(record["gateway"]["approvals"]["requested"] == 3);
}

TEST_CASE("approval: node's CONNECT waits the same way: approved, it gets the stand-in's answer; denied, a 403 "
          "naming the decider; undecided, a 403 saying no consent was given") {
    World& w = world();
    const std::string run_dir = w.dir + "/run-node";
    // tests/gateway_e2e/client.js: the proxy from HTTPS_PROXY, as an agent CLI's proxy support does it.
    auto node_probe = [&](const std::string& path) {
        const json spec = {{"proxy", "env"}, {"ca", "/testca/ca.crt"}, {"host", "127.0.0.1"}, {"port", w.upstream_port},
                           {"mode", "http"}, {"method", "GET"}, {"path", path}};
        return "node /opt/client/client.js '" + spec.dump() + "'";
    };
    const int before = upstream_stats()["requests"];
    auto corral = start_run(run_dir, "ask", node_probe("/node-approved") + "; " + node_probe("/node-denied"),
                            {"--ro-bind", source_root() + "/tests/gateway_e2e:/opt/client"});
    json first = wait_pending();
    REQUIRE(first.is_object());
    CHECK(first["method"] == "CONNECT");
    CHECK(corral_cmd({"approve", first["id"]}).exit_code == 0);
    json second = wait_pending(first["id"]);
    REQUIRE(second.is_object());
    CHECK(corral_cmd({"deny", second["id"], "--reason", "not node"}).exit_code == 0);
    const std::string out = finish(*corral, run_dir);
    INFO(out);
    const auto answers = lines(out);
    REQUIRE(answers.size() >= 2);
    const json approved = json::parse(answers[0]), denied = json::parse(answers[1]);
    CHECK(approved["connectStatus"] == 200);
    CHECK(approved["status"] == 200);
    CHECK(denied["connectStatus"] == 403);
    CHECK(denied["connectReason"] == "approval_denied");
    CHECK(upstream_stats()["requests"] == before + 1);
    auto record = json::parse(read_file(run_dir + "/run.json"));
    CHECK(record["gateway"]["approvals"]["approved"] == 1);
    CHECK(record["gateway"]["approvals"]["denied"] == 1);

    // Nobody decides within the hasty worker's 2 s.
    const std::string late_dir = w.dir + "/run-node-late";
    auto late = start_run(late_dir, "hasty", node_probe("/node-late"),
                          {"--ro-bind", source_root() + "/tests/gateway_e2e:/opt/client"});
    const json timed_out = json::parse(finish(*late, late_dir));
    CHECK(timed_out["connectStatus"] == 403);
    CHECK(timed_out["connectReason"] == "approval_timeout");
    CHECK(upstream_stats()["requests"] == before + 1);
    CHECK(json::parse(read_file(late_dir + "/run.json"))["gateway"]["approvals"]["timed_out"] == 1);
}

TEST_CASE("approval: the notifier hook gets the request as JSON, as nobody, without the gateway's environment; a "
          "failing hook changes nothing") {
    World& w = world();
    // The same worker as "ask", in an organisation whose gateway has a hook
    // that says who it is, what it read and its environment, then fails:
    // corral logs a failing hook's output, which is how this test reads it.
    const std::string org = w.dir + "/org-hook";
    fs::create_directories(org + "/workers/ask");
    fs::copy_file(approval_org() + "/workers/ask/worker.toml", org + "/workers/ask/worker.toml",
                  fs::copy_options::overwrite_existing);
    write_file(org + "/org.toml", "[gateway]\napproval_command = [\"/bin/sh\", \"-c\", "
                                  "\"echo uid=$(id -u) gid=$(id -g); head -c 2000; echo; env | sort; exit 3\"]\n");
    const std::string run_dir = w.dir + "/run-hook";
    auto corral = start_run(run_dir, "ask", https_probe("/hooked"), {}, org);
    json e = wait_pending();
    REQUIRE(e.is_object());
    const std::string id = e["id"];
    // The hook's failure is logged once it ended (bounded wait: a hang guard).
    std::string log;
    for (int i = 0; i < 300 && log.find("approval_command for " + id + " failed") == std::string::npos; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        log = read_file(run_dir + ".corral-stderr");
    }
    INFO(log);
    CHECK(log.find("approval_command for " + id + " failed: exited 3") != std::string::npos);
    CHECK(log.find("uid=65534 gid=65534") != std::string::npos);
    CHECK(log.find("\"id\":\"" + id + "\"") != std::string::npos);   // the request as JSON on stdin
    CHECK(log.find("\"digest\":\"" + e["digest"].get<std::string>() + "\"") != std::string::npos);
    CHECK(log.find("CORRAL_APPROVAL_ID=" + id) != std::string::npos);
    CHECK(log.find("CORRAL_APPROVAL_KIND=egress") != std::string::npos);
    CHECK(log.find("CORRAL_BIN=") == std::string::npos);  // none of the gateway's environment
    // The request still waits, and a person's decision still decides it.
    REQUIRE(pending().size() == 1);
    CHECK(corral_cmd({"approve", id}).exit_code == 0);
    CHECK(finish(*corral, run_dir) == "connect=200 code=200\n");
}

TEST_CASE("approval: no decision by approval_timeout is timed_out, never a deny: the box is told no consent was given") {
    World& w = world();
    const std::string run_dir = w.dir + "/run-timeout";
    const int before = upstream_stats()["requests"];
    auto corral = start_run(run_dir, "hasty", plain_probe("/late"));
    json e = wait_pending();
    REQUIRE(e.is_object());
    const std::string out = finish(*corral, run_dir);
    INFO(out);
    CHECK(out.find("none was given in time: no consent was given; do not try to reach the same result another way") !=
          std::string::npos);
    CHECK(upstream_stats()["requests"] == before);
    // A decision after the deadline is refused and said so.
    auto late = corral_cmd({"approve", e["id"]});
    CHECK(late.exit_code == 1);
    auto records = approval_lines(run_dir);
    REQUIRE(records.size() == 2);
    CHECK(records[1]["approval"]["state"] == "timed_out");
    CHECK(!records[1]["approval"].contains("decided_by"));
    CHECK(records[1]["reason"] == "approval_timeout");
    auto record = json::parse(read_file(run_dir + "/run.json"));
    CHECK(record["gateway"]["approvals"]["timed_out"] == 1);
    CHECK(record["gateway"]["approvals"]["denied"] == 0);
}

TEST_CASE("approval through a `corral gateway` daemon: decided on its socket; its stop cancels what waits, recorded, "
          "the client answered") {
    World& w = world();
    const std::string dir = w.dir + "/approval-daemon";
    fs::create_directories(dir);
    const std::string toml = dir + "/gateway.toml";
    write_file(toml, "[gateway]\nlisten_unix = \"" + dir + "/gw.sock\"\nledger = \"" + dir + "/ledger.jsonl\"\n"
                     "state_dir = \"" + dir + "/state\"\n"
                     "approval_command = [\"/bin/sh\", \"-c\", \"echo daemon-hook $CORRAL_APPROVAL_ID; exit 4\"]\n"
                     "[[grants]]\nhost = \"127.0.0.1\"\nport = " + std::to_string(w.upstream_port) +
                     "\nmode = \"tunnel\"\nallow_private = true\napproval = true\napproval_timeout = \"60s\"\n");
    RunOptions daemon_options;
    daemon_options.stderr_file = dir + "/daemon.stderr";
    auto daemon = std::make_unique<Background>(
        std::vector<std::string>{corral_bin(), "gateway", "--config", toml, "--threads", "1"}, daemon_options);
    REQUIRE(daemon->wait_for_stdout("approvals unix:" + dir + "/state/approvals/gateway.sock", std::chrono::seconds(20)));
    auto in_box = [&](const std::string& label) {
        // The daemon's state dir: where a --gateway run without --config finds its CA.
        std::vector<std::string> argv{corral_bin(), "run", "--rootfs", "host", "--run-dir", dir + "/" + label,
                                      "--state-dir", dir + "/state", "--gateway", "unix:" + dir + "/gw.sock",
                                      "--ro-bind", test_ca_dir() + ":/testca", "--timeout", "90s",
                                      "--", "/bin/sh", "-c", https_probe("/" + label)};
        return std::make_unique<Background>(argv);
    };
    auto daemon_pending = [&](const std::string& not_id) {
        for (int i = 0; i < 300; ++i) {
            auto r = run({corral_bin(), "approvals", "--json", "--state-dir", dir + "/state"});
            for (const auto& l : lines(r.out))
                if (!l.empty() && json::parse(l)["id"] != not_id) return json::parse(l);
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return json();
    };

    const int before = upstream_stats()["requests"];
    auto approved = in_box("approved");
    json e = daemon_pending("");
    REQUIRE(e.is_object());
    CHECK(e["method"] == "CONNECT");
    auto ok = run({corral_bin(), "approve", e["id"], "--state-dir", dir + "/state"});
    INFO(ok.out << ok.err);
    CHECK(ok.exit_code == 0);
    CHECK(approved->wait_exit(std::chrono::seconds(90)) == 0);
    CHECK(read_file(dir + "/approved/stdout.log") == "connect=200 code=200\n");
    // The daemon's notifier hook was told (its failure logged, nothing else changed).
    const std::string hook_said = "approval_command for " + e["id"].get<std::string>() + " failed: exited 4";
    std::string daemon_log;
    for (int i = 0; i < 300 && daemon_log.find(hook_said) == std::string::npos; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        daemon_log = read_file(dir + "/daemon.stderr");
    }
    CHECK(daemon_log.find(hook_said) != std::string::npos);
    CHECK(daemon_log.find("daemon-hook " + e["id"].get<std::string>()) != std::string::npos);
    CHECK(upstream_stats()["requests"] == before + 1);
    // The daemon's count of the run's approvals, in the run's own record.
    CHECK(json::parse(read_file(dir + "/approved/run.json"))["gateway"]["approvals"] ==
          json{{"requested", 1}, {"approved", 1}, {"denied", 0}, {"timed_out", 0}, {"cancelled", 0}});

    // The daemon stops with a request waiting: it ends cancelled, recorded,
    // and the box's client is answered, not left hanging.
    auto waiting = in_box("cancelled");
    json c = daemon_pending(e["id"]);
    REQUIRE(c.is_object());
    daemon->signal(SIGTERM);
    CHECK(daemon->wait_exit(std::chrono::seconds(30)) == 0);
    CHECK(waiting->wait_exit(std::chrono::seconds(90)) == 56);  // curl: the CONNECT was refused
    CHECK(read_file(dir + "/cancelled/stdout.log").find("connect=403") != std::string::npos);
    CHECK(upstream_stats()["requests"] == before + 1);
    std::vector<std::string> states;
    for (const auto& l : ledger(dir + "/ledger.jsonl"))
        if (l.contains("approval") && l["approval"]["phase"] == "decided") states.push_back(l["approval"]["state"]);
    CHECK(states == std::vector<std::string>{"approved", "cancelled"});
    CHECK(!fs::exists(dir + "/state/approvals/gateway.sock"));
}

}  // namespace corral::test::bridge
