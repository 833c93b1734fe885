// Agent profiles: every sentinel shape against its golden file, the JWTs'
// claims, sentinel uniqueness, the grants each kind implies, the credential
// messages, and writing a home to disk.
//
// Regenerate the golden files after a deliberate change (e.g. a CLI bump):
//   CORRAL_UPDATE_GOLDEN=1 meson test -C BUILD agents
// and review the diff: these bytes are what the CLIs read.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include "config/org_config.hpp"
#include "agents/agent_profile.hpp"
#include "names/box_environment.hpp"
#include "tests/agents/profile_support.hpp"
#include "tests/support/process.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace corral;
using agents::AgentInputs;
using agents::AgentKind;
using agents::CredentialMode;
using namespace corral::test::profile;

namespace {

struct Case {
    const char* name;
    AgentKind kind;
    CredentialMode mode;
};
const Case kCases[] = {
    {"claude-oauth", AgentKind::claude, CredentialMode::oauth},
    {"claude-apikey", AgentKind::claude, CredentialMode::api_key},
    {"codex-chatgpt", AgentKind::codex, CredentialMode::oauth},
    {"codex-apikey", AgentKind::codex, CredentialMode::api_key},
    {"pi-apikey", AgentKind::pi, CredentialMode::api_key},
    {"pi-oauth", AgentKind::pi, CredentialMode::oauth},
};

// Everything about a profile except file contents, as stable JSON.
json summary(const agents::AgentProfile& p) {
    json files = json::array();
    for (const auto& f : p.files) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", f.mode);
        files.push_back({{"path", f.path}, {"mode", mode}});
    }
    json grants = json::array();
    for (const auto& g : p.implied_grants) {
        json routes = json::array();
        for (const auto& r : g.routes) routes.push_back(r.text);
        json grant = {{"host", g.host.text()}, {"port", g.port}, {"mode", std::string(config::to_string(g.mode))},
                      {"credential", g.credential}, {"routes", routes}, {"identities", g.identities}};
        if (!g.default_headers.empty()) {
            json headers = json::object();
            for (const auto& [name, tmpl] : g.default_headers) headers[name] = tmpl;
            grant["default_headers"] = headers;
        }
        grants.push_back(grant);
    }
    json env = json::array();
    for (const auto& [k, v] : p.env) env.push_back(k + "=" + v);
    return {{"argv", p.argv},        {"env", env},
            {"dirs", p.dirs},        {"files", files},
            {"grants", grants},      {"credential", p.credential.name},
            {"stdin_null", p.stdin_null}, {"version_argv", p.version_argv},
            {"cli_version", p.cli_version}};
}

fs::path golden_dir() { return fs::path(test::source_root()) / "tests/agents/golden"; }
bool updating() { return std::getenv("CORRAL_UPDATE_GOLDEN") != nullptr; }

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "missing golden file " << p << " (CORRAL_UPDATE_GOLDEN=1 creates it)");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void check_golden(const fs::path& p, const std::string& actual) {
    if (updating()) {
        fs::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << actual;
        return;
    }
    CHECK_MESSAGE(slurp(p) == actual, "differs from golden file " << p);
}

std::string base64url_decode(std::string s) {
    for (char& c : s) {
        if (c == '-') c = '+';
        else if (c == '_') c = '/';
    }
    std::size_t pad = (4 - s.size() % 4) % 4;
    s.append(pad, '=');
    std::string out(s.size(), '\0');
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                            reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
    REQUIRE(n >= 0);
    out.resize(static_cast<std::size_t>(n) - pad);
    return out;
}


const agents::AgentFile* find_file(const agents::AgentProfile& p, const std::string& suffix) {
    for (const auto& f : p.files)
        if (f.path.size() >= suffix.size() && f.path.compare(f.path.size() - suffix.size(), suffix.size(), suffix) == 0)
            return &f;
    return nullptr;
}

std::string env_of(const agents::AgentProfile& p, const std::string& key) {
    for (const auto& [k, v] : p.env)
        if (k == key) return v;
    return "";
}

}  // namespace

TEST_CASE("every sentinel shape matches its golden file") {
    for (const auto& c : kCases) {
        CAPTURE(c.name);
        auto p = agents::make_agent_profile(c.kind, golden_inputs(c.mode));
        check_golden(golden_dir() / c.name / "profile.json", summary(p).dump(2) + "\n");
        for (const auto& f : p.files) check_golden(golden_dir() / c.name / fs::path(f.path).filename(), f.content);
    }
}

