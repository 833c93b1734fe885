// tests/bridge_e2e — the command line's own egress and mounts, with the world's
// stand-in TLS upstream on 127.0.0.1 (world.hpp): --allow HOST[:PORT] is a
// tunnel the box's curl uses to reach it (TLS end to end: the box verifies the
// stand-in's leaf with the test CA, shown read-only with --ro-bind); without it
// the gateway refuses (curl is told to use the proxy for 127.0.0.1, which the
// box's NO_PROXY otherwise keeps for the box's own loopback). An egress-only worker (agent = "none") runs a command
// under its grants without any agent credential.
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

Result curl_in_box(const std::string& run_dir, std::vector<std::string> options) {
    World& w = world();
    std::vector<std::string> argv{corral_bin(), "run", "--rootfs", "host", "--run-dir", run_dir, "--ro-bind",
                                  test_ca_dir() + ":/testca"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.insert(argv.end(), {"--", "curl", "-sS", "--noproxy", "", "--cacert", "/testca/ca.crt", "-o", "/dev/null", "-w",
                             "connect=%{http_connect} code=%{http_code}\n",
                             "https://127.0.0.1:" + std::to_string(w.upstream_port) + "/allow-probe"});
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = w.dir + "/runs-state";
    return run(argv, o);
}

}  // namespace

TEST_CASE("--allow 127.0.0.1:PORT: the box's curl reaches the TLS stand-in through a tunnel; refused without it") {
    World& w = world();
    const std::string port = std::to_string(w.upstream_port);
    const int before = upstream_stats()["requests"];

    auto refused = curl_in_box(w.dir + "/run-allow-none", {});
    INFO(refused.out << refused.err);
    CHECK(refused.out.find("connect=403") != std::string::npos);
    CHECK(upstream_stats()["requests"] == before);
    auto refusal = ledger(w.dir + "/run-allow-none/ledger.jsonl");
    REQUIRE(refusal.size() == 1);
    CHECK(refusal[0]["reason"] == "not_granted");

    auto allowed = curl_in_box(w.dir + "/run-allow", {"--allow", "127.0.0.1:" + port});
    INFO(allowed.out << allowed.err);
    CHECK(allowed.exit_code == 0);
    CHECK(allowed.out.find("connect=200 code=") != std::string::npos);
    CHECK(upstream_stats()["requests"] == before + 1);
    const auto seen = upstream_stats()["seen"];
    CHECK(seen.back()["url"] == "/allow-probe");
    auto record = json::parse(read_file(w.dir + "/run-allow/run.json"));
    REQUIRE(record["grants"].size() == 1);
    CHECK(record["grants"][0]["host"] == "127.0.0.1");
    CHECK(record["grants"][0]["port"] == w.upstream_port);
    CHECK(record["grants"][0]["mode"] == "tunnel");
    CHECK(record["binds"][0]["target"] == "/testca");
    CHECK(record["binds"][0]["read_only"] == true);
    // A tunnel: the gateway never held a key, the box kept its own trust store.
    CHECK(record["gateway"]["refusals"] == 0);

    // Another port of the same host is still refused.
    auto other_port = curl_in_box(w.dir + "/run-allow-other", {"--allow", "127.0.0.1:" + std::to_string(w.control_port)});
    CHECK(other_port.out.find("connect=403") != std::string::npos);
}

TEST_CASE("an egress-only worker (agent = \"none\"): its grants for `-- CMD`, no agent credential, no warning") {
    World& w = world();
    const std::string org = w.dir + "/org-egress";
    fs::create_directories(org + "/workers/fetch");
    write_file(org + "/org.toml", "");
    write_file(org + "/workers/fetch/worker.toml",
               "agent = \"none\"\n[[grants]]\nhost = \"127.0.0.1\"\nport = " + std::to_string(w.upstream_port) +
                   "\nmode = \"tunnel\"\nallow_private = true\n");
    auto v = run({corral_bin(), "validate", "--config", org});
    INFO(v.out << v.err);
    CHECK(v.exit_code == 0);
    CHECK(v.err.empty());
    const int before = upstream_stats()["requests"];
    auto r = curl_in_box(w.dir + "/run-egress-only", {"--config", org, "--worker", "fetch"});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("connect=200") != std::string::npos);
    CHECK(r.err.find("credential") == std::string::npos);
    CHECK(upstream_stats()["requests"] == before + 1);
    auto record = json::parse(read_file(w.dir + "/run-egress-only/run.json"));
    CHECK(record["worker"] == "fetch");
    CHECK(record["agent"].is_null());
}

}  // namespace corral::test::bridge
