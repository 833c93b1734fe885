// tests/bridge_e2e — real clients in a real sandbox, through the bridge.
//
// One loopback world: a test CA and a leaf for api.anthropic.com (openssl
// CLI), the stand-in upstream (tests/gateway_e2e/upstream.js) on 127.0.0.1,
// an organisation whose grant sends api.anthropic.com to it via connect_to
// with the test CA as the grant's upstream trust store, and a root-only file
// with the real key. Inside the box (`--rootfs host`), curl and node talk to
// https://api.anthropic.com with a placeholder key; the stand-in must see the
// real key, never the placeholder. The box itself never holds the real key:
// its environment and its visible tree are scanned from the host side through
// /proc/PID/{environ,root} while it is alive.
#include <doctest/doctest.h>

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/bridge_e2e/world.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_pki.hpp"

namespace corral::test::bridge {

namespace fs = std::filesystem;

TEST_CASE("a command with no --config: embedded gateway without grants refuses with 403 and a ledger line") {
    World& w = world();
    std::string run_dir = w.dir + "/run-nogrants";
    const int before = upstream_stats()["requests"];
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = w.dir + "/runs-state";
    auto r = run({corral_bin(), "run", "--rootfs", "host", "--run-dir", run_dir, "--", "curl", "-sS", "-o", "/dev/null",
                  "-w", "connect=%{http_connect}\n", "https://api.anthropic.com/v1/messages"},
                 o);
    INFO(r.out << r.err);
    CHECK(r.out.find("connect=403") != std::string::npos);
    auto record = json::parse(read_file(run_dir + "/run.json"));
    CHECK(record["gateway"]["mode"] == "embedded");
    CHECK(record["gateway"]["refusals"] == 1);
    CHECK(record["identity"] == "adhoc/" + record["id"].get<std::string>());
    auto lines = ledger(run_dir + "/ledger.jsonl");
    REQUIRE(lines.size() == 1);
    CHECK(lines[0]["host"] == "api.anthropic.com");
    CHECK(lines[0]["reason"] == "not_granted");
    CHECK(lines[0]["identity"] == record["identity"]);
    CHECK(upstream_stats()["requests"] == before);
    // The operator is told on the host, with what would allow it, and the
    // run's last line counts it.
    CHECK(r.err.find("corral run: refused CONNECT api.anthropic.com:443 (not_granted, 403): no grant covers "
                     "api.anthropic.com:443; to allow it") != std::string::npos);
    CHECK(r.err.find(": exited 56 after ") != std::string::npos);  // curl's "CONNECT tunnel failed"
    CHECK(r.err.find("; 1 request, 1 refused; record " + run_dir + "/run.json") != std::string::npos);
}

// A box's bytes reach the operator's terminal only escaped: a CONNECT target
// holding C1 controls (U+009B CSI and U+009D OSC in UTF-8, raw 0x9d and 0x9c
// bytes) is refused, and both the live refusal line on corral's stderr and
// the ledger (valid UTF-8 JSON) show it as escapes, never as the bytes.
TEST_CASE("a refused target's control sequences reach neither the operator's terminal nor the ledger raw") {
    World& w = world();
    const std::string run_dir = w.dir + "/run-c1";
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = w.dir + "/runs-state";
    const std::string send =
        "import socket; s = socket.create_connection(('127.0.0.1', 3128)); "
        "s.sendall(b'CONNECT \\xc2\\x9b2J\\x9d0;owned\\x9c:443 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'); "
        "print(s.recv(64).split(b' ')[1].decode())";
    auto r = run({corral_bin(), "run", "--rootfs", "host", "--run-dir", run_dir, "--", "python3", "-c", send}, o);
    INFO(r.out << r.err);
    CHECK(r.out.find("400") != std::string::npos);
    for (char raw : {'\x9b', '\x9d', '\x9c'}) CHECK(r.err.find(raw) == std::string::npos);
    CHECK(r.err.find("corral run: refused CONNECT \\u009b2J\\x9d0;owned\\x9c") != std::string::npos);
    const std::string ledger_text = read_file(run_dir + "/ledger.jsonl");
    for (char raw : {'\x9b', '\x9d', '\x9c'}) CHECK(ledger_text.find(raw) == std::string::npos);
    CHECK(ledger_text.find("\\u009b2J") != std::string::npos);
    auto lines = ledger(run_dir + "/ledger.jsonl");  // parses: valid JSON, valid UTF-8
    REQUIRE(lines.size() == 1);
    CHECK(lines[0]["host"].get<std::string>().starts_with("\xc2\x9b" "2J"));
}

// The embedded gateway's decisions are in the run's signed journal, and its
// ledger is derived from them: a decision record per ledger line, in order,
// before the terminal record; `corral journal verify` says the ledger agrees,
// and names the line once the ledger is edited (docs/journal.md "Gateway decisions").
void check_decisions_journalled(const BoxRun& b) {
    World& w = world();
    const std::string journal = b.run_dir + "/journal.jsonl";
    const std::string ledger_path = b.run_dir + "/ledger.jsonl";
    std::vector<json> records;
    for (const auto& l : lines(read_file(journal))) records.push_back(json::parse(l));
    REQUIRE(records.size() >= 3);
    CHECK(records.front()["type"] == "admission");
    CHECK(records.front()["payload"]["decisions"] == "this_journal");
    CHECK(records.back()["type"] == "terminal");
    std::vector<std::string> decided;
    for (const auto& r : records)
        if (r["type"] == "decision")
            for (const auto& l : r["payload"]["ledger_lines"]) decided.push_back(l.get<std::string>());
    auto ledger_text = read_file(ledger_path);
    CHECK(decided == lines(ledger_text));
    CHECK(decided.size() == 6);  // the run's six requests, as in run.json
    CHECK(ledger_text.find(w.real_key) == std::string::npos);
    CHECK(read_file(journal).find(w.real_key) == std::string::npos);
    const std::vector<std::string> verify = {corral_bin(), "journal", "verify", journal, "--key",
                                             w.dir + "/runs-state/journal/signing.pub"};
    auto ok = run(verify);
    INFO(ok.out << ok.err);
    CHECK(ok.exit_code == 0);
    CHECK(ok.out.find("ledger.jsonl agrees (6 decisions)") != std::string::npos);
    // An allowed request turned into a refusal after the fact.
    std::string edited = ledger_text;
    auto at = edited.find("\"decision\":\"allow\"");
    REQUIRE(at != std::string::npos);
    edited.replace(at, 18, "\"decision\":\"refuse\"");
    write_file(ledger_path, edited);
    auto bad = run(verify);
    INFO(bad.out << bad.err);
    CHECK(bad.exit_code == 3);
    CHECK(bad.out.find("ledger.jsonl: ledger line ") != std::string::npos);
    CHECK(bad.out.find("the ledger was edited") != std::string::npos);
    write_file(ledger_path, ledger_text);
}

TEST_CASE("curl and node in the box reach api.anthropic.com through the bridge and the embedded gateway") {
    World& w = world();
    auto before = upstream_stats()["requests"].get<int>();
    BoxRun b = run_box("embedded", {}, true);
    MESSAGE("box output (embedded gateway):\n" << b.out);
    check_box_probes(b, b.run_dir + "/ledger.jsonl");
    INFO("box output:\n" << b.out);

    auto node = json::parse(section(b.out, "node"), nullptr, false);
    REQUIRE(node.is_object());
    CHECK(node["status"] == 200);
    CHECK(node.dump().find("sha256:" + sha256_hex(w.real_key)) != std::string::npos);
    // The stand-in saw the real key on every request of this run, never the placeholder.
    auto stats = upstream_stats();
    CHECK(stats["requests"].get<int>() - before == 3);  // curl, curl over [::1], node
    for (std::size_t i = static_cast<std::size_t>(before); i < stats["seen"].size(); ++i) {
        CHECK(stats["seen"][i]["headers"]["x-api-key"] == w.real_key);
        CHECK(stats["seen"][i]["url"] == "/v1/messages");
    }
    CHECK(stats.dump().find(kPlaceholder) == std::string::npos);

    CHECK(b.record["gateway"]["mode"] == "embedded");
    // Three injected requests, three refusals (ungranted, forged, and the
    // direct-name probe's GET: captured, refused by the grant's routes).
    CHECK(b.record["gateway"]["requests"] == 6);
    CHECK(b.record["gateway"]["refusals"] == 3);
    CHECK(b.record["gateway"]["secrets_reflected"] == 0);  // this upstream reflects nothing
    CHECK(b.record["identity"] == "w1/" + b.run_id);
    // One line for the ungranted host (the forged identity's refusal is not this run's).
    INFO("corral's stderr:\n" << b.corral_err);
    CHECK(b.corral_err.find("corral run: refused CONNECT ungranted.test:443 (not_granted, 403)") != std::string::npos);
    CHECK(b.corral_err.find("forged.test") == std::string::npos);
    check_no_secret_anywhere(b);
    check_decisions_journalled(b);
}

TEST_CASE("the same through a `corral gateway` daemon (--gateway unix:PATH)") {
    World& w = world();
    w.daemon = std::make_unique<Background>(
        std::vector<std::string>{corral_bin(), "gateway", "--config", w.gateway_toml, "--threads", "1"});
    REQUIRE(w.daemon->wait_for_stdout("listening unix:", std::chrono::seconds(20)));
    auto before = upstream_stats()["requests"].get<int>();
    BoxRun b = run_box("daemon", {"--gateway", "unix:" + w.dir + "/gw.sock"}, true);
    check_box_probes(b, w.dir + "/daemon-ledger.jsonl");
    auto node = json::parse(section(b.out, "node"), nullptr, false);
    REQUIRE(node.is_object());
    CHECK(node["status"] == 200);
    auto stats = upstream_stats();
    CHECK(stats["requests"].get<int>() - before == 3);  // curl over 127.0.0.1 and [::1], node
    for (std::size_t i = static_cast<std::size_t>(before); i < stats["seen"].size(); ++i)
        CHECK(stats["seen"][i]["headers"]["x-api-key"] == w.real_key);
    CHECK(stats.dump().find(kPlaceholder) == std::string::npos);
    CHECK(b.record["gateway"]["mode"] == "unix:" + w.dir + "/gw.sock");
    // The counts come from the daemon (CORRAL-COUNTS): as in the embedded case,
    // the two injected requests and the refused ungranted host, at least.
    INFO(b.record.dump());
    REQUIRE(b.record["gateway"]["requests"].is_number());
    CHECK(b.record["gateway"]["requests"].get<int>() >= 3);
    CHECK(b.record["gateway"]["refusals"].get<int>() >= 1);
    CHECK(b.record["gateway"]["secrets_reflected"] == 0);  // asked with CORRAL-COUNTS too
    // The daemon attributes the injected request to this run too.
    bool injected_line = false;
    for (const auto& l : ledger(w.dir + "/daemon-ledger.jsonl"))
        if (l.value("host", "") == "api.anthropic.com" && l.value("identity", "") == "w1/" + b.run_id &&
            l.value("status", 0) == 200)
            injected_line = true;
    CHECK(injected_line);
    // The daemon's refusals reach the run's stderr too (its counts answer).
    INFO("corral's stderr:\n" << b.corral_err);
    CHECK(b.corral_err.find("corral run: refused CONNECT ungranted.test:443 (not_granted, 403)") != std::string::npos);
    // No run-dir ledger in daemon mode: the daemon's is the one.
    CHECK(!fs::exists(b.run_dir + "/ledger.jsonl"));
    check_no_secret_anywhere(b);
    w.daemon.reset();
}

TEST_CASE("--gateway: the daemon killed and restarted during a run: the box sees a failed request, the run ends, "
          "its counts are null and say why") {
    World& w = world();
    auto start_daemon = [&] {
        auto d = std::make_unique<Background>(
            std::vector<std::string>{corral_bin(), "gateway", "--config", w.gateway_toml, "--threads", "1"});
        REQUIRE(d->wait_for_stdout("listening unix:", std::chrono::seconds(20)));
        return d;
    };
    w.daemon = start_daemon();
    const std::string run_dir = w.dir + "/run-restart";
    fs::remove(w.workspace + "/restarted");
    // One request, then a wait until the test has killed the daemon and
    // started another, then a second request, which the new daemon serves.
    const std::string script =
        "req() { curl -sS -o /dev/null -w \"$1=%{http_code}\\n\" --max-time 20 -H \"x-api-key: $PLACEHOLDER\" "
        "-d '{\"model\":\"m\",\"max_tokens\":1,\"messages\":[]}' https://api.anthropic.com/v1/messages; }\n"
        "req first\n"
        "echo '== waiting'\n"
        "i=0; while [ ! -e /workspace/restarted ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n"
        "req second\n";
    write_file(w.workspace + "/restart.sh", script);
    std::vector<std::string> argv = {corral_bin(), "run", "--config", w.org, "--worker", "w1", "--rootfs", "host",
                                     "--workspace", w.workspace, "--run-dir", run_dir, "--state-dir",
                                     w.dir + "/runs-state", "--timeout", "120s", "--env",
                                     std::string("PLACEHOLDER=") + kPlaceholder, "--gateway", "unix:" + w.dir + "/gw.sock",
                                     "--", "/bin/sh", "/workspace/restart.sh"};
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = w.dir + "/runs-state";
    Background corral(argv, o);
    REQUIRE(corral.wait_for_stdout("== waiting\n", std::chrono::seconds(90)));
    CHECK(corral.drain_stdout().find("first=200") != std::string::npos);
    w.daemon->kill_now();   // SIGKILL: no drain, the counts in its memory are gone
    w.daemon = start_daemon();
    write_file(w.workspace + "/restarted", "");
    CHECK(corral.wait_exit(std::chrono::seconds(90)) == 0);
    std::string out = corral.drain_stdout();
    INFO(out);
    CHECK(out.find("second=200") != std::string::npos);  // the new daemon serves the box's next request
    auto record = json::parse(read_file(run_dir + "/run.json"));
    INFO(record.dump());
    // The new daemon counted one request of this run; the run does not pass
    // that off as its count.
    CHECK(record["gateway"]["requests"].is_null());
    CHECK(record["gateway"]["refusals"].is_null());
    bool said = false;
    for (const auto& m : record["messages"])
        if (m.get<std::string>().find("restarted during the run") != std::string::npos &&
            m.get<std::string>().find("earlier requests are lost") != std::string::npos)
            said = true;
    CHECK(said);
    fs::remove(w.workspace + "/restarted");
    fs::remove(w.workspace + "/restart.sh");
    w.daemon.reset();
}

TEST_CASE("--rootfs IMAGE: corral's CA joins each of the image's own CA bundles in the overlay; the image is untouched") {
    World& w = world();
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = w.dir + "/runs-state";
    const std::string script =
        "for f in /etc/ssl/certs/ca-certificates.crt /etc/ssl/cert.pem /etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem "
        "/etc/pki/tls/certs/ca-bundle.crt /etc/pki/tls/cert.pem /etc/corral/ca.crt; do "
        "echo \"== $f\"; cat \"$f\" 2>/dev/null || echo '(absent)'; done; echo '== env'; env";
    struct Case {
        const char* layout;
        std::string store;                 // SSL_CERT_FILE and friends
        std::vector<std::string> bundles;  // paths that must read image roots + CA
        std::vector<std::string> absent;
    };
    const std::vector<Case> cases = {
        {"debian", "/etc/ssl/certs/ca-certificates.crt", {"/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/cert.pem"},
         {"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"}},
        {"rhel", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
         {"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/pki/tls/cert.pem"},
         {"/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/cert.pem"}},
        // No store in the image: the host's roots, so tunnelled hosts still verify.
        {"none", "/etc/ssl/certs/ca-certificates.crt", {"/etc/ssl/certs/ca-certificates.crt"},
         {"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"}},
    };
    const std::string host_bundle_before = sha256_hex(read_file("/etc/ssl/certs/ca-certificates.crt"));
    for (const auto& c : cases) {
        std::string layout = c.layout;
        CAPTURE(layout);
        std::string image = make_image(w.dir + "/img-" + c.layout, c.layout);
        std::string before = tree_digest(image);
        std::string run_dir = w.dir + "/run-img-" + c.layout;
        auto r = run({corral_bin(), "run", "--config", w.org, "--worker", "w1", "--rootfs", image, "--run-dir", run_dir,
                      "--", "/bin/sh", "-c", script},
                     o);
        INFO(r.out << r.err);
        REQUIRE(r.exit_code == 0);
        const std::string ca = read_file(w.dir + "/state/ca/ca.crt");
        REQUIRE(ca.find("BEGIN CERTIFICATE") != std::string::npos);
        CHECK(section(r.out, "/etc/corral/ca.crt") == ca);
        std::string roots = std::string(c.layout) == "none" ? read_file("/etc/ssl/certs/ca-certificates.crt")
                                                            : "IMAGE-ROOTS-" + std::string(c.layout) + "\n";
        for (const auto& b : c.bundles) {
            CAPTURE(b);
            CHECK(section(r.out, b) == roots + ca);
        }
        for (const auto& a : c.absent) {
            CAPTURE(a);
            CHECK(section(r.out, a) == "(absent)\n");
        }
        std::string env = section(r.out, "env");
        for (const char* name : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
                                 "CODEX_CA_CERTIFICATE", "PIP_CERT"}) {
            CAPTURE(name);
            CHECK(env.find(std::string(name) + "=" + c.store + "\n") != std::string::npos);
        }
        CHECK(env.find("NODE_EXTRA_CA_CERTS=/etc/corral/ca.crt\n") != std::string::npos);
        CHECK(tree_digest(image) == before);
    }
    CHECK(sha256_hex(read_file("/etc/ssl/certs/ca-certificates.crt")) == host_bundle_before);
}

