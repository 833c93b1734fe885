#include "tests/agents_e2e/world.hpp"

#include <arpa/inet.h>
#include <sched.h>
#include <sys/mount.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "agents/agent_profile.hpp"
#include "tests/support/ledger.hpp"
#include "tests/support/test_pki.hpp"

namespace corral::test::agents {
namespace {

namespace fs = std::filesystem;

// The test CA and one leaf naming every real host the CLIs use.
void make_certificates(const std::string& d) {
    make_test_ca(d, "corral agents e2e test CA");
    make_test_leaf(d, "standin", "DNS:api.anthropic.com,DNS:chatgpt.com,DNS:api.openai.com");
}

std::string toml_str(const std::string& s) { return "\"" + s + "\""; }

// The worker's own grant (worker.toml, so scoped to it by the loader): the
// routes and credential its profile implies, taken from implied_grants, plus
// what the stand-in needs (connect_to on loopback, allow_private). It replaces
// the implied grant for the same host:port, as an operator's would.
std::string grant_for(const World& w, const WorkerSpec& spec, Org org) {
    std::string out;
    for (const auto& g : ::corral::agents::implied_grants(spec.kind, credential_mode(spec.kind, org), spec.name)) {
        std::string routes;
        for (const auto& r : g.routes) routes += (routes.empty() ? "" : ", ") + toml_str(r.text);
        out += "[[grants]]\nhost = " + toml_str(g.host.text()) + "\nmode = \"inject\"\ncredential = " + toml_str(g.credential) +
               "\nroutes = [" + routes + "]\nallow_private = true\nconnect_to = \"127.0.0.1:" +
               std::to_string(w.standin_port) + "\"\n";
    }
    return out;
}

World* the_world = nullptr;

World& build_world() {
    static World w;
    char tmpl[] = "/tmp/corral-agents-e2e-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    w.dir = tmpl;
    ::chmod(w.dir.c_str(), 0755);
    w.test_ca = w.dir + "/ca.crt";
    w.state_dir = w.dir + "/state";
    make_certificates(w.dir);

    w.anthropic_key = "sk-ant-api03-REALKEY-" + random_hex(32);
    w.anthropic_oauth = "sk-ant-oat01-REALTOKEN-" + random_hex(32);
    w.openai_token = "REAL-CHATGPT-TOKEN-" + random_hex(32);
    w.openai_key = "sk-proj-REALKEY-" + random_hex(32);
    w.chatgpt_account = "acct-e2e-" + random_hex(8);
    write_file(w.dir + "/anthropic.key", w.anthropic_key + "\n", 0600);
    write_file(w.dir + "/anthropic.oauth", w.anthropic_oauth + "\n", 0600);
    write_file(w.dir + "/openai.token", w.openai_token + "\n", 0600);
    write_file(w.dir + "/openai.key", w.openai_key + "\n", 0600);

    RunOptions env;
    env.env["CORRAL_SOURCE_ROOT"] = source_root();
    env.env["STANDIN_CHATGPT_ACCOUNT"] = w.chatgpt_account;
    env.env["STANDIN_DNS_TRIPWIRE"] = "1";
    w.standin = std::make_unique<Background>(
        std::vector<std::string>{"node", source_root() + "/tests/agents_e2e/standin.js", w.dir}, env);
    if (!w.standin->wait_for_stdout("\n", std::chrono::seconds(20)))
        throw std::runtime_error("standin.js did not start");
    auto line = w.standin->drain_stdout();
    auto json_start = line.find('{');
    if (line.rfind("ready ", 0) != 0 || json_start == std::string::npos)
        throw std::runtime_error("standin.js said: " + line);
    auto ports = nlohmann::json::parse(line.substr(json_start));
    w.standin_port = ports.at("main").get<int>();
    w.control_port = ports.at("control").get<int>();

    w.org = w.dir + "/org";
    w.org_alt = w.dir + "/org-alt";
    for (Org org : {Org::primary, Org::alternate}) {
        // [gateway] ledger is the daemon's; an embedded gateway writes the run dir's ledger.jsonl.
        auto d = org_dir(w, org);
        write_org(w, org, d, "ledger = " + toml_str(d + "/ledger.jsonl") + "\nstate_dir = " + toml_str(w.state_dir) + "\n");
    }
    the_world = &w;
    return w;
}

}  // namespace

const char* org_name(Org org) { return org == Org::primary ? "primary" : "alternate"; }

const std::vector<WorkerSpec>& workers() {
    static const std::vector<WorkerSpec> specs = {
        {"claude", config::AgentKind::claude},
        {"codex", config::AgentKind::codex},
        {"pi", config::AgentKind::pi},
    };
    return specs;
}

::corral::agents::CredentialMode credential_mode(config::AgentKind kind, Org org) {
    bool oauth = kind == config::AgentKind::codex ? org == Org::primary : org == Org::alternate;
    return oauth ? ::corral::agents::CredentialMode::oauth : ::corral::agents::CredentialMode::api_key;
}

std::string model_host(config::AgentKind kind, Org org) {
    if (kind != config::AgentKind::codex) return "api.anthropic.com";
    return org == Org::primary ? "chatgpt.com" : "api.openai.com";
}

std::string org_dir(const World& w, Org org) { return org == Org::primary ? w.org : w.org_alt; }

std::string real_secret(const World& w, config::AgentKind kind, Org org) {
    if (kind == config::AgentKind::codex) return org == Org::primary ? w.openai_token : w.openai_key;
    return org == Org::primary ? w.anthropic_key : w.anthropic_oauth;
}

World::~World() {
    standin.reset();
    if (!dir.empty() && !std::getenv("CORRAL_KEEP_TEST_DIR")) fs::remove_all(dir);
}

std::string missing_prerequisite() {
    for (const char* p : {"openssl", "curl", "node", "setpriv"})
        if (!have_program(p)) return std::string(p) + " not found in PATH";
    if (!fs::exists(source_root() + "/node_modules/ws/package.json"))
        return "node package ws missing: run tools/install-npm-deps.sh";
    for (const auto& spec : workers()) {
        ::corral::agents::AgentInputs in;
        in.run_id = "probe";
        auto p = ::corral::agents::make_agent_profile(spec.kind, in);
        for (const auto& a : p.argv)
            if (!a.empty() && a[0] == '/' && !fs::exists(a))
                return "agent CLI missing: " + a + " (run tools/install-npm-deps.sh)";
    }
    if (!fs::exists(corral_bin())) return "corral binary not built: " + corral_bin();
    return "";
}

std::string isolate_network() {
    if (::unshare(CLONE_NEWNET | CLONE_NEWNS) != 0)
        return std::string("unshare(CLONE_NEWNET|CLONE_NEWNS): ") + std::strerror(errno);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        return std::string("mount(/, MS_REC|MS_PRIVATE): ") + std::strerror(errno);
    // lo, and a veth pair whose far end counts every packet sent anywhere but
    // loopback (the default route points at it; no IPv6 on it, so nothing is
    // sent unprompted): a dial to a real address shows up as ARP on the counter.
    const std::vector<std::vector<std::string>> steps = {
        {"ip", "link", "set", "lo", "up"},
        {"ip", "link", "add", "corral-tw0", "type", "veth", "peer", "name", "corral-tw1"},
        {"sh", "-c", "echo 1 >/proc/sys/net/ipv6/conf/corral-tw0/disable_ipv6 && "
                     "echo 1 >/proc/sys/net/ipv6/conf/corral-tw1/disable_ipv6"},
        {"ip", "addr", "add", "192.0.2.1/32", "dev", "corral-tw0"},
        {"ip", "link", "set", "corral-tw1", "up"},
        {"ip", "link", "set", "corral-tw0", "up"},
        {"ip", "route", "add", "default", "dev", "corral-tw0"},
    };
    for (const auto& step : steps) {
        auto r = run(step);
        if (r.exit_code != 0) return step[0] + " " + step[1] + " " + step[2] + ": " + r.err;
    }
    char tmpl[] = "/tmp/corral-agents-e2e-resolv-XXXXXX";
    int fd = ::mkstemp(tmpl);
    if (fd < 0) return std::string("mkstemp: ") + std::strerror(errno);
    ::close(fd);
    write_file(tmpl, "# corral agents e2e: every lookup goes to the stand-in's tripwire\nnameserver 127.0.0.1\n");
    if (::mount(tmpl, "/etc/resolv.conf", nullptr, MS_BIND, nullptr) != 0)
        return std::string("bind ") + tmpl + " over /etc/resolv.conf: " + std::strerror(errno);
    ::unlink(tmpl);  // the bind mount keeps it alive
    return "";
}

World& world() {
    if (the_world) return *the_world;
    // Built once: a failed build is reported again to every later test, not retried.
    static std::string failure;
    if (!failure.empty()) throw std::runtime_error(failure);
    try {
        return build_world();
    } catch (const std::exception& e) {
        failure = e.what();
        throw;
    }
}

void write_org(const World& w, Org org, const std::string& dir, const std::string& gateway_table) {
    fs::create_directories(dir);
    write_file(dir + "/org.toml", "rootfs = \"host\"\n[engine]\nchatgpt_account_id = " + toml_str(w.chatgpt_account) +
                                      "\n[sandbox]\ntimeout = \"5m\"\n" + gateway_sections(w, org, gateway_table));
    for (const auto& spec : workers()) {
        fs::create_directories(dir + "/workers/" + spec.name);
        write_file(dir + "/workers/" + spec.name + "/worker.toml",
                   "agent = " + toml_str(std::string(config::to_string(spec.kind))) + "\n" + grant_for(w, spec, org));
    }
}

std::string gateway_sections(const World& w, Org org, const std::string& gateway_table) {
    std::string out = "[gateway]\n" + gateway_table + "upstream_ca_file = " + toml_str(w.test_ca) + "\n";
    if (org == Org::primary) {
        out += "[credentials.anthropic]\nkind = \"api_key\"\nfile = " + toml_str(w.dir + "/anthropic.key") +
               "\n[credentials.openai]\nkind = \"oauth_token\"\nfile = " + toml_str(w.dir + "/openai.token") + "\n";
    } else {
        // OpenAI reads only `authorization: Bearer`; the api_key kind's default
        // template is Anthropic's x-api-key, so an OpenAI key needs this template
        // (the stand-in, like the real API, answers 401 to an x-api-key).
        out += "[credentials.anthropic]\nkind = \"oauth_token\"\nfile = " + toml_str(w.dir + "/anthropic.oauth") +
               "\nanthropic_beta = \"oauth-2025-04-20\"\n[credentials.openai]\nkind = \"api_key\"\nfile = " +
               toml_str(w.dir + "/openai.key") + "\ntemplate = { \"authorization\" = \"Bearer {key}\" }\n";
    }
    return out;
}

std::uint64_t off_host_packets() {
    auto r = run({"ip", "-j", "-s", "link", "show", "dev", "corral-tw1"});
    if (r.exit_code != 0) throw std::runtime_error("ip -s link show corral-tw1: " + r.err);
    return nlohmann::json::parse(r.out).at(0).at("stats64").at("rx").at("packets").get<std::uint64_t>();
}

nlohmann::json standin_seen() {
    auto& w = world();
    auto r = run({"curl", "-sS", "--noproxy", "*", "http://127.0.0.1:" + std::to_string(w.control_port) + "/stats"});
    return nlohmann::json::parse(r.out).at("seen");
}

std::vector<nlohmann::json> ledger_lines(const std::string& path) { return read_ledger(path); }

bool ledger_has_line(const std::string& path, const std::function<bool(const nlohmann::json&)>& wanted) {
    return !wait_for_ledger_lines(path, wanted).empty();
}

int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    int port = ntohs(a.sin_port);
    ::close(fd);
    return port;
}



