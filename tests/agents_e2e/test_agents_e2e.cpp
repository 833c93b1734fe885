// e2e: the three real, pinned agent CLIs (claude, codex, pi) finish a prompt
// on sentinel credentials through corral's gateway, against stand-in model
// backends (standin.js) that the gateway reaches by connect_to on loopback.
//
// Two layers, each a test per CLI:
//  - "gateway": `corral gateway --org ORG` as a daemon (reached on 127.0.0.1
//    through a relay that announces the worker's identity), the CLI on the
//    host as an unprivileged UID with the profile's sentinel home and the
//    proxy environment. Isolates CLI ↔ gateway ↔ stand-in from the sandbox.
//  - "run": `corral run --config ORG --worker W --prompt …` — the CLI inside
//    the sandbox, through the bridge and the embedded gateway;
//  - "run via daemon": the same with --gateway unix:PATH of a
//    `corral gateway --org ORG` daemon, for every credential shape of every kind;
//  - "run --tty": `corral run --tty ... -- claude` in a tmux session: the
//    interactive TUI on the worker's sentinel home takes typed input.
// Each asserts: the CLI's JSON output carries the answer DONE; the stand-in
// received the real credential on every request and never a sentinel; the
// run's ledger lines are all allowed (no refused telemetry); token refresh
// endpoints are refused 403 before any lookup.
//
//  - "image": the "run" layer on the reference agent image
//    (tools/build-agent-image.sh), imported into corral's store: its own
//    Debian, Node.js and CLIs, not the host's (meson test agents_image_e2e).
//
// Exits 77 (skip) with the reason when not root or the CLIs are not installed,
// or, for the "image" cases, when the image's layout was not built.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agents/agent_profile.hpp"
#include "tests/agents_e2e/checks.hpp"
#include "tests/agents_e2e/layers.hpp"
#include "tests/agents_e2e/world.hpp"

// The layers, and the names they use (fs, json, the world's): layers.hpp.
using namespace agents_e2e;

// Primary org: claude and pi with an API key, codex signed in to ChatGPT.
TEST_CASE("gateway: claude (API key) finishes a prompt on a sentinel through corral gateway") {
    gateway_layer(spec_named("claude"), Org::primary);
}
TEST_CASE("gateway: codex (ChatGPT) finishes a prompt on a sentinel through corral gateway") {
    gateway_layer(spec_named("codex"), Org::primary);
}
TEST_CASE("gateway: pi (API key) finishes a prompt on a sentinel through corral gateway") {
    gateway_layer(spec_named("pi"), Org::primary);
}
// Alternate org: claude and pi with an OAuth token, codex with an OpenAI API key.
TEST_CASE("gateway: claude (OAuth) finishes a prompt on a sentinel through corral gateway") {
    gateway_layer(spec_named("claude"), Org::alternate);
}
TEST_CASE("gateway: codex (API key) finishes a prompt on a sentinel through corral gateway") {
    gateway_layer(spec_named("codex"), Org::alternate);
}
TEST_CASE("gateway: pi (OAuth) finishes a prompt on a sentinel through corral gateway") {
    gateway_layer(spec_named("pi"), Org::alternate);
}

