// tests/bridge_e2e — transparent capture (docs/capture.md) in a real box:
// programs that ignore the proxy variables (curl --noproxy '*', python's
// http.client and urllib, node's `ws` WebSocket library, `git clone` over HTTPS, a C
// client with getaddrinfo + connect), with those variables
// removed, reach the world's TLS stand-in for api.anthropic.com through the
// box's DNS stub and a captured listener, the real key injected (the box
// holds the placeholder only); and every refusal capture gives, each in the
// ledger with its code and "captured": true. The box's probes are
// capture_probe.py. No raw-IP probe: the helper rules allow dialling only
// loopback and namespaces a test made (ENETUNREACH outside the ranges is
// tools/capture_kernel_check.py's, in a namespace of its own).
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/bridge_e2e/world.hpp"
#include "tests/support/process.hpp"

namespace corral::test::bridge {

namespace fs = std::filesystem;

namespace {

struct CaptureRun {
    Result result;
    std::string run_dir;
    std::vector<json> lines;  // the run's ledger
};

CaptureRun run_capture_probe(const std::string& label, const std::vector<std::string>& extra) {
    World& w = world();
    CaptureRun c;
    c.run_dir = w.dir + "/run-" + label;
    fs::copy_file(source_root() + "/tests/bridge_e2e/capture_probe.py", w.workspace + "/capture_probe.py",
                  fs::copy_options::overwrite_existing);
    ::chmod((w.workspace + "/capture_probe.py").c_str(), 0644);
    // node's `ws` in the workspace, where the box's node finds it whatever the host path of the tree.
    if (!fs::exists(w.workspace + "/node_modules/ws") && have_program("node")) {
        fs::create_directories(w.workspace + "/node_modules");
        fs::copy(source_root() + "/node_modules/ws", w.workspace + "/node_modules/ws", fs::copy_options::recursive);
    }
    if (!fs::exists(w.workspace + "/cclient") && have_program("cc"))
        run({"cc", "-O1", "-o", w.workspace + "/cclient", source_root() + "/tests/bridge_e2e/capture_client.c"});
    std::vector<std::string> argv = {corral_bin(), "run", "--config", w.org, "--worker", "w1", "--rootfs", "host",
                                     "--workspace", w.workspace, "--run-dir", c.run_dir, "--state-dir",
                                     w.dir + "/runs-state", "--timeout", "120s", "--env",
                                     std::string("PLACEHOLDER=") + kPlaceholder};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {"--", "/usr/bin/python3", "/workspace/capture_probe.py"});
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = w.dir + "/runs-state";
    o.timeout = std::chrono::seconds(150);
    c.result = run(argv, o);
    if (fs::exists(c.run_dir + "/ledger.jsonl")) c.lines = ledger(c.run_dir + "/ledger.jsonl");
    return c;
}

// The ledger's captured lines with this reason (and host, when given).
int captured_lines(const CaptureRun& c, const std::string& reason, const std::string& host = "",
                   const std::string& mode = "") {
    int n = 0;
    for (const auto& l : c.lines)
        if (l.value("captured", false) && l.value("reason", "") == reason &&
            (host.empty() || l.value("host", "") == host) && (mode.empty() || l.value("mode", "") == mode))
            ++n;
    return n;
}

// The captured lines of requests the gateway passed (no refusal reason) with this method.
int captured_lines_ok(const CaptureRun& c, const std::string& host, const std::string& method) {
    int n = 0;
    for (const auto& l : c.lines)
        if (l.value("captured", false) && l.value("host", "") == host && l.value("method", "") == method &&
            l.value("decision", "") != "refuse")
            ++n;
    return n;
}

int number_after(const std::string& text, const std::string& key) {
    auto at = text.find(key);
    return at == std::string::npos ? -1 : std::atoi(text.c_str() + at + key.size());
}

}  // namespace