std::vector<nlohmann::json> json_lines(const std::string& text) {
    std::vector<nlohmann::json> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] != '{') continue;
        try {
            out.push_back(nlohmann::json::parse(line));
        } catch (const std::exception&) {
        }
    }
    return out;
}

// The CLI's own "I finished, and the answer is DONE" record in its JSON output.
bool finished_with_done(config::AgentKind kind, const std::string& out) {
    for (const auto& j : json_lines(out)) {
        switch (kind) {
        case config::AgentKind::claude:
            if (j.value("type", "") == "result" && j.value("subtype", "") == "success" &&
                j.value("is_error", true) == false && j.value("result", "") == "DONE")
                return true;
            break;
        case config::AgentKind::codex:
            if (j.value("type", "") == "item.completed" && j.contains("item") &&
                j["item"].value("type", "") == "agent_message" && j["item"].value("text", "") == "DONE")
                return true;
            break;
        case config::AgentKind::pi:
            if (j.value("type", "") == "agent_end" && j.contains("messages")) {
                for (const auto& m : j["messages"]) {
                    if (m.value("role", "") != "assistant" || !m.contains("content")) continue;
                    for (const auto& c : m["content"])
                        if (c.value("type", "") == "text" && c.value("text", "") == "DONE") return true;
                }
            }
            break;
        }
    }
    return false;
}

}  // namespace corral::test::agents
