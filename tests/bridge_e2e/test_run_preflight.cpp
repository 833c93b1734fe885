// tests/bridge_e2e — how a run is resolved and refused before anything starts,
// with the same organisation and stand-in upstream (world.hpp): a worker's
// settings for a plain command, and the refusals of a rootfs, a prompt, a
// workspace or a credential that cannot be used.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/bridge_e2e/world.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_pki.hpp"

namespace corral::test::bridge {

namespace fs = std::filesystem;

TEST_CASE("a command run whose worker grant needs an unreadable credential names that grant, not the agent's grants") {
    World& w = world();
    std::string org = w.dir + "/org-unreadable";
    fs::create_directories(org + "/workers/wu");
    write_file(org + "/org.toml", "[gateway]\nstate_dir = \"" + w.dir + "/state\"\n"
                                  "[credentials.anthropic]\nkind = \"api_key\"\nfile = \"" + w.dir + "/no-such.key\"\n");
    write_file(org + "/workers/wu/worker.toml",
               "agent = \"claude\"\n[[grants]]\nhost = \"api.anthropic.com\"\nmode = \"inject\"\ncredential = \"anthropic\"\n");
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = w.dir + "/runs-state";
    std::string run_dir = w.dir + "/run-unreadable";
    auto r = run({corral_bin(), "run", "--config", org, "--worker", "wu", "--run-dir", run_dir, "--", "/bin/true"}, o);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 125);
    CHECK(r.err.find("corral run: " + org + "/workers/wu/worker.toml:2: the grant for api.anthropic.com:443 needs the "
                     "credential 'anthropic' (file " + w.dir + "/no-such.key), which is not available") !=
          std::string::npos);
    CHECK(r.err.find("left out") == std::string::npos);
    CHECK(!fs::exists(run_dir + "/stdout.log"));
}

TEST_CASE("a command run applies the worker's [sandbox], rootfs and [env] as an agent run does; the command line wins") {
    World& w = world();
    std::string org = w.dir + "/org-limits";
    std::string image = make_image(w.dir + "/img-worker", "debian");
    fs::create_symlink("busybox", image + "/bin/sleep");
    write_file(image + "/etc/worker-image", "the worker's image\n");
    fs::create_directories(org + "/workers/wl");
    // The org's [sandbox] is inherited (pids), the worker's own wins where it sets a key.
    write_file(org + "/org.toml", "[gateway]\nstate_dir = \"" + w.dir + "/state\"\n[sandbox]\npids = 64\nmemory = \"1GiB\"\n");
    write_file(org + "/workers/wl/worker.toml", "rootfs = \"" + image + "\"\n[sandbox]\nmemory = \"64MiB\"\ntimeout = \"2s\"\n"
                                                 "[env]\nWORKER_VAR = \"from-worker\"\n");
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = w.dir + "/runs-state";
    const std::string script = "echo \"var=$WORKER_VAR\"; cat /etc/worker-image 2>/dev/null || echo no-image; sleep 5; echo slept";

    std::string run_dir = w.dir + "/run-worker-limits";
    auto r = run({corral_bin(), "run", "--config", org, "--worker", "wl", "--run-dir", run_dir, "--", "/bin/sh", "-c", script}, o);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 124);
    CHECK(r.err.find("corral run: deadline of 2s reached; CMD got SIGTERM and ended within the 10s grace") != std::string::npos);
    // The worker's 2 s, not the script's sleep 5, ended it (by the event: no
    // "slept", the deadline's sentence and 124; never by a wall-clock bound,
    // which failed once under load).
    CHECK(r.out.find("var=from-worker\n") != std::string::npos);
    CHECK(r.out.find("the worker's image\n") != std::string::npos);
    CHECK(r.out.find("slept") == std::string::npos);
    auto record = json::parse(read_file(run_dir + "/run.json"));
    INFO(record.dump(2));
    CHECK(record["limits"]["memory_bytes"] == 64ull << 20);
    CHECK(record["limits"]["pids"] == 64);
    CHECK(record["limits"]["timeout_ms"] == 2000);
    CHECK(record["rootfs"] == image);
    CHECK(record["worker"] == "wl");

    // CLI → worker → org: every option given on the command line wins.
    std::string run_dir2 = w.dir + "/run-worker-limits-cli";
    auto r2 = run({corral_bin(), "run", "--config", org, "--worker", "wl", "--run-dir", run_dir2, "--rootfs", "host",
                   "--memory", "128M", "--timeout", "30s", "--env", "WORKER_VAR=from-cli", "--", "/bin/sh", "-c",
                   "echo \"var=$WORKER_VAR\"; cat /etc/worker-image 2>/dev/null || echo no-image"},
                  o);
    INFO(r2.out << r2.err);
    CHECK(r2.exit_code == 0);
    CHECK(r2.out.find("var=from-cli\n") != std::string::npos);
    CHECK(r2.out.find("no-image\n") != std::string::npos);
    auto record2 = json::parse(read_file(run_dir2 + "/run.json"));
    CHECK(record2["limits"]["memory_bytes"] == 128ull << 20);
    CHECK(record2["limits"]["pids"] == 64);
    CHECK(record2["limits"]["timeout_ms"] == 30000);
    CHECK(record2["rootfs"] == "host");
}