TEST_CASE("argv: the adapter flags of each CLI, prompt last") {
    auto in = golden_inputs(CredentialMode::api_key);
    auto claude = agents::make_agent_profile(AgentKind::claude, in);
    CHECK(claude.argv == std::vector<std::string>{
                             "/usr/local/lib/corral-agents/node_modules/@anthropic-ai/claude-code/bin/claude.exe", "-p",
                             "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions",
                             "--append-system-prompt", "You are a careful engineer.", "--", "Reply with exactly DONE"});

    auto codex = agents::make_agent_profile(AgentKind::codex, in);
    REQUIRE(codex.argv.size() == 8);
    CHECK(codex.argv[0] == "/usr/bin/node");
    CHECK(codex.argv[2] == "exec");
    CHECK(codex.argv[3] == "--json");
    CHECK(codex.argv[4] == "--skip-git-repo-check");
    CHECK(codex.argv[5] == "--strict-config");
    CHECK(codex.argv[6] == "--");
    CHECK(codex.argv[7] == agents::compose_codex_prompt(in.system_prompt, in.prompt));
    CHECK(codex.stdin_null);

    auto pi = agents::make_agent_profile(AgentKind::pi, in);
    CHECK(pi.argv == std::vector<std::string>{
                         "/usr/bin/node", "/usr/local/lib/corral-agents/node_modules/@mariozechner/pi-coding-agent/dist/cli.js",
                         "-p", "--mode", "json", "--no-session", "--provider", "anthropic", "--append-system-prompt",
                         "/home/agent/.pi/agent/corral-system-prompt.md", "Reply with exactly DONE"});
    // The file the flag names holds the system prompt verbatim.
    auto* sp = find_file(pi, "corral-system-prompt.md");
    REQUIRE(sp);
    CHECK(sp->content == in.system_prompt);
    CHECK(sp->path == "home/.pi/agent/corral-system-prompt.md");

    SUBCASE("no system prompt: no flag, no file") {
        in.system_prompt.clear();
        auto c2 = agents::make_agent_profile(AgentKind::claude, in);
        CHECK(std::find(c2.argv.begin(), c2.argv.end(), "--append-system-prompt") == c2.argv.end());
        auto p2 = agents::make_agent_profile(AgentKind::pi, in);
        CHECK(std::find(p2.argv.begin(), p2.argv.end(), "--append-system-prompt") == p2.argv.end());
        CHECK(find_file(p2, "corral-system-prompt.md") == nullptr);
        auto x2 = agents::make_agent_profile(AgentKind::codex, in);
        CHECK(x2.argv.back() == in.prompt);
    }
    SUBCASE("a model is passed with --model") {
        in.model = "claude-sonnet-4-5";
        for (auto k : {AgentKind::claude, AgentKind::codex, AgentKind::pi}) {
            auto p = agents::make_agent_profile(k, in);
            auto it = std::find(p.argv.begin(), p.argv.end(), "--model");
            REQUIRE(it != p.argv.end());
            CHECK(*(it + 1) == "claude-sonnet-4-5");
        }
    }
    SUBCASE("prompts that look like flags stay prompts") {
        in.prompt = "--help me";
        CHECK(agents::make_agent_profile(AgentKind::claude, in).argv.back() == "--help me");
        CHECK(*(agents::make_agent_profile(AgentKind::claude, in).argv.end() - 2) == "--");
        CHECK(agents::make_agent_profile(AgentKind::pi, in).argv.back() == " --help me");
        in.prompt = "@/etc/shadow summarise";
        CHECK(agents::make_agent_profile(AgentKind::pi, in).argv.back() == " @/etc/shadow summarise");
    }
}

TEST_CASE("codex prompt composition puts the system prompt behind a delimiter") {
    CHECK(agents::compose_codex_prompt("", "do it") == "do it");
    std::string c = agents::compose_codex_prompt("be brief", "do it");
    CHECK(c.find("<corral-system-prompt>\nbe brief\n</corral-system-prompt>") == 0);
    CHECK(c.size() > 5);
    CHECK(c.substr(c.size() - 5) == "do it");
}