TEST_CASE("run: claude (API key) finishes a prompt inside corral run") { run_layer(spec_named("claude"), Org::primary); }
TEST_CASE("run: codex (ChatGPT) finishes a prompt inside corral run") { run_layer(spec_named("codex"), Org::primary); }
TEST_CASE("run: pi (API key) finishes a prompt inside corral run") { run_layer(spec_named("pi"), Org::primary); }
TEST_CASE("run: claude (OAuth) finishes a prompt inside corral run") { run_layer(spec_named("claude"), Org::alternate); }
TEST_CASE("run: codex (API key) finishes a prompt inside corral run") { run_layer(spec_named("codex"), Org::alternate); }
TEST_CASE("run: pi (OAuth) finishes a prompt inside corral run") { run_layer(spec_named("pi"), Org::alternate); }
// The many-sandboxes host: the bridge relays to a shared `corral gateway` daemon.
TEST_CASE("run: --log-limit caps stdout.jsonl on the host's disk while the stream keeps every line") {
    auto& w = world();
    const auto spec = spec_named("pi");
    const std::string run_dir = w.dir + "/run-log-limit";
    test::RunOptions o;
    o.timeout = std::chrono::seconds(240);
    o.env["CORRAL_STATE_DIR"] = w.dir + "/corral-state";
    auto r = test::run({test::corral_bin(), "run", "--config", org_dir(w, Org::primary), "--worker", spec.name,
                        "--run-dir", run_dir, "--log-limit", "100", "--prompt", kPrompt},
                       o);
    INFO("exit ", r.exit_code, "\nstdout:\n", r.out, "\nstderr:\n", r.err);
    CHECK(r.exit_code == 0);
    REQUIRE(r.out.size() > 100);
    CHECK(finished_with_done(spec.kind, r.out));
    CHECK(read_file(run_dir + "/stdout.jsonl") == r.out.substr(0, 100));
    CHECK(r.err.find("stdout.jsonl reached --log-limit") != std::string::npos);
    auto record = json::parse(read_file(run_dir + "/run.json"));
    CHECK(record["output"]["stdout"].value("logged", 0) == 100);
    CHECK(record["output"]["stdout"].value("bytes", 0) == r.out.size());
}

bool tmux_installed() { return ::access("/usr/bin/tmux", X_OK) == 0 || ::access("/usr/local/bin/tmux", X_OK) == 0; }