TEST_CASE("--gateway: a daemon whose CORRAL-COUNTS answer is bad is named on stderr and in run.json's messages") {
    World& w = world();
    // A stand-in "daemon" (root's socket, in the test's root-only dir) that
    // answers the run's first counts request (asked before the box is built)
    // well and every later line with garbage.
    const std::string sock = w.dir + "/bad-counts.sock";
    ::unlink(sock.c_str());
    int ls = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(ls >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(::bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(ls, 8) == 0);
    std::atomic<bool> done{false};
    std::thread server([&] {
        bool first = true;
        while (!done) {
            pollfd p{ls, POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) continue;
            int c = ::accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
            if (c < 0) continue;
            char buf[512];
            (void)::recv(c, buf, sizeof buf, 0);
            const std::string answer =
                first ? R"({"requests":0,"refusals":0,"instance":"00000000000000aa","ledger":"ok"})" "\n" : "no counts here\n";
            first = false;
            (void)!::write(c, answer.data(), answer.size());
            ::close(c);
        }
    });
    // The box trusts the daemon's CA: <state-dir>/ca/ca.crt (any certificate will do for /bin/true).
    const std::string state = w.dir + "/bad-counts-state";
    fs::create_directories(state + "/ca");
    fs::permissions(state, fs::perms::owner_all, fs::perm_options::replace);
    fs::copy_file(w.dir + "/ca.crt", state + "/ca/ca.crt", fs::copy_options::overwrite_existing);
    const std::string run_dir = w.dir + "/run-bad-counts";
    auto r = run({corral_bin(), "run", "--state-dir", state, "--run-dir", run_dir, "--gateway", "unix:" + sock, "--",
                  "/bin/true"});
    done = true;
    server.join();
    ::close(ls);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    const std::string line = "corral run: gateway daemon at " + sock + ": no counts for adhoc/";
    CHECK(r.err.find(line) != std::string::npos);
    auto record = json::parse(read_file(run_dir + "/run.json"));
    INFO(record.dump());
    CHECK(record["gateway"]["requests"].is_null());
    bool in_messages = false;
    for (const auto& m : record["messages"])
        if (m.get<std::string>().find("gateway daemon at " + sock + ": no counts for adhoc/") == 0 &&
            m.get<std::string>().find("recorded as null") != std::string::npos)
            in_messages = true;
    CHECK(in_messages);
}


}  // namespace corral::test::bridge
