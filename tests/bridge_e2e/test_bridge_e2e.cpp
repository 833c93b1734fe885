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

#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/process.hpp"
#include "tests/support/test_pki.hpp"

namespace corral::test::bridge {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kPlaceholder = "corral-sentinel-box-placeholder";

std::string missing_prerequisite() {
    if (!running_as_root()) return "needs root (creates sandboxes)";
    for (const char* p : {"curl", "node", "openssl", "rev"})
        if (!have_program(p)) return std::string(p) + " is not installed";
    if (!fs::exists(source_root() + "/node_modules/ws"))
        return "node_modules/ws missing (tools/install-npm-deps.sh) — the stand-in upstream needs it";
    return "";
}

namespace {



std::string sha256_hex(const std::string& s) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_Digest(s.data(), s.size(), md, &len, EVP_sha256(), nullptr);
    std::string out;
    for (unsigned i = 0; i < len; ++i) {
        out += "0123456789abcdef"[md[i] >> 4];
        out += "0123456789abcdef"[md[i] & 15];
    }
    return out;
}

// Lines between "== NAME" and the next "== " marker.
std::string section(const std::string& out, const std::string& name) {
    auto start = out.find("== " + name + "\n");
    if (start == std::string::npos) return "";
    start += name.size() + 4;
    auto end = out.find("\n== ", start);
    return out.substr(start, end == std::string::npos ? std::string::npos : end - start + 1);
}

struct World {
    std::string dir, org, workspace, gateway_toml, real_key;
    int upstream_port = 0, control_port = 0;
    std::unique_ptr<Background> upstream;
    std::unique_ptr<Background> daemon;
    ~World() {
        daemon.reset();
        upstream.reset();
        if (!dir.empty()) fs::remove_all(dir);
    }
};

void make_certificates(const std::string& d) {
    make_test_ca(d, "corral bridge test CA");
    make_test_leaf(d, "good", "DNS:api.anthropic.com,IP:127.0.0.1");
    // upstream.js also serves broken certificates on side ports; these tests don't use them.
    for (const char* other : {"expired", "selfsigned", "wronghost"}) {
        fs::copy_file(d + "/good.crt", d + "/" + std::string(other) + ".crt");
        fs::copy_file(d + "/good.key", d + "/" + std::string(other) + ".key");
    }
}

// The gateway sections, shared by the organisation (embedded gateway) and the daemon.
std::string gateway_sections(const World& w) {
    return "[gateway]\n"
           "listen_unix = \"" + w.dir + "/gw.sock\"\n"
           "ledger = \"" + w.dir + "/daemon-ledger.jsonl\"\n"
           "state_dir = \"" + w.dir + "/state\"\n"
           "[gateway.limits]\nread_timeout = \"5s\"\n"
           "[credentials.anthropic]\nkind = \"api_key\"\nfile = \"" + w.dir + "/anthropic.key\"\n"
           "[[grants]]\nhost = \"api.anthropic.com\"\nmode = \"inject\"\ncredential = \"anthropic\"\n"
           "routes = [\"POST /v1/messages\"]\n"
           "allow_private = true\n"
           "connect_to = \"127.0.0.1:" + std::to_string(w.upstream_port) + "\"\n"
           "upstream_ca_file = \"" + w.dir + "/ca.crt\"\n";
}

// What the box runs: every probe prints a "== NAME" section. With a READY
// marker it then waits (for the host-side scan) until /workspace/done exists.
const char* kBoxScript = R"SH(#!/bin/sh
port="$1"
echo "== granted"
curl -sS -w '\nstatus=%{http_code}\n' -H "x-api-key: $PLACEHOLDER" -H 'content-type: application/json' \
  -d '{"model":"m","max_tokens":1,"messages":[]}' https://api.anthropic.com/v1/messages
echo "== granted6"
curl -sS -o /dev/null -w 'status=%{http_code}\n' -x 'http://[::1]:3128' -H "x-api-key: $PLACEHOLDER" \
  -d '{}' https://api.anthropic.com/v1/messages
echo "== ungranted"
curl -sS -o /dev/null -w 'connect=%{http_connect}\n' https://ungranted.test/
echo "exit=$?"
echo "== direct4"
curl -sS --noproxy '*' --max-time 5 -k "https://127.0.0.1:$port/v1/messages"
echo "exit=$?"
echo "== direct6"
curl -sS --noproxy '*' --max-time 5 -k "https://[::1]:$port/v1/messages"
echo "exit=$?"
echo "== direct-proxy-port-host"
curl -sS --noproxy '*' --max-time 5 "http://127.0.0.1:$2/stats"
echo "exit=$?"
echo "== direct-name"
curl -sS --noproxy '*' --max-time 5 https://api.anthropic.com/v1/messages
echo "exit=$?"
if [ "$3" = node ]; then
  # The proxy from HTTPS_PROXY, and no CA of its own: node's default roots
  # plus NODE_EXTRA_CA_CERTS must make corral's leaf verify, as for a CLI.
  echo "== node"
  node /workspace/client.js '{"proxy":"env","host":"api.anthropic.com","port":443,"mode":"http","method":"POST","path":"/v1/messages","headers":{"x-api-key":"'"$PLACEHOLDER"'","content-type":"application/json"},"body":"{\"model\":\"m\"}"}'
  # The box tries to speak for another run: an announcement line of its own.
  echo "== forge"
  node -e '
const s = require("net").connect(3128, "127.0.0.1", () =>
  s.write("CORRAL-IDENTITY other/run-forged\nCONNECT forged.test:443 HTTP/1.1\r\nHost: forged.test:443\r\n\r\n"));
let d = "";
s.on("data", (c) => { d += c; });
s.on("error", (e) => { d += "error=" + e.code; });
s.on("close", () => console.log("first=" + d.split("\r\n")[0]));'
fi
echo "== ready"
while [ ! -e /workspace/done ]; do sleep 0.1; done
echo "== end"
)SH";