TEST_CASE("--rootfs that does not exist is named the same with and without --config") {
    World& w = world();
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = w.dir + "/runs-state";
    const std::string missing = w.dir + "/no-such-image";
    std::vector<std::vector<std::string>> forms = {
        {"--", "/bin/true"},
        {"--config", w.org, "--worker", "w1", "--", "/bin/true"},
        {"--config", w.org, "--worker", "w1", "--prompt", "hi"},
    };
    int n = 0;
    for (const auto& form : forms) {
        std::vector<std::string> argv = {corral_bin(), "run", "--rootfs", missing, "--run-dir",
                                         w.dir + "/run-norootfs-" + std::to_string(n++)};
        argv.insert(argv.end(), form.begin(), form.end());
        auto r = run(argv, o);
        INFO(r.out << r.err);
        CHECK(r.exit_code == 125);
        CHECK(r.err.find("corral run: --rootfs " + missing + ": no such directory\n") != std::string::npos);
        CHECK(r.err.find("open(") == std::string::npos);
    }
}

TEST_CASE("an agent run on an image without the agent's CLI fails before anything starts, saying where it looked") {
    World& w = world();
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = w.dir + "/runs-state";
    std::string image = make_image(w.dir + "/img-nocli", "debian");
    std::string run_dir = w.dir + "/run-nocli";
    auto r = run({corral_bin(), "run", "--config", w.org, "--worker", "w1", "--rootfs", image, "--run-dir", run_dir,
                  "--prompt", "hi"},
                 o);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 127);
    CHECK(r.err.find("claude needs /usr/local/lib/corral-agents/node_modules/@anthropic-ai/claude-code/bin/claude.exe, "
                     "which is not in the image " + image) != std::string::npos);
    CHECK(r.err.find("CORRAL_AGENTS_PREFIX=<image>/usr/local/lib/corral-agents") != std::string::npos);
    check_agent_never_started(run_dir);
    auto record = json::parse(read_file(run_dir + "/run.json"));
    CHECK(record["status"] == 127);
}

TEST_CASE("a prompt the CLI cannot take as it is (NUL byte, empty, longer than one argument) is a usage error before anything starts") {
    World& w = world();
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = w.dir + "/runs-state";
    struct Case {
        std::string name, text, message;
    };
    const std::vector<Case> cases = {
        {"nul", std::string("first\0after", 11), ": a NUL byte at offset 5; allowed: text without NUL bytes"},
        {"blank", " \n\t\n", ": empty (or only white space); the agent needs a task"},
        {"long", std::string(200000, 'a'), ""},
    };
    for (const auto& c : cases) {
        CAPTURE(c.name);
        std::string file = w.dir + "/prompt-" + c.name;
        write_file(file, c.text);
        std::string run_dir = w.dir + "/run-prompt-" + c.name;
        auto r = run({corral_bin(), "run", "--config", w.org, "--worker", "w1", "--run-dir", run_dir, "--prompt-file",
                      file},
                     o);
        INFO(r.out << r.err);
        CHECK(r.exit_code == 2);
        if (!c.message.empty())
            CHECK(r.err.find("--prompt-file " + file + c.message) != std::string::npos);
        else
            CHECK(r.err.find("one argument of claude's command line would be 200000 bytes (the prompt is 200000 bytes, "
                             "the system prompt 0); Linux allows at most 131071 bytes per argument") !=
                  std::string::npos);
        check_agent_never_started(run_dir);
    }
}

TEST_CASE("a workspace that is, holds or lies in the org directory is refused before anything starts") {
    World& w = world();
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = w.dir + "/runs-state";
    const std::string inside = w.org + "/workers/w1";
    for (const std::string& ws : {w.org, inside, w.dir}) {
        std::string run_dir = w.dir + "/run-orgws-" + std::to_string(std::hash<std::string>{}(ws));
        auto r = run({corral_bin(), "run", "--config", w.org, "--worker", "w1", "--workspace", ws, "--run-dir", run_dir,
                      "--", "/bin/true"},
                     o);
        INFO(ws << ": " << r.out << r.err);
        CHECK(r.exit_code == 125);
        // w.dir also holds the run's state dir, which may be named first.
        CHECK(r.err.find("--workspace " + ws + ": overlaps " + (ws == w.dir ? "" : w.org)) != std::string::npos);
        CHECK(!fs::exists(run_dir + "/stdout.log"));
    }
}