TEST_CASE("codex ChatGPT sentinels: structurally valid unsigned JWTs carrying the account claim") {
    auto in = golden_inputs(CredentialMode::oauth);
    in.chatgpt_account_id = "11111111-2222-4333-8444-555555555555";
    auto p = agents::make_agent_profile(AgentKind::codex, in);
    auto* f = find_file(p, ".codex/auth.json");
    REQUIRE(f);
    CHECK(f->mode == 0600);
    json auth = json::parse(f->content);
    CHECK(auth["auth_mode"] == "chatgpt");
    CHECK(auth["OPENAI_API_KEY"].is_null());
    CHECK(auth["tokens"]["account_id"] == in.chatgpt_account_id);
    for (const char* which : {"id_token", "access_token"}) {
        CAPTURE(which);
        std::string jwt = auth["tokens"][which];
        auto parts = split(jwt, '.');
        REQUIRE(parts.size() == 3);
        for (const auto& part : parts) {
            CHECK(!part.empty());
            CHECK(part.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
                  std::string::npos);
        }
        json header = json::parse(base64url_decode(parts[0]));
        CHECK(header["alg"] == "none");
        CHECK(header["typ"] == "JWT");
        json payload = json::parse(base64url_decode(parts[1]));
        CHECK(payload["exp"] == 4102444800LL);  // 2100-01-01: no refresh, ever
        CHECK(payload["https://api.openai.com/auth"]["chatgpt_account_id"] == in.chatgpt_account_id);
        CHECK(payload.dump().find("corral-sentinel-" + std::string(kRunId)) != std::string::npos);
    }
    SUBCASE("without a configured account id the id is a sentinel too") {
        in.chatgpt_account_id.clear();
        auto p2 = agents::make_agent_profile(AgentKind::codex, in);
        json a2 = json::parse(find_file(p2, ".codex/auth.json")->content);
        CHECK(a2["tokens"]["account_id"].get<std::string>().find("corral-sentinel-") != std::string::npos);
    }
}

TEST_CASE("claude OAuth sentinel: native shape, far-future expiry; API-key mode uses the env") {
    auto p = agents::make_agent_profile(AgentKind::claude, golden_inputs(CredentialMode::oauth));
    auto* f = find_file(p, ".claude/.credentials.json");
    REQUIRE(f);
    json c = json::parse(f->content)["claudeAiOauth"];
    CHECK(c["accessToken"].get<std::string>().rfind("sk-ant-oat01-corral-sentinel-", 0) == 0);
    CHECK(c["expiresAt"].get<long long>() == 4102444800000LL);
    CHECK(c["scopes"].size() >= 1);
    CHECK(env_of(p, "ANTHROPIC_API_KEY").empty());
    CHECK(env_of(p, "CLAUDE_CONFIG_DIR") == "/home/agent/.claude");
    for (const char* k : {"DISABLE_TELEMETRY", "DISABLE_ERROR_REPORTING", "DISABLE_AUTOUPDATER",
                          "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"})
        CHECK(env_of(p, k) == "1");

    auto k = agents::make_agent_profile(AgentKind::claude, golden_inputs(CredentialMode::api_key));
    CHECK(find_file(k, ".credentials.json") == nullptr);
    CHECK(env_of(k, "ANTHROPIC_API_KEY") == "sk-ant-api03-corral-sentinel-" + std::string(kRunId));
}

TEST_CASE("pi sentinels: never a shell command or a variable name; OAuth expiry far in the future") {
    auto p = agents::make_agent_profile(AgentKind::pi, golden_inputs(CredentialMode::api_key));
    json a = json::parse(find_file(p, ".pi/agent/auth.json")->content)["anthropic"];
    CHECK(a["type"] == "api_key");
    std::string key = a["key"];
    CHECK(key[0] != '!');
    CHECK(key.find('-') != std::string::npos);  // not a valid environment variable name
    CHECK(env_of(p, "PI_OFFLINE") == "1");
    CHECK(env_of(p, "PI_TELEMETRY") == "0");
    CHECK(env_of(p, "PI_CODING_AGENT_DIR") == "/home/agent/.pi/agent");

    auto o = agents::make_agent_profile(AgentKind::pi, golden_inputs(CredentialMode::oauth));
    json b = json::parse(find_file(o, ".pi/agent/auth.json")->content)["anthropic"];
    CHECK(b["type"] == "oauth");
    CHECK(b["expires"].get<long long>() == 4102444800000LL);
    CHECK(b["access"].get<std::string>().find("sk-ant-oat") == 0);  // pi then sends Bearer, as the gateway expects
}

TEST_CASE("sentinels are unique per run and carry no other run's value") {
    for (const auto& c : kCases) {
        CAPTURE(c.name);
        auto a = golden_inputs(c.mode), b = golden_inputs(c.mode);
        b.run_id = "20260101T000001Z-ffffff";
        auto pa = agents::make_agent_profile(c.kind, a);
        auto pb = agents::make_agent_profile(c.kind, b);
        std::string all_b;
        for (const auto& f : pb.files) all_b += f.content;
        for (const auto& [k, v] : pb.env) all_b += v;
        CHECK(all_b.find(agents::sentinel_for(a.run_id)) == std::string::npos);
        bool carries_own = all_b.find(agents::sentinel_for(b.run_id)) != std::string::npos;
        // Every kind has a credential somewhere (file or env) carrying the run's sentinel.
        CHECK(carries_own);
    }
}