World& world() {
    static std::unique_ptr<World> w;
    if (w) return *w;
    w = std::make_unique<World>();
    char tmpl[] = "/tmp/corral-bridge-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    w->dir = tmpl;
    make_certificates(w->dir);
    RunOptions env;
    env.env["CORRAL_SOURCE_ROOT"] = source_root();
    w->upstream = std::make_unique<Background>(
        std::vector<std::string>{"node", source_root() + "/tests/gateway_e2e/upstream.js", w->dir}, env);
    if (!w->upstream->wait_for_stdout("\n", std::chrono::seconds(20))) throw std::runtime_error("upstream.js did not start");
    auto line = w->upstream->drain_stdout();
    auto ports = json::parse(line.substr(line.find('{')));
    w->upstream_port = ports["main"];
    w->control_port = ports["control"];

    w->real_key = "sk-ant-real-" + random_hex(40);
    write_file(w->dir + "/anthropic.key", w->real_key + "\n", 0600);
    w->org = w->dir + "/org";
    fs::create_directories(w->org + "/workers/w1");
    write_file(w->org + "/org.toml", "[engine]\nagent = \"claude\"\n" + gateway_sections(*w));
    write_file(w->org + "/workers/w1/worker.toml", "description = \"bridge e2e worker\"\n");
    w->gateway_toml = w->dir + "/gateway.toml";
    write_file(w->gateway_toml, gateway_sections(*w));
    // The workspace: only the scripts, nothing secret. Readable by the agent UID.
    w->workspace = w->dir + "/ws";
    fs::create_directories(w->workspace);
    ::chmod(w->dir.c_str(), 0711);
    ::chmod(w->workspace.c_str(), 0777);
    write_file(w->workspace + "/box.sh", kBoxScript, 0755);
    fs::copy_file(source_root() + "/tests/gateway_e2e/client.js", w->workspace + "/client.js");
    ::chmod((w->workspace + "/client.js").c_str(), 0644);
    return *w;
}

json upstream_stats() {
    auto r = run({"curl", "-sS", "--noproxy", "*", "http://127.0.0.1:" + std::to_string(world().control_port) + "/stats"});
    return json::parse(r.out);
}

std::vector<json> ledger(const std::string& path) {
    std::vector<json> out;
    std::istringstream in(read_file(path));
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(json::parse(line));
    return out;
}

pid_t parent_of(pid_t pid) {
    std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    auto close = stat.rfind(')');
    if (close == std::string::npos) return -1;
    std::istringstream rest(stat.substr(close + 2));
    std::string state;
    pid_t ppid = -1;
    rest >> state >> ppid;
    return ppid;
}