TEST_CASE("capture: proxy-unaware clients reach the granted stand-in with the real key; refusals fail fast, ledgered") {
    if (!have_program("/usr/bin/python3")) {
        MESSAGE("skipped: /usr/bin/python3 is not installed (the box's probe is a python script)");
        return;
    }
    const int before = upstream_stats()["requests"];
    CaptureRun c = run_capture_probe("capture", {});
    const std::string& out = c.result.out;
    INFO("box output:\n" << out << "\nstderr:\n" << c.result.err);
    REQUIRE(c.result.exit_code == 0);

    // The granted name resolves to its synthetic pair, in well under a second.
    const std::string gai = section(out, "getaddrinfo");
    CHECK(gai.find("198.18.0.1") != std::string::npos);
    CHECK(gai.find("fd63:6f72:7261:6c00::c612:1") != std::string::npos);
    CHECK(number_after(gai, "ms=") < 500);
    CHECK(gai.find("addrconfig=198.18.0.1") != std::string::npos);  // AI_ADDRCONFIG, as node asks

    // curl, python and (with cc) C, all without a proxy: the stand-in saw the real key.
    const std::string real = "sha256:" + sha256_hex(world().real_key);
    for (const char* probe : {"curl", "python", "urllib"}) {
        const std::string s = section(out, probe);
        INFO(probe << ": " << s);
        CHECK(s.find("status=200") != std::string::npos);
        CHECK(s.find(real) != std::string::npos);
        CHECK(s.find("sha256:" + sha256_hex(kPlaceholder)) == std::string::npos);
    }
    CHECK(upstream_stats()["requests"].get<int>() >= before + 3);
    // node's `ws`: the echo came back, and the stand-in saw the upgrade with the real key.
    if (fs::exists(world().workspace + "/node_modules/ws")) {
        CHECK(section(out, "ws").find("echo=hello-capture") != std::string::npos);
        bool real_upgrade = false;
        const json stats = upstream_stats();
        for (const auto& seen : stats["seen"])
            if (seen.value("url", "") == "/ws" && seen["headers"].value("x-api-key", "") == world().real_key)
                real_upgrade = true;
        CHECK(real_upgrade);
        CHECK(captured_lines_ok(c, "api.anthropic.com", "GET") >= 1);
    }
    // git clone over HTTPS from the git stand-in, which refuses a request
    // without the real token: the gateway added it; the box never had it.
    if (world().git_port != 0) {
        CHECK(section(out, "git").find("content=hello-from-git") != std::string::npos);
        CHECK(captured_lines_ok(c, "git.capture.test", "POST") >= 1);  // git-upload-pack
        CHECK(out.find(world().git_token) == std::string::npos);
    }
    int injected = 0;
    for (const auto& l : c.lines)
        if (l.value("captured", false) && l.value("host", "") == "api.anthropic.com" && l.value("status", 0) == 200 &&
            l.value("credential", "") == "anthropic" && l.value("mode", "") == "inject")
            ++injected;
    CHECK(injected >= 2);
    if (fs::exists(world().workspace + "/cclient")) {
        // A plain HTTP request to an inject grant: refused, readable (403 cleartext_inject).
        const std::string s = section(out, "c-client");
        CHECK(s.find("403") != std::string::npos);
        CHECK(s.find("cleartext_inject") != std::string::npos);
        CHECK(captured_lines(c, "cleartext_inject", "api.anthropic.com") >= 1);
    }

    // Refusals.
    const std::string ungranted = section(out, "ungranted");
    CHECK(ungranted.find("gaierror=-2") != std::string::npos);  // EAI_NONAME: NXDOMAIN
    CHECK(number_after(ungranted, "ms=") < 500);
    CHECK(captured_lines(c, "not_granted", "ungranted.example", "dns") >= 1);
    CHECK(section(out, "other-port").find("errno=ECONNREFUSED") != std::string::npos);
    CHECK(section(out, "ssh").find("got=b''") != std::string::npos);
    CHECK(captured_lines(c, "first_flight", "api.anthropic.com") == 1);
    CHECK(section(out, "sni").find("refused=") != std::string::npos);
    CHECK(captured_lines(c, "sni_mismatch", "api.anthropic.com") == 1);
    CHECK(section(out, "dns-tcp").find("errno=ECONNREFUSED") != std::string::npos);
    CHECK(section(out, "long-name").find("rcode=1") != std::string::npos);  // FORMERR
    const std::string malformed = section(out, "malformed");
    CHECK(malformed.find("short=silent") != std::string::npos);
    CHECK(malformed.find("noquestion=1") != std::string::npos);
    CHECK(captured_lines(c, "dns_malformed", "", "dns") >= 1);

    // The flood: the stub still answers at once afterwards, and the ledger
    // holds a bounded number of its lines (kDnsLedgerLinesPerSecond).
    const std::string flood = section(out, "flood");
    CHECK(flood.find("after=ok") != std::string::npos);
    CHECK(number_after(flood, "after=ok ms=") < 500);
    int dns_lines = 0;
    for (const auto& l : c.lines)
        if (l.value("mode", "") == "dns") ++dns_lines;
    CHECK(dns_lines <= 80);
    // The operator's live line (A or AAAA, whichever the box asked first).
    CHECK(c.result.err.find("refused DNS ") != std::string::npos);
    CHECK(c.result.err.find(" ungranted.example (not_granted): no grant of this run names") != std::string::npos);
}

