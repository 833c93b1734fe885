// e2e: the real, pinned agent CLIs (tools/install-npm-deps.sh) against what
// corral gives them — no network: every CLI runs in a fresh network namespace
// with only `lo`, as an unprivileged UID, with a clean environment.
//
//  - every flag corral passes appears in that CLI's --help (and the choice
//    values we pick are among the documented ones);
//  - the CLI prints the pinned version;
//  - each sentinel home is accepted as "logged in" by the CLI itself
//    (claude auth status, codex login status, pi --list-models), with a
//    control run that shows the same check failing without it;
//  - codex loads our config.toml under --strict-config (every key is one it
//    knows) and reports the phone-home features off;
//  - claude and pi finish a prompt with the profile's own command line
//    against a loopback stand-in, which sees the sentinel and the system prompt.
//
// Exits 77 (skip) with the reason when the CLIs are not installed.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "agents/agent_profile.hpp"
#include "tests/support/process.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace corral;
using agents::AgentKind;
using agents::CredentialMode;

namespace {

constexpr uid_t kNobody = 65534;

std::string prefix() { return agents::default_agents_prefix; }

std::string cli_entry(AgentKind k) {
    switch (k) {
    case AgentKind::claude: return prefix() + "/node_modules/@anthropic-ai/claude-code/bin/claude.exe";
    case AgentKind::codex: return prefix() + "/node_modules/@openai/codex/bin/codex.js";
    case AgentKind::pi: return prefix() + "/node_modules/@mariozechner/pi-coding-agent/dist/cli.js";
    }
    return "";
}

// A run directory whose agent home the unprivileged CLI can use; removed at the end.
struct RunDir {
    fs::path path;
    RunDir() {
        char tmpl[] = "/var/tmp/corral-cli-test-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        path = tmpl;
        // Only so the test's unprivileged CLI can reach home/; in a real run
        // the home is mounted into the box and the run dir stays 0700.
        ::chmod(tmpl, 0755);
    }
    ~RunDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

agents::AgentInputs inputs_in(const RunDir& rd, CredentialMode mode) {
    agents::AgentInputs in;
    in.run_id = "20260101T000000Z-e2e001";
    in.worker = "e2e";
    in.prompt = "Reply with exactly DONE";
    in.system_prompt = "You are terse.";
    in.credential = mode;
    // The box would see the home at /home/agent; here the test runs the CLI
    // on the host, so the in-box path is the host path.
    in.home_rel = "home";
    in.home_in_box = (rd.path / "home").string();
    return in;
}

std::optional<std::pair<uid_t, gid_t>> agent_owner() {
    if (test::running_as_root()) return std::make_pair(kNobody, kNobody);
    return std::nullopt;
}

// Runs `argv` offline: new network namespace (only lo), new PID namespace (so
// a killed CLI takes its children with it), clean environment, and as root
// an unprivileged UID (claude refuses --dangerously-skip-permissions as root).
test::Result run_offline(const std::vector<std::string>& argv,
                         const std::vector<std::pair<std::string, std::string>>& env,
                         std::chrono::milliseconds timeout = std::chrono::milliseconds(60'000)) {
    std::vector<std::string> cmd = {"unshare"};
    if (!test::running_as_root()) cmd.push_back("-r");
    cmd.insert(cmd.end(), {"-n", "-p", "-f", "--kill-child"});
    if (test::running_as_root())
        cmd.insert(cmd.end(), {"setpriv", "--reuid", std::to_string(kNobody), "--regid", std::to_string(kNobody),
                               "--clear-groups"});
    cmd.insert(cmd.end(), {"env", "-i", "PATH=/usr/bin:/bin", "LANG=C.UTF-8"});
    for (const auto& [k, v] : env) cmd.push_back(k + "=" + v);
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    test::RunOptions opts;
    opts.timeout = timeout;
    opts.cwd = "/";
    return test::run(cmd, opts);
}

std::vector<std::string> help_argv(AgentKind k) {
    switch (k) {
    case AgentKind::claude: return {cli_entry(k), "--help"};
    case AgentKind::codex: return {"/usr/bin/node", cli_entry(k), "exec", "--help"};
    case AgentKind::pi: return {"/usr/bin/node", cli_entry(k), "--help"};
    }
    return {};
}

// The options in a profile's argv, up to "--" (after it only the prompt).
std::vector<std::string> flags_of(const agents::AgentProfile& p) {
    std::vector<std::string> flags;
    std::size_t first = p.argv[0] == "/usr/bin/node" ? 2 : 1;
    for (std::size_t i = first; i < p.argv.size(); ++i) {
        if (p.argv[i] == "--") break;
        if (p.argv[i].size() > 1 && p.argv[i][0] == '-') flags.push_back(p.argv[i]);
    }
    return flags;
}

std::string value_after(const agents::AgentProfile& p, const std::string& flag) {
    for (std::size_t i = 0; i + 1 < p.argv.size(); ++i)
        if (p.argv[i] == flag) return p.argv[i + 1];
    return "";
}

bool help_mentions(const std::string& help, const std::string& word) {
    std::string esc;
    for (char c : word) {
        if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) esc += '\\';
        esc += c;
    }
    return std::regex_search(help, std::regex("(^|[\\s,\\[\"(])" + esc + "($|[\\s,=<\\[\")])"));
}

}  // namespace

TEST_CASE("every adapter flag corral passes appears in the real CLI's --help") {
    RunDir rd;
    for (auto kind : {AgentKind::claude, AgentKind::codex, AgentKind::pi}) {
        CAPTURE(config::to_string(kind));
        auto in = inputs_in(rd, CredentialMode::api_key);
        in.model = "some-model";  // so --model is checked too
        in.mcp = {{"files"}, 3128};  // and claude's --mcp-config, --strict-mcp-config
        auto p = agents::make_agent_profile(kind, in);
        agents::write_agent_home(p, rd.path.string(), agent_owner());
        auto r = run_offline(help_argv(kind), p.env);
        REQUIRE_MESSAGE(r.exit_code == 0, r.err);
        const std::string help = r.out + r.err;
        auto flags = flags_of(p);
        CHECK(flags.size() >= 3);
        for (const auto& f : flags) {
            CAPTURE(f);
            CHECK(help_mentions(help, f));
        }
        if (kind == AgentKind::claude) CHECK(help_mentions(help, value_after(p, "--output-format")));
        if (kind == AgentKind::pi) {
            CHECK(help.find(value_after(p, "--mode")) != std::string::npos);
            CHECK(help.find("PI_OFFLINE") != std::string::npos);
            CHECK(help.find("PI_TELEMETRY") != std::string::npos);
            CHECK(help.find("PI_CODING_AGENT_DIR") != std::string::npos);
        }
    }
}

TEST_CASE("the installed CLIs are the pinned versions") {
    RunDir rd;
    for (auto kind : {AgentKind::claude, AgentKind::codex, AgentKind::pi}) {
        CAPTURE(config::to_string(kind));
        auto p = agents::make_agent_profile(kind, inputs_in(rd, CredentialMode::api_key));
        agents::write_agent_home(p, rd.path.string(), agent_owner());
        auto r = run_offline(p.version_argv, p.env);
        CHECK(r.exit_code == 0);
        CHECK_MESSAGE((r.out + r.err).find(p.cli_version) != std::string::npos, r.out << r.err);
    }
}

TEST_CASE("claude accepts both sentinel shapes as a login, with analytics off") {
    const std::string exe = cli_entry(AgentKind::claude);
    SUBCASE("OAuth .credentials.json") {
        RunDir rd;
        auto p = agents::make_agent_profile(AgentKind::claude, inputs_in(rd, CredentialMode::oauth));
        agents::write_agent_home(p, rd.path.string(), agent_owner());
        auto r = run_offline({exe, "auth", "status"}, p.env);
        CHECK_MESSAGE(r.exit_code == 0, r.out << r.err);
        json st = json::parse(r.out);
        CHECK(st["loggedIn"] == true);
        CHECK(st["authMethod"] == "claude.ai");
        CHECK(st["analyticsDisabled"] == true);
        CHECK(st["configDirectory"] == (rd.path / "home/.claude").string());
    }
    SUBCASE("API-key sentinel in the environment") {
        RunDir rd;
        auto p = agents::make_agent_profile(AgentKind::claude, inputs_in(rd, CredentialMode::api_key));
        agents::write_agent_home(p, rd.path.string(), agent_owner());
        auto r = run_offline({exe, "auth", "status"}, p.env);
        CHECK_MESSAGE(r.exit_code == 0, r.out << r.err);
        json st = json::parse(r.out);
        CHECK(st["loggedIn"] == true);
        CHECK(st["authMethod"] == "api_key");
        CHECK(st["apiKeySource"] == "ANTHROPIC_API_KEY");
    }
    SUBCASE("control: the same home without the credential is not logged in") {
        RunDir rd;
        auto p = agents::make_agent_profile(AgentKind::claude, inputs_in(rd, CredentialMode::oauth));
        p.files.erase(std::remove_if(p.files.begin(), p.files.end(),
                                     [](const auto& f) { return f.path.find(".credentials.json") != std::string::npos; }),
                      p.files.end());
        agents::write_agent_home(p, rd.path.string(), agent_owner());
        auto r = run_offline({exe, "auth", "status"}, p.env);
        CHECK(r.exit_code != 0);
        CHECK(json::parse(r.out)["loggedIn"] == false);
    }
}

TEST_CASE("codex accepts both auth.json shapes and runs with our config.toml under --strict-config") {
    const std::vector<std::string> codex = {"/usr/bin/node", cli_entry(AgentKind::codex)};
    auto codex_cmd = [&](std::initializer_list<std::string> args) {
        std::vector<std::string> v = codex;
        v.insert(v.end(), args);
        return v;
    };
    SUBCASE("ChatGPT mode") {
        RunDir rd;
        auto p = agents::make_agent_profile(AgentKind::codex, inputs_in(rd, CredentialMode::oauth));
        agents::write_agent_home(p, rd.path.string(), agent_owner());
        auto r = run_offline(codex_cmd({"login", "status"}), p.env);
        CHECK_MESSAGE((r.out + r.err).find("Logged in using ChatGPT") != std::string::npos, r.out << r.err);
    }
    SUBCASE("API-key mode") {
        RunDir rd;
        auto p = agents::make_agent_profile(AgentKind::codex, inputs_in(rd, CredentialMode::api_key));
        agents::write_agent_home(p, rd.path.string(), agent_owner());
        auto r = run_offline(codex_cmd({"login", "status"}), p.env);
        CHECK_MESSAGE((r.out + r.err).find("API key configured") != std::string::npos, r.out << r.err);
    }
    SUBCASE("control: no auth.json is not logged in") {
        RunDir rd;
        auto p = agents::make_agent_profile(AgentKind::codex, inputs_in(rd, CredentialMode::api_key));
        p.files.clear();
        agents::write_agent_home(p, rd.path.string(), agent_owner());
        auto r = run_offline(codex_cmd({"login", "status"}), p.env);
        CHECK((r.out + r.err).find("Not logged in") != std::string::npos);
    }
    SUBCASE("the phone-home features are off") {
        RunDir rd;
        auto p = agents::make_agent_profile(AgentKind::codex, inputs_in(rd, CredentialMode::oauth));
        agents::write_agent_home(p, rd.path.string(), agent_owner());
        auto r = run_offline(codex_cmd({"features", "list"}), p.env);
        REQUIRE_MESSAGE(r.exit_code == 0, r.err);
        for (const char* f : {"apps", "plugins", "api_key_model_discovery", "enable_request_compression"}) {
            CAPTURE(f);
            CHECK(std::regex_search(r.out, std::regex(std::string("(^|\\n)") + f + "\\s+\\S+\\s+false")));
        }
    }
    SUBCASE("codex reads corral's MCP endpoints from our config.toml (mcp list)") {
        RunDir rd;
        auto in = inputs_in(rd, CredentialMode::api_key);
        in.mcp = {{"files"}, 3128};
        auto p = agents::make_agent_profile(AgentKind::codex, in);
        agents::write_agent_home(p, rd.path.string(), agent_owner());
        auto r = run_offline(codex_cmd({"mcp", "list"}), p.env);
        REQUIRE_MESSAGE(r.exit_code == 0, r.out << r.err);
        CHECK_MESSAGE(r.out.find("files") != std::string::npos, r.out);
        CHECK_MESSAGE(r.out.find("http://127.0.0.1:3128/mcp/files") != std::string::npos, r.out);
    }
    SUBCASE("the profile's own command line loads config.toml under --strict-config") {
        RunDir rd;
        auto p = agents::make_agent_profile(AgentKind::codex, inputs_in(rd, CredentialMode::api_key));
        agents::write_agent_home(p, rd.path.string(), agent_owner());
        // No network in here: codex gets as far as starting the turn, then
        // retries; the bound ends it. A config problem ends it at once.
        auto r = run_offline(p.argv, p.env, std::chrono::milliseconds(5'000));
        CHECK((r.out + r.err).find("Error loading config.toml") == std::string::npos);
        CHECK_MESSAGE(r.out.find("\"type\":\"thread.started\"") != std::string::npos, r.out << r.err);

        // Control: one key codex does not know makes the same command fail fast.
        std::ofstream(rd.path / "home/.codex/config.toml", std::ios::app) << "\n[analytics_typo]\nenabled = false\n";
        auto bad = run_offline(p.argv, p.env, std::chrono::milliseconds(5'000));
        CHECK_FALSE(bad.timed_out);
        CHECK((bad.out + bad.err).find("unknown configuration field") != std::string::npos);
    }
}

TEST_CASE("pi accepts both auth.json shapes for the anthropic provider") {
    const std::vector<std::string> pi = {"/usr/bin/node", cli_entry(AgentKind::pi), "--list-models", "claude-sonnet-4-5"};
    for (auto mode : {CredentialMode::api_key, CredentialMode::oauth}) {
        CAPTURE(static_cast<int>(mode));
        RunDir rd;
        auto p = agents::make_agent_profile(AgentKind::pi, inputs_in(rd, mode));
        agents::write_agent_home(p, rd.path.string(), agent_owner());
        auto r = run_offline(pi, p.env);
        // pi prints the table on stderr; it may carry colour escapes around the cells.
        std::string plain = std::regex_replace(r.out + r.err, std::regex("\x1b\\[[0-9;]*m"), "");
        CHECK_MESSAGE(std::regex_search(plain, std::regex("anthropic +claude-sonnet-4-5 ")), plain);
    }
    RunDir rd;
    auto p = agents::make_agent_profile(AgentKind::pi, inputs_in(rd, CredentialMode::api_key));
    p.files.clear();
    agents::write_agent_home(p, rd.path.string(), agent_owner());
    auto r = run_offline(pi, p.env);
    CHECK((r.out + r.err).find("No models available") != std::string::npos);
}

namespace {

// A stand-in for api.anthropic.com's /v1/messages on loopback (plain HTTP, in
// the test's own network namespace): logs each request as a JSON line and
// streams a one-word answer.
const char* const kStandIn = R"JS(
const http = require('http'); const fs = require('fs');
const [port, log, ready] = process.argv.slice(2);
http.createServer((req, res) => {
  let body = ''; req.on('data', c => body += c); req.on('end', () => {
    fs.appendFileSync(log, JSON.stringify({method: req.method, url: req.url, headers: req.headers, body}) + '\n');
    if (!req.url.startsWith('/v1/messages')) { res.writeHead(404); res.end('{}'); return; }
    res.writeHead(200, {'content-type': 'text/event-stream'});
    const ev = (t, d) => res.write('event: ' + t + '\ndata: ' + JSON.stringify(Object.assign({type: t}, d)) + '\n\n');
    ev('message_start', {message: {id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5',
                                   content: [], stop_reason: null, usage: {input_tokens: 5, output_tokens: 0}}});
    ev('content_block_start', {index: 0, content_block: {type: 'text', text: ''}});
    ev('content_block_delta', {index: 0, delta: {type: 'text_delta', text: 'DONE'}});
    ev('content_block_stop', {index: 0});
    ev('message_delta', {delta: {stop_reason: 'end_turn'}, usage: {output_tokens: 1}});
    ev('message_stop', {});
    res.end();
  });
}).listen(Number(port), '127.0.0.1', () => fs.writeFileSync(ready, 'ok'));
)JS";

// Runs the stand-in and then `argv` (with `env`) in one fresh network
// namespace; returns the CLI's result and the stand-in's request log.
std::pair<test::Result, std::vector<json>> run_against_stand_in(const RunDir& rd, const std::vector<std::string>& argv,
                                                                const std::vector<std::pair<std::string, std::string>>& env) {
    const std::string dir = rd.path.string();
    std::ofstream(rd.path / "standin.js") << kStandIn;
    std::string script = "ip link set lo up || exit 90\n"
                         "node " + dir + "/standin.js 8099 " + dir + "/requests.log " + dir + "/ready &\n"
                         "for i in $(seq 100); do [ -e " + dir + "/ready ] && break; sleep 0.05; done\n"
                         "[ -e " + dir + "/ready ] || exit 91\n"
                         "cd /\n"
                         "exec \"$@\" </dev/null\n";
    std::vector<std::string> cmd = {"bash", "-c", script, "run"};
    if (test::running_as_root())
        cmd.insert(cmd.end(), {"setpriv", "--reuid", std::to_string(kNobody), "--regid", std::to_string(kNobody),
                               "--clear-groups"});
    cmd.insert(cmd.end(), {"env", "-i", "PATH=/usr/bin:/bin", "LANG=C.UTF-8"});
    for (const auto& [k, v] : env) cmd.push_back(k + "=" + v);
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    std::vector<std::string> outer = {"unshare"};
    if (!test::running_as_root()) outer.push_back("-r");
    outer.insert(outer.end(), {"-n", "-p", "-f", "--kill-child"});
    outer.insert(outer.end(), cmd.begin(), cmd.end());
    test::RunOptions opts;
    opts.timeout = std::chrono::milliseconds(90'000);
    auto r = test::run(outer, opts);
    std::vector<json> reqs;
    std::ifstream log(rd.path / "requests.log");
    for (std::string line; std::getline(log, line);) reqs.push_back(json::parse(line));
    return {r, reqs};
}

}  // namespace

// The profile's own command line finishes a prompt. The model host is moved
// to the loopback stand-in by each CLI's base-URL knob (test only: in a run
// the gateway serves the real host name); the stand-in sees the sentinel and
// the system prompt corral passed.
TEST_CASE("claude and pi finish a prompt with the profile's command line and sentinel") {
    SUBCASE("claude (API-key sentinel, stream-json)") {
        RunDir rd;
        auto in = inputs_in(rd, CredentialMode::api_key);
        auto p = agents::make_agent_profile(AgentKind::claude, in);
        agents::write_agent_home(p, rd.path.string(), agent_owner());
        auto env = p.env;
        env.emplace_back("ANTHROPIC_BASE_URL", "http://127.0.0.1:8099");
        auto res = run_against_stand_in(rd, p.argv, env);
        const test::Result& r = res.first;
        const std::vector<json>& reqs = res.second;
        CHECK_MESSAGE(r.exit_code == 0, r.out << r.err);
        CHECK(r.out.find("\"type\":\"result\"") != std::string::npos);
        CHECK(r.out.find("DONE") != std::string::npos);
        bool seen = false;
        for (const auto& q : reqs) {
            if (q["url"].get<std::string>().rfind("/v1/messages", 0) != 0) continue;
            seen = true;
            CHECK(q["headers"]["x-api-key"] == "sk-ant-api03-" + agents::sentinel_for(in.run_id));
            CHECK(q["body"].get<std::string>().find(in.system_prompt) != std::string::npos);
            CHECK(q["body"].get<std::string>().find(in.prompt) != std::string::npos);
        }
        CHECK(seen);
    }
    SUBCASE("pi (API-key sentinel, --mode json, system prompt from its file)") {
        RunDir rd;
        auto in = inputs_in(rd, CredentialMode::api_key);
        in.model = "claude-sonnet-4-5";
        auto p = agents::make_agent_profile(AgentKind::pi, in);
        // pi's base-URL knob is a file in its agent dir.
        p.files.push_back({"home/.pi/agent/models.json",
                           R"({"providers":{"anthropic":{"baseUrl":"http://127.0.0.1:8099"}}})", 0600});
        agents::write_agent_home(p, rd.path.string(), agent_owner());
        auto res = run_against_stand_in(rd, p.argv, p.env);
        const test::Result& r = res.first;
        const std::vector<json>& reqs = res.second;
        CHECK_MESSAGE(r.exit_code == 0, r.out << r.err);
        CHECK(r.out.find("\"type\":\"agent_end\"") != std::string::npos);
        CHECK(r.out.find("DONE") != std::string::npos);
        REQUIRE(reqs.size() == 1);  // pi -p makes exactly one request
        CHECK(reqs[0]["method"] == "POST");
        CHECK(reqs[0]["headers"]["x-api-key"] == "sk-ant-api03-" + agents::sentinel_for(in.run_id));
        CHECK(reqs[0]["body"].get<std::string>().find(in.system_prompt) != std::string::npos);
    }
}

int main(int argc, char** argv) {
    for (auto k : {AgentKind::claude, AgentKind::codex, AgentKind::pi}) {
        if (::access(cli_entry(k).c_str(), R_OK) != 0) {
            std::printf("SKIP: %s is not installed at %s (run tools/install-npm-deps.sh as root)\n",
                        std::string(config::to_string(k)).c_str(), cli_entry(k).c_str());
            return 77;
        }
    }
    for (const char* prog : {"unshare", "setpriv", "node", "ip", "bash"}) {
        if (!test::have_program(prog)) {
            std::printf("SKIP: %s not found (util-linux / nodejs)\n", prog);
            return 77;
        }
    }
    doctest::Context ctx(argc, argv);
    return ctx.run();
}