TEST_CASE("an agent run whose credential is missing fails before anything starts, naming it") {
    World& w = world();
    std::string org2 = w.dir + "/org2";
    fs::create_directories(org2 + "/workers/w2");
    write_file(org2 + "/org.toml", "[engine]\nagent = \"claude\"\n[gateway]\nstate_dir = \"" + w.dir + "/state\"\n");
    write_file(org2 + "/workers/w2/worker.toml", "");
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = w.dir + "/runs-state";
    std::string run_dir = w.dir + "/run-nocred";
    auto r = run({corral_bin(), "run", "--config", org2, "--worker", "w2", "--run-dir", run_dir, "--prompt", "hi"}, o);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 125);
    CHECK(r.err.find("anthropic") != std::string::npos);
    CHECK(r.err.find("[credentials.anthropic]") != std::string::npos);
    // Nothing started: no sandbox output, no agent home.
    check_agent_never_started(run_dir);
}

// The seed's WP4 scenario: an organisation with only an anthropic credential.
TEST_CASE("only an anthropic credential: the codex worker's run fails before anything starts, naming [credentials.openai]") {
    World& w = world();
    std::string org3 = w.dir + "/org3";
    fs::create_directories(org3 + "/workers/claude-w");
    fs::create_directories(org3 + "/workers/codex-w");
    write_file(org3 + "/org.toml", "[gateway]\nstate_dir = \"" + w.dir + "/state\"\n"
                                   "[credentials.anthropic]\nkind = \"api_key\"\nenv = \"CORRAL_TEST_WP4_ANTHROPIC\"\n");
    write_file(org3 + "/workers/claude-w/worker.toml", "agent = \"claude\"\n");
    write_file(org3 + "/workers/codex-w/worker.toml", "agent = \"codex\"\n");
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = w.dir + "/runs-state";
    o.env["CORRAL_TEST_WP4_ANTHROPIC"] = "sk-ant-api03-not-really-a-key";
    // validate shows both workers; the claude worker alone passes.
    auto v = run({corral_bin(), "validate", "--config", org3}, o);
    CHECK(v.out.find("worker claude-w") != std::string::npos);
    CHECK(v.out.find("worker codex-w") != std::string::npos);
    CHECK(v.exit_code == 2);
    CHECK(run({corral_bin(), "validate", "--config", org3, "--worker", "claude-w"}, o).exit_code == 0);

    std::string run_dir = w.dir + "/run-wp4-codex";
    auto r = run({corral_bin(), "run", "--config", org3, "--worker", "codex-w", "--run-dir", run_dir, "--prompt", "hi"}, o);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 125);
    CHECK(r.err.find("corral run: worker 'codex-w' runs codex, which needs the credential 'openai': not defined; "
                     "add to org.toml: [credentials.openai] kind = \"api_key\"") != std::string::npos);
    // Nothing started: no sandbox output, no agent home; run.json says why.
    check_agent_never_started(run_dir);
    std::ifstream rec(run_dir + "/run.json");
    std::stringstream ss;
    ss << rec.rdbuf();
    CHECK(ss.str().find("[credentials.openai]") != std::string::npos);
    // The record is honest about how far the run got: the embedded gateway
    // was configured but never ran (no counts), the agent was resolved.
    auto record = json::parse(ss.str());
    INFO(record.dump());
    CHECK(record["gateway"]["mode"] == "embedded");
    CHECK(record["gateway"]["requests"].is_null());
    CHECK(record["gateway"]["refusals"].is_null());
    CHECK(record["gateway"]["secrets_reflected"].is_null());
    CHECK(record["gateway"]["ledger"].is_null());
    CHECK(record["agent"] == "codex");
    CHECK(record["worker"] == "codex-w");
    CHECK(record["cli_version"].is_null());

    // A --prompt-file that cannot be read: refused after the gateway was built, before it ran.
    std::string run_dir2 = w.dir + "/run-wp4-nofile";
    auto r2 = run({corral_bin(), "run", "--config", org3, "--worker", "claude-w", "--run-dir", run_dir2, "--prompt-file",
                   w.dir + "/no-such-prompt"},
                  o);
    CHECK(r2.exit_code != 0);
    auto rec2 = json::parse(read_file(run_dir2 + "/run.json"));
    INFO(rec2.dump());
    CHECK(rec2["gateway"]["mode"] == "embedded");
    CHECK(rec2["gateway"]["requests"].is_null());
    CHECK(rec2["gateway"]["refusals"].is_null());
    CHECK(rec2["agent"] == "claude");

    // An unknown worker: the mode as configured (a daemon here), the worker as asked, no agent.
    std::string run_dir3 = w.dir + "/run-wp4-noworker";
    auto r3 = run({corral_bin(), "run", "--config", org3, "--worker", "nobody", "--gateway", "unix:" + w.dir + "/none.sock",
                   "--run-dir", run_dir3, "--prompt", "hi"},
                  o);
    CHECK(r3.exit_code == 125);
    auto rec3 = json::parse(read_file(run_dir3 + "/run.json"));
    INFO(rec3.dump());
    CHECK(rec3["gateway"]["mode"] == "unix:" + w.dir + "/none.sock");
    CHECK(rec3["gateway"]["requests"].is_null());
    CHECK(rec3["agent"].is_null());
    CHECK(rec3["worker"] == "nobody");
}


}  // namespace corral::test::bridge