// Whether `needle` is anywhere in the readable memory of `pid` (as root).
bool memory_contains(pid_t pid, const std::string& needle) {
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    int mem = ::open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
    if (mem < 0) throw std::runtime_error("open /proc/" + std::to_string(pid) + "/mem: " + std::strerror(errno));
    bool found = false;
    for (std::string line; !found && std::getline(maps, line);) {
        unsigned long long lo = 0, hi = 0;
        char perms[8] = {};
        if (std::sscanf(line.c_str(), "%llx-%llx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r') continue;
        if (line.find("[vvar") != std::string::npos || line.find("[vsyscall]") != std::string::npos) continue;
        std::string region(hi - lo, '\0');
        ssize_t n = ::pread(mem, region.data(), region.size(), static_cast<off_t>(lo));
        if (n > 0 && std::string_view(region.data(), static_cast<std::size_t>(n)).find(needle) != std::string_view::npos)
            found = true;
    }
    ::close(mem);
    return found;
}

// The pid (host view) of a process of the box, found by its unique argv.
pid_t find_box_process(const std::string& marker) {
    for (const auto& e : fs::directory_iterator("/proc")) {
        std::string name = e.path().filename();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::string cmdline = read_file(e.path().string() + "/cmdline");
        if (cmdline.find(marker) != std::string::npos && cmdline.find("box.sh") != std::string::npos &&
            cmdline.rfind("/bin/sh", 0) == 0)
            return static_cast<pid_t>(std::stoi(name));
    }
    return -1;
}

struct BoxRun {
    std::string out, err, run_dir, run_id;
    int exit_code = -1;
    std::string environ_text;       // the box shell's /proc/PID/environ, read from the host
    std::string scan_hits;          // grep -rl of the real key over the box's tree (host side)
    int box_root_processes = 0;     // the init and the reaper, whose memory was searched
    std::string memory_hits;        // "<pid>" for each of them holding the real key in memory
    json record;
};

// Runs box.sh in a sandbox through `extra` options (--gateway ...), scanning
// the live box from the host at its "== ready" marker.
BoxRun run_box(const std::string& label, const std::vector<std::string>& extra, bool with_node) {
    World& w = world();
    BoxRun b;
    b.run_dir = w.dir + "/run-" + label;
    fs::remove(w.workspace + "/done");
    std::string marker = "marker-" + label + "-" + random_hex(8);
    std::vector<std::string> argv = {corral_bin(), "run", "--config", w.org, "--worker", "w1", "--rootfs", "host",
                                     "--workspace", w.workspace, "--run-dir", b.run_dir, "--state-dir",
                                     w.dir + "/runs-state", "--timeout", "120s", "--env",
                                     std::string("PLACEHOLDER=") + kPlaceholder};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), {"--", "/bin/sh", "/workspace/box.sh", std::to_string(w.upstream_port),
                             std::to_string(w.control_port), with_node ? "node" : "no-node", marker});
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = w.dir + "/runs-state";
    Background corral(argv, o);
    bool ready = corral.wait_for_stdout("== ready\n", std::chrono::seconds(90));
    if (ready) {
        pid_t pid = find_box_process(marker);
        if (pid > 0) {
            b.environ_text = read_file("/proc/" + std::to_string(pid) + "/environ");
            // The box's own root processes (reaper = parent, init = its
            // parent) are copies of corral made at clone time: the real key
            // must not be anywhere in their memory.
            for (pid_t p = parent_of(pid); p > 0 && b.box_root_processes < 2; p = parent_of(p)) {
                ++b.box_root_processes;
                if (memory_contains(p, w.real_key)) b.memory_hits += std::to_string(p) + " ";
            }
            // The box's whole visible tree except the host's read-only /usr
            // (bound unchanged; corral puts nothing there) and the kernel's
            // virtual file systems.
            // Also the host-side routing (connect_to's address, the org
            // directory): the box must not learn where its traffic really goes.
            auto r = run({"grep", "-rlsF", "--exclude-dir=proc", "--exclude-dir=sys", "--exclude-dir=dev",
                          "--exclude-dir=usr", "-e", w.real_key, "-e", "127.0.0.1:" + std::to_string(w.upstream_port),
                          "-e", w.org, "/proc/" + std::to_string(pid) + "/root/"},
                         RunOptions{std::chrono::seconds(120), {}, {}, {}});
            b.scan_hits = r.exit_code == 1 ? "" : "exit " + std::to_string(r.exit_code) + ": " + r.out + r.err;
        } else {
            b.scan_hits = "box process not found";
        }
    }
    write_file(w.workspace + "/done", "");
    // Let corral finish on its own (teardown verified), bounded.
    for (int i = 0; i < 300 && ::kill(corral.pid(), 0) == 0; ++i) {
        int st = 0;
        if (::waitpid(corral.pid(), &st, WNOHANG) == corral.pid()) {
            b.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    b.out = corral.drain_stdout();
    b.record = json::parse(read_file(b.run_dir + "/run.json"), nullptr, false);
    if (b.record.is_object()) b.run_id = b.record.value("id", "");
    b.err = read_file(b.run_dir + "/stderr.log");
    return b;
}

void check_no_secret_anywhere(const BoxRun& b) {
    const World& w = world();
    CHECK(b.box_root_processes == 2);
    CHECK_MESSAGE(b.memory_hits == "", "the real key is in the memory of the box's root processes " << b.memory_hits);
    CHECK(b.environ_text.find("PATH=") != std::string::npos);  // the environ was really read
    CHECK(b.environ_text.find(w.real_key) == std::string::npos);
    CHECK(b.environ_text.find(":" + std::to_string(w.upstream_port)) == std::string::npos);
    CHECK(b.environ_text.find(w.org) == std::string::npos);
    CHECK(b.scan_hits == "");
    CHECK(b.out.find(w.real_key) == std::string::npos);
    auto r = run({"grep", "-rlsF", "-e", w.real_key, b.run_dir});
    CHECK_MESSAGE(r.exit_code == 1, "real key found in the run dir: " << r.out);
}

// The variables the bridge gives every box (issue: "the box's environment"),
// as the box's shell really had them, read from the host.
void check_box_environment(const BoxRun& b) {
    std::map<std::string, std::string> env;
    std::istringstream in(b.environ_text);
    for (std::string kv; std::getline(in, kv, '\0');)
        if (auto eq = kv.find('='); eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    INFO("environ: " << b.environ_text);
    const std::string proxy = "http://127.0.0.1:3128";
    for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
                             "npm_config_proxy", "npm_config_https_proxy", "PIP_PROXY"}) {
        CAPTURE(name);
        CHECK(env[name] == proxy);
    }
    for (const char* name : {"NO_PROXY", "no_proxy"}) {
        CAPTURE(name);
        std::string list = "," + env[name] + ",";
        for (const char* loopback : {"localhost", "localhost.", "127.0.0.1", "::1", "[::1]"}) {
            CAPTURE(loopback);
            CHECK(list.find("," + std::string(loopback) + ",") != std::string::npos);
        }
    }
    CHECK(env["GIT_CONFIG_COUNT"] == "1");
    CHECK(env["GIT_CONFIG_KEY_0"] == "http.proxy");
    CHECK(env["GIT_CONFIG_VALUE_0"] == proxy);
    CHECK(env["NODE_USE_ENV_PROXY"] == "1");
    // corral's CA alone for node (added to its own roots); the whole store, CA
    // included, for everyone else.
    CHECK(env["NODE_EXTRA_CA_CERTS"] == "/etc/corral/ca.crt");
    for (const char* name : {"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
                             "CODEX_CA_CERTIFICATE", "PIP_CERT"}) {
        CAPTURE(name);
        CHECK(env[name] == "/etc/ssl/certs/ca-certificates.crt");
    }
}

void check_box_probes(const BoxRun& b, const std::string& ledger_path) {
    const World& w = world();
    INFO("box output:\n" << b.out << "\nstderr.log:\n" << b.err);
    REQUIRE(b.exit_code == 0);
    REQUIRE(!b.run_id.empty());
    std::string identity = "w1/" + b.run_id;

    // Granted: the stand-in answered 200 and echoed the hash of the REAL key.
    std::string granted = section(b.out, "granted");
    CHECK(granted.find("status=200") != std::string::npos);
    CHECK(granted.find("sha256:" + sha256_hex(w.real_key)) != std::string::npos);
    CHECK(granted.find("sha256:" + sha256_hex(kPlaceholder)) == std::string::npos);

    // The bridge's IPv6 listener ([::1]:3128) serves the same gateway.
    if (fs::exists("/proc/net/if_inet6"))
        CHECK(section(b.out, "granted6").find("status=200") != std::string::npos);

    // Ungranted: 403 from the gateway, ledger line with the run's identity.
    CHECK(section(b.out, "ungranted").find("connect=403") != std::string::npos);
    bool refused_line = false;
    for (const auto& l : ledger(ledger_path))
        if (l.value("host", "") == "ungranted.test" && l.value("identity", "") == identity &&
            l.value("decision", "") == "refuse" && l.value("status", 0) == 403)
            refused_line = true;
    CHECK_MESSAGE(refused_line, "ledger " << ledger_path << " has the refusal for " << identity);

    // Direct connections that bypass the proxy fail: the box's network has
    // nothing but the bridge's listeners.
    for (const char* probe : {"direct4", "direct6", "direct-proxy-port-host", "direct-name"}) {
        std::string s = section(b.out, probe);
        INFO(probe << ": " << s);
        CHECK(s.find("exit=0") == std::string::npos);
        CHECK(s.find("exit=") != std::string::npos);
    }
    check_box_environment(b);

    // A box that announces another identity gets a 400: the identity is the
    // listener the connection came in on, and the announcement is never read
    // from the box. Nothing is written in anyone else's name.
    if (b.out.find("== forge\n") != std::string::npos) {
        CHECK(section(b.out, "forge").find("first=HTTP/1.1 400") != std::string::npos);
        for (const auto& l : ledger(ledger_path)) {
            CHECK(l.value("identity", "").find("other") == std::string::npos);
            CHECK(l.value("host", "") != "forged.test");
        }
    }
}

}  // namespace