TEST_CASE("--no-capture: the granted name does not resolve in the box") {
    if (!have_program("/usr/bin/python3")) {
        MESSAGE("skipped: /usr/bin/python3 is not installed");
        return;
    }
    World& w = world();
    std::vector<std::string> argv = {corral_bin(), "run", "--config", w.org, "--worker", "w1", "--rootfs", "host",
                                     "--run-dir", w.dir + "/run-nocapture", "--state-dir", w.dir + "/runs-state",
                                     "--no-capture", "--", "/usr/bin/python3", "-c",
                                     "import socket\ntry:\n socket.getaddrinfo('api.anthropic.com', 443)\n print('resolved')\n"
                                     "except socket.gaierror as e:\n print('gaierror')"};
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = w.dir + "/runs-state";
    Result r = run(argv, o);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("gaierror") != std::string::npos);
}

}  // namespace corral::test::bridge

namespace corral::test::bridge {

TEST_CASE("capture through a `corral gateway` daemon: the stub asks it (CORRAL-GRANTED), it serves the captured "
          "connections (CORRAL-CAPTURED) and ledgers the refused names (CORRAL-DNS)") {
    if (!have_program("/usr/bin/python3")) {
        MESSAGE("skipped: /usr/bin/python3 is not installed (the box's probe is a python script)");
        return;
    }
    World& w = world();
    w.daemon = std::make_unique<Background>(
        std::vector<std::string>{corral_bin(), "gateway", "--config", w.gateway_toml, "--threads", "1"});
    REQUIRE(w.daemon->wait_for_stdout("listening unix:", std::chrono::seconds(20)));
    CaptureRun c = run_capture_probe("capture-daemon", {"--gateway", "unix:" + w.dir + "/gw.sock"});
    const std::string& out = c.result.out;
    INFO("box output:\n" << out << "\nstderr:\n" << c.result.err);
    REQUIRE(c.result.exit_code == 0);
    CHECK(!fs::exists(c.run_dir + "/ledger.jsonl"));  // the daemon's ledger is the one
    const std::string identity = "w1/" + json::parse(read_file(c.run_dir + "/run.json"))["id"].get<std::string>();
    for (const auto& l : ledger(w.dir + "/daemon-ledger.jsonl"))
        if (l.value("identity", "") == identity) c.lines.push_back(l);

    CHECK(section(out, "getaddrinfo").find("198.18.0.1") != std::string::npos);
    const std::string real = "sha256:" + sha256_hex(w.real_key);
    for (const char* probe : {"curl", "python"}) {
        const std::string s = section(out, probe);
        INFO(probe << ": " << s);
        CHECK(s.find("status=200") != std::string::npos);
        CHECK(s.find(real) != std::string::npos);
    }
    int injected = 0;
    for (const auto& l : c.lines)
        if (l.value("captured", false) && l.value("host", "") == "api.anthropic.com" && l.value("status", 0) == 200 &&
            l.value("mode", "") == "inject")
            ++injected;
    CHECK(injected >= 2);
    if (fs::exists(w.workspace + "/node_modules/ws")) {
        CHECK(section(out, "ws").find("echo=hello-capture") != std::string::npos);  // node's ws, through the daemon
        CHECK(captured_lines_ok(c, "api.anthropic.com", "GET") >= 1);
    }
    if (w.git_port != 0) CHECK(section(out, "git").find("content=hello-from-git") != std::string::npos);
    CHECK(section(out, "ungranted").find("gaierror=-2") != std::string::npos);
    CHECK(captured_lines(c, "not_granted", "ungranted.example", "dns") >= 1);
    CHECK(captured_lines(c, "first_flight", "api.anthropic.com") == 1);
    CHECK(captured_lines(c, "sni_mismatch", "api.anthropic.com") == 1);
    w.daemon.reset();
}

}  // namespace corral::test::bridge