// A detached tmux session of the test's own server (its socket in the world's dir).
struct TmuxSession {
    std::string socket, name;
    test::Result tmux(std::vector<std::string> args) const {
        args.insert(args.begin(), {"tmux", "-S", socket});
        return test::run(args);
    }
    std::string screen() const { return tmux({"capture-pane", "-p", "-J", "-t", name}).out; }
    // Until the screen holds `text`, for at most `seconds`.
    bool wait_for(const std::string& text, int seconds) const {
        for (int i = 0; i < seconds * 10; ++i) {
            if (screen().find(text) != std::string::npos) return true;
            ::usleep(100'000);
        }
        return false;
    }
    ~TmuxSession() { tmux({"kill-server"}); }
};

// `corral run --tty --config ORG --worker claude -- claude`: the agent's own
// terminal UI in the box, on the worker's sentinel home, in a real terminal
// (tmux), through the embedded gateway to the stand-in.
TEST_CASE("run --tty: interactive claude's first screen appears inside corral run and takes typed input" *
          doctest::skip(!tmux_installed())) {
    auto& w = world();
    const std::string run_dir = w.dir + "/run-tty-claude";
    TmuxSession t{w.dir + "/tmux.sock", "claude"};
    const std::string command = "env CORRAL_STATE_DIR=" + w.dir + "/corral-state TERM=xterm-256color " +
                                test::corral_bin() + " run --tty --config " + org_dir(w, Org::primary) +
                                " --worker claude --run-dir " + run_dir + " -- claude; echo corral-exit=$?; sleep 60";
    REQUIRE(t.tmux({"new-session", "-d", "-x", "120", "-y", "40", "-s", t.name, command}).exit_code == 0);
    // claude's dialogs before its prompt box, each answered with a keystroke:
    // the sentinel API key in the environment ("use this API key?", default
    // No) and the workspace's trust.
    // Each is answered once: the screen keeps a dialog's text after it closed.
    bool prompt_box = false, key_answered = false, trust_answered = false;
    for (int i = 0; i < 600 && !prompt_box; ++i) {
        const std::string screen = t.screen();
        if (!key_answered && screen.find("Do you want to use this API key?") != std::string::npos) {
            key_answered = true;
            ::usleep(1'000'000);  // drawn is not yet listening: keys typed before claude's raw mode would be a line
            t.tmux({"send-keys", "-t", t.name, "Up"});
            ::usleep(300'000);
            t.tmux({"send-keys", "-t", t.name, "Enter"});
            ::usleep(1'000'000);
        } else if (!trust_answered && screen.find("Yes, I trust this folder") != std::string::npos) {
            trust_answered = true;
            ::usleep(1'000'000);
            t.tmux({"send-keys", "-t", t.name, "Down"});  // the default is "No, exit"
            ::usleep(300'000);
            t.tmux({"send-keys", "-t", t.name, "Enter"});
            ::usleep(1'000'000);
        }
        // Its banner and its input box (the prompt mark), no dialog left.
        prompt_box = screen.find("Claude Code v") != std::string::npos && screen.find("\u276f") != std::string::npos &&
                     screen.find("Enter to confirm") == std::string::npos;
        if (screen.find("corral-exit=") != std::string::npos) break;
        ::usleep(100'000);
    }
    INFO("screen:\n", t.screen());
    REQUIRE(prompt_box);
    CHECK(t.screen().find("not a terminal") == std::string::npos);
    t.tmux({"send-keys", "-t", t.name, "-l", "typed through corral tty"});
    CHECK(t.wait_for("typed through corral tty", 10));
    // Ctrl-C clears the input, two more in a row end claude: keystrokes for
    // claude, not signals to corral, which ends when claude does.
    t.tmux({"send-keys", "-t", t.name, "C-c"});
    ::usleep(1'000'000);
    for (int i = 0; i < 3 && !t.wait_for("corral-exit=", 3); ++i) {
        t.tmux({"send-keys", "-t", t.name, "C-c"});
        ::usleep(200'000);
        t.tmux({"send-keys", "-t", t.name, "C-c"});
    }
    REQUIRE(t.wait_for("corral-exit=0", 20));
    auto record = json::parse(read_file(run_dir + "/run.json"));
    CHECK(record.value("agent", "") == "claude");
    CHECK(record.value("worker", "") == "claude");
    CHECK(record["teardown"].value("verdict", "") == "clean");
    // The terminal's output is logged like any stdout; the sentinel home was the CLI's.
    CHECK(read_file(run_dir + "/stdout.log").find("Claude Code") != std::string::npos);
    CHECK(fs::exists(run_dir + "/home/.claude/.claude.json"));
}

// GET on the stand-in's control port (hold / release model answers).
void standin_control(const std::string& what) {
    auto r = test::run({"curl", "-sS", "--noproxy", "*", "http://127.0.0.1:" + std::to_string(world().control_port) + "/" + what});
    REQUIRE_MESSAGE(r.exit_code == 0, "stand-in /" << what << ": " << r.err);
}

// The agent options of `corral run` (--prompt-file, --system-prompt-file,
// --workspace) reach the model, and the CLI's JSON lines reach corral's
// stdout and stdout.jsonl while the CLI is still waiting for its model: the
// stand-in holds every model answer until the test has seen a line in both.
void options_and_live_layer(const WorkerSpec& spec) {
    auto& w = world();
    const std::string tag = "options-" + spec.name;
    const std::string run_dir = w.dir + "/run-" + tag;
    const std::string prompt_marker = "CORRAL-MARKER-prompt-" + spec.name;
    const std::string system_marker = "CORRAL-MARKER-system-" + spec.name;
    const std::string prompt_file = w.dir + "/" + tag + "-prompt.txt";
    const std::string system_file = w.dir + "/" + tag + "-system.md";
    write_file(prompt_file, std::string(kPrompt) + " (" + prompt_marker + ")\n");
    write_file(system_file, "Keep answers short. " + system_marker + "\n");
    const std::string workspace = w.dir + "/ws-" + tag;
    fs::create_directories(workspace);
    const auto host = model_host(spec.kind, Org::primary);
    const auto before = standin_seen().size();

    standin_control("hold");
    struct Release {
        ~Release() { test::run({"curl", "-sS", "--noproxy", "*", "http://127.0.0.1:" + std::to_string(world().control_port) + "/release"}); }
    } release_on_exit;
    test::RunOptions o;
    o.env["CORRAL_STATE_DIR"] = w.dir + "/corral-state";
    test::Background corral({test::corral_bin(), "run", "--config", org_dir(w, Org::primary), "--worker", spec.name,
                             "--run-dir", run_dir, "--workspace", workspace, "--prompt-file", prompt_file,
                             "--system-prompt-file", system_file},
                            o);
    // A first JSON line, printed while the model's answer is held.
    bool printed = corral.wait_for_stdout("}\n", std::chrono::seconds(120));
    std::string early = corral.drain_stdout();
    INFO("stdout before the model answered:\n" << early);
    CHECK(printed);
    std::string first_line = early.substr(0, early.find('\n') + 1);
    CHECK(first_line.rfind("{", 0) == 0);
    bool in_file = false;
    for (int i = 0; i < 50 && !in_file; ++i) {
        in_file = read_file(run_dir + "/stdout.jsonl").find(first_line) == 0;
        if (!in_file) ::usleep(100'000);
    }
    CHECK_MESSAGE(in_file, "stdout.jsonl so far:\n" << read_file(run_dir + "/stdout.jsonl"));
    CHECK_FALSE(finished_with_done(spec.kind, early));  // the answer was still held

    standin_control("release");
    int status = -1;
    for (int i = 0; i < 2400; ++i) {
        int st = 0;
        if (::waitpid(corral.pid(), &st, WNOHANG) == corral.pid()) {
            status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            break;
        }
        ::usleep(100'000);
    }
    std::string out = corral.drain_stdout();  // everything so far, `early` included
    INFO("stdout:\n" << out << "\nstderr.log:\n" << read_file(run_dir + "/stderr.log"));
    CHECK(status == 0);
    CHECK(finished_with_done(spec.kind, out));
    CHECK(read_file(run_dir + "/stdout.jsonl") == out);

    // The prompt file's text and the system prompt file's text reached the
    // model (codex: both in its input, the system prompt behind corral's delimiter).
    bool prompt_seen = false, system_seen = false;
    auto seen = standin_seen();
    for (std::size_t i = before; i < seen.size(); ++i) {
        if (seen[i].value("host", "") != host || !seen[i].contains("markers")) continue;
        for (const auto& m : seen[i]["markers"]) {
            prompt_seen = prompt_seen || m == prompt_marker;
            system_seen = system_seen || m == system_marker;
        }
    }
    CHECK(prompt_seen);
    CHECK(system_seen);
    auto record = json::parse(read_file(run_dir + "/run.json"));
    CHECK(record["gateway"].value("refusals", -1) == 0);
}

TEST_CASE("session: claude finishes two prompts in one session via corral exec --prompt, as the agent role") {
    session_layer(spec_named("claude"), false);
}
TEST_CASE("session: pi finishes two prompts in one session via corral exec --prompt through corral gateway") {
    session_layer(spec_named("pi"), true);
}

TEST_CASE("run: claude with --prompt-file, --system-prompt-file, --workspace; its JSON lines stream live") {
    options_and_live_layer(spec_named("claude"));
}
TEST_CASE("run: codex with --prompt-file, --system-prompt-file, --workspace; its JSON lines stream live") {
    options_and_live_layer(spec_named("codex"));
}
TEST_CASE("run: pi with --prompt-file, --system-prompt-file, --workspace; its JSON lines stream live") {
    options_and_live_layer(spec_named("pi"));
}

TEST_CASE("run: claude stops at a spent budget with corral's refusal in its output, no retry storm") {
    budget_spent_layer(spec_named("claude"));
}
TEST_CASE("run: codex stops at a spent budget with corral's refusal in its output, no retry storm") {
    budget_spent_layer(spec_named("codex"));
}
TEST_CASE("run: pi stops at a spent budget with corral's refusal in its output, no retry storm") {
    budget_spent_layer(spec_named("pi"));
}

// Every credential shape of every kind, through `corral gateway --org`.
TEST_CASE("run via daemon: claude (API key) finishes a prompt through corral gateway --org's Unix socket") {
    run_layer(spec_named("claude"), Org::primary, true);
}
TEST_CASE("run via daemon: codex (ChatGPT, WebSocket) finishes a prompt through corral gateway --org's Unix socket") {
    run_layer(spec_named("codex"), Org::primary, true);
}
TEST_CASE("run via daemon: pi (API key) finishes a prompt through corral gateway --org's Unix socket") {
    run_layer(spec_named("pi"), Org::primary, true);
}
TEST_CASE("run via daemon: claude (OAuth) finishes a prompt through corral gateway --org's Unix socket") {
    run_layer(spec_named("claude"), Org::alternate, true);
}
TEST_CASE("run via daemon: codex (API key, WebSocket) finishes a prompt through corral gateway --org's Unix socket") {
    run_layer(spec_named("codex"), Org::alternate, true);
}
TEST_CASE("run via daemon: pi (OAuth) finishes a prompt through corral gateway --org's Unix socket") {
    run_layer(spec_named("pi"), Org::alternate, true);
}

// Proxy variables removed (--capture-only): codex's WebSocket (a Rust client)
// and its HTTP reach the model stand-in through the box's DNS stub and a
// captured listener, the sentinel swapped for the real credential in transit.
TEST_CASE("run: codex (ChatGPT, WebSocket) without proxy variables is captured: --capture-only") {
    run_layer(spec_named("codex"), Org::primary, false, "host", true);
}
TEST_CASE("run via daemon: codex (API key, WebSocket) without proxy variables is captured: --capture-only") {
    run_layer(spec_named("codex"), Org::alternate, true, "host", true);
}

// The reference agent image (tools/build-agent-image.sh), imported once into
// the runs' state dir from the OCI layout tools/test.sh builds.
std::string agent_image_layout() {
    const char* dir = std::getenv("CORRAL_AGENT_IMAGE_LAYOUT");
    return dir && *dir ? dir : "/var/cache/corral-test/agent-image";
}

const std::string& agent_image() {
    static const std::string rootfs = [] {
        auto& w = world();
        auto r = test::run({test::corral_bin(), "image", "import", agent_image_layout(), "--name", "corral-agent",
                            "--state-dir", w.dir + "/corral-state"},
                           test::RunOptions{.timeout = std::chrono::seconds(600)});
        INFO(r.out, r.err);
        REQUIRE(r.exit_code == 0);
        return std::string("image:corral-agent");
    }();
    return rootfs;
}

TEST_CASE("image: the box runs the reference image's own Debian and Node.js 22, not the host's") {
    auto& w = world();
    auto r = test::run({test::corral_bin(), "run", "--state-dir", w.dir + "/corral-state", "--rootfs", agent_image(), "--",
                        "sh", "-c", "node --version; head -n 1 /etc/debian_version; command -v git"});
    INFO(r.out, r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.rfind("v22.", 0) == 0);
    CHECK(r.out.find("\n12.") != std::string::npos);
    CHECK(r.out.find("/usr/bin/git\n") != std::string::npos);
}
TEST_CASE("image: claude (API key) finishes a prompt inside corral run on the reference agent image") {
    run_layer(spec_named("claude"), Org::primary, false, agent_image());
}
TEST_CASE("image: codex (ChatGPT) finishes a prompt inside corral run on the reference agent image") {
    run_layer(spec_named("codex"), Org::primary, false, agent_image());
}
TEST_CASE("image: pi (API key) finishes a prompt inside corral run on the reference agent image") {
    run_layer(spec_named("pi"), Org::primary, false, agent_image());
}

int main(int argc, char** argv) {
    if (!test::running_as_root()) {
        std::puts("SKIP: needs root (the CLIs run as an unprivileged UID; corral run builds sandboxes)");
        return 77;
    }
    // The "image:" cases (meson test agents_image_e2e) need the reference
    // image's layout, which only tools/test.sh builds (minutes, and the mirror).
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]).rfind("--test-case=image:", 0) == 0 &&
            !fs::exists(agent_image_layout() + "/index.json")) {
            std::printf("SKIP: no reference agent image layout in %s (tools/build-agent-image.sh --layout %s)\n",
                        agent_image_layout().c_str(), agent_image_layout().c_str());
            return 77;
        }
    auto why = missing_prerequisite();
    if (!why.empty()) {
        std::printf("SKIP: %s\n", why.c_str());
        return 77;
    }
    auto isolation = isolate_network();
    if (!isolation.empty()) {
        std::fprintf(stderr, "cannot isolate the test's network: %s\n", isolation.c_str());
        return 1;
    }
    doctest::Context ctx(argc, argv);
    return ctx.run();
}