TEST_CASE("a command with no --config: embedded gateway without grants refuses with 403 and a ledger line") {
    World& w = world();
    std::string run_dir = w.dir + "/run-nogrants";
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
    CHECK(upstream_stats()["requests"] == 0);
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
    CHECK(b.record["gateway"]["requests"] == 5);   // three injected requests, two refusals (ungranted, forged)
    CHECK(b.record["gateway"]["refusals"] == 2);
    CHECK(b.record["gateway"]["secrets_reflected"] == 0);  // this upstream reflects nothing
    CHECK(b.record["identity"] == "w1/" + b.run_id);
    check_no_secret_anywhere(b);
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

// A refused agent run: no output log of either kind, no agent home.
void check_agent_never_started(const std::string& run_dir) {
    CHECK(!fs::exists(run_dir + "/stdout.log"));
    CHECK(!fs::exists(run_dir + "/stdout.jsonl"));
    CHECK(!fs::exists(run_dir + "/home"));
}

// Every entry of a tree (path, mode, link target or content hash), sorted: equal
// before and after a run means the run left the tree untouched.
std::string tree_digest(const std::string& root) {
    std::vector<std::string> lines;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
        struct stat st {};
        ::lstat(e.path().c_str(), &st);
        std::string line = e.path().string().substr(root.size()) + " " + std::to_string(st.st_mode) + " ";
        if (e.is_symlink())
            line += "-> " + fs::read_symlink(e.path()).string();
        else if (e.is_regular_file())
            line += sha256_hex(read_file(e.path()));
        lines.push_back(line);
    }
    std::sort(lines.begin(), lines.end());
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
}