TEST_CASE("run ids that could break a header are refused") {
    auto in = golden_inputs(CredentialMode::api_key);
    in.run_id = "abc\r\nx-api-key: 1";
    CHECK_THROWS_AS(agents::make_agent_profile(AgentKind::claude, in), UsageError);
    in.run_id = "";
    CHECK_THROWS_AS(agents::make_agent_profile(AgentKind::pi, in), UsageError);
}

TEST_CASE("write_agent_home writes every file with its mode and refuses symlinks") {
    char tmpl[] = "/tmp/corral-agent-home-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    fs::path run_dir = tmpl;
    auto p = agents::make_agent_profile(AgentKind::codex, golden_inputs(CredentialMode::oauth));
    agents::write_agent_home(p, run_dir, std::nullopt);
    for (const auto& f : p.files) {
        CAPTURE(f.path);
        CHECK(slurp(run_dir / f.path) == f.content);
        struct stat st {};
        REQUIRE(::stat((run_dir / f.path).c_str(), &st) == 0);
        CHECK((st.st_mode & 07777) == f.mode);
    }
    struct stat st {};
    REQUIRE(::stat((run_dir / "home").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0700);

    // A second write over the same home is fine (idempotent).
    CHECK_NOTHROW(agents::write_agent_home(p, run_dir, std::nullopt));

    // A symlink planted where a home directory goes is not followed.
    fs::path other = run_dir / "elsewhere";
    fs::create_directories(other);
    auto pi = agents::make_agent_profile(AgentKind::pi, golden_inputs(CredentialMode::api_key));
    fs::create_directories(run_dir / "home");
    fs::create_symlink(other, run_dir / "home" / ".pi");
    CHECK_THROWS_AS(agents::write_agent_home(pi, run_dir, std::nullopt), SysError);
    CHECK(fs::is_empty(other));
    fs::remove_all(run_dir);
}

TEST_CASE("installed_cli_version: the installed package's version, or none with the reason (never the pin)") {
    char tmpl[] = "/tmp/corral-agents-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    const std::string prefix = tmpl;
    auto in = golden_inputs(CredentialMode::api_key);
    in.agents_prefix = prefix;
    auto claude = agents::make_agent_profile(AgentKind::claude, in);
    auto codex = agents::make_agent_profile(AgentKind::codex, in);
    const std::string claude_pkg = prefix + "/node_modules/@anthropic-ai/claude-code/package.json";

    auto none = agents::installed_cli_version(claude, prefix);
    CHECK_FALSE(none.version.has_value());
    CHECK(none.problem.find(claude_pkg + ": cannot read") == 0);

    fs::create_directories(fs::path(claude_pkg).parent_path());
    std::ofstream(claude_pkg) << "{\"name\": \"@anthropic-ai/claude-code\", \"version\": \"9.9.9\"}";
    auto ok = agents::installed_cli_version(claude, prefix);
    CHECK(ok.version == std::optional<std::string>("9.9.9"));
    CHECK(ok.problem.empty());

    std::ofstream(claude_pkg) << "{\"name\": \"x\"}";
    auto no_version = agents::installed_cli_version(claude, prefix);
    CHECK_FALSE(no_version.version.has_value());
    CHECK(no_version.problem == claude_pkg + ": no \"version\" string");
    std::ofstream(claude_pkg) << "{not json";
    CHECK(agents::installed_cli_version(claude, prefix).problem == claude_pkg + ": not valid JSON");

    // codex starts through node: its package is named by the second argument.
    const std::string codex_pkg = prefix + "/node_modules/@openai/codex/package.json";
    fs::create_directories(fs::path(codex_pkg).parent_path());
    std::ofstream(codex_pkg) << "{\"version\": \"0.1.0\"}";
    CHECK(agents::installed_cli_version(codex, prefix).version == std::optional<std::string>("0.1.0"));

    // --rootfs IMAGE: the image's package is the one that runs, read inside
    // the image; a link there to the host's file is resolved inside the image.
    const std::string image = prefix + "/image";
    const std::string in_image = image + claude_pkg;
    fs::create_directories(fs::path(in_image).parent_path());
    std::ofstream(claude_pkg) << "{\"version\": \"9.9.9\"}";
    std::ofstream(in_image) << "{\"version\": \"7.7.7\"}";
    CHECK(agents::installed_cli_version(claude, prefix, image).version == std::optional<std::string>("7.7.7"));
    CHECK(agents::installed_cli_version(claude, prefix).version == std::optional<std::string>("9.9.9"));
    fs::remove(in_image);
    std::ofstream(prefix + "/host-only.json") << "{\"version\": \"9.9.9\"}";
    fs::create_symlink(prefix + "/host-only.json", in_image);
    auto linked = agents::installed_cli_version(claude, prefix, image);
    CHECK_FALSE(linked.version.has_value());
    CHECK(linked.problem.find("cannot read") != std::string::npos);
    fs::remove_all(prefix);
}