// A busybox image whose CA bundle is laid out the way one distribution family does it.
std::string make_image(const std::string& dir, const std::string& layout) {
    fs::create_directories(dir + "/bin");
    fs::create_directories(dir + "/etc");
    fs::copy_file("/bin/busybox", dir + "/bin/busybox");
    ::chmod((dir + "/bin/busybox").c_str(), 0755);
    for (const char* applet : {"sh", "cat", "env", "echo"}) fs::create_symlink("busybox", dir + "/bin/" + applet);
    write_file(dir + "/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
    write_file(dir + "/etc/group", "root:x:0:\n");
    if (layout == "debian") {
        fs::create_directories(dir + "/etc/ssl/certs");
        write_file(dir + "/etc/ssl/certs/ca-certificates.crt", "IMAGE-ROOTS-debian\n");
        fs::create_symlink("certs/ca-certificates.crt", dir + "/etc/ssl/cert.pem");
    } else if (layout == "rhel") {
        // Fedora/RHEL: one real file, reached by absolute links and a linked directory.
        fs::create_directories(dir + "/etc/pki/ca-trust/extracted/pem");
        write_file(dir + "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "IMAGE-ROOTS-rhel\n");
        fs::create_directories(dir + "/etc/pki/tls/certs");
        fs::create_symlink("/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", dir + "/etc/pki/tls/certs/ca-bundle.crt");
        fs::create_symlink("/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", dir + "/etc/pki/tls/cert.pem");
        fs::create_directories(dir + "/etc/ssl");
        fs::create_symlink("../pki/tls/certs", dir + "/etc/ssl/certs");
    }
    return dir;
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
    auto t0 = std::chrono::steady_clock::now();
    auto r = run({corral_bin(), "run", "--config", org, "--worker", "wl", "--run-dir", run_dir, "--", "/bin/sh", "-c", script}, o);
    auto took = std::chrono::steady_clock::now() - t0;
    INFO(r.out << r.err);
    CHECK(r.exit_code == 124);
    CHECK(r.err.find("corral run: deadline of 2s reached; sandbox killed") != std::string::npos);
    CHECK(took < std::chrono::milliseconds(4500));
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
