// tests/bridge_e2e/world.cpp — the loopback world the bridge tests share
// (see world.hpp) and the box run that probes it.
#include <doctest/doctest.h>

#include <dirent.h>
#include <fcntl.h>
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

#include "tests/bridge_e2e/world.hpp"

namespace corral::test::bridge {


namespace fs = std::filesystem;


std::string missing_prerequisite() {
    if (!running_as_root()) return "needs root (creates sandboxes)";
    for (const char* p : {"curl", "node", "openssl", "rev"})
        if (!have_program(p)) return std::string(p) + " is not installed";
    if (!fs::exists(source_root() + "/node_modules/ws"))
        return "node_modules/ws missing (tools/install-npm-deps.sh) — the stand-in upstream needs it";
    return "";
}





// Lines between "== NAME" and the next "== " marker.
std::string section(const std::string& out, const std::string& name) {
    auto start = out.find("== " + name + "\n");
    if (start == std::string::npos) return "";
    start += name.size() + 4;
    auto end = out.find("\n== ", start);
    return out.substr(start, end == std::string::npos ? std::string::npos : end - start + 1);
}


namespace {

void make_certificates(const std::string& d) {
    make_test_ca(d, "corral bridge test CA");
    make_test_leaf(d, "good", "DNS:api.anthropic.com,IP:127.0.0.1");
    // upstream.js also serves broken certificates on side ports; these tests don't use them.
    for (const char* other : {"expired", "selfsigned", "wronghost"}) {
        fs::copy_file(d + "/good.crt", d + "/" + std::string(other) + ".crt");
        fs::copy_file(d + "/good.key", d + "/" + std::string(other) + ".key");
    }
}

// The git server's credential and grant: an inject grant whose real token
// the gateway adds as a bearer (the box's git sends none).
std::string git_sections(const World& w) {
    if (w.git_port == 0) return "";
    return "[credentials.gitkey]\nkind = \"api_key\"\nfile = \"" + w.dir + "/git.token\"\n"
           "template = { \"authorization\" = \"Bearer {key}\" }\n"
           "[[grants]]\nhost = \"git.capture.test\"\nmode = \"inject\"\ncredential = \"gitkey\"\n"
           "allow_private = true\n"
           "connect_to = \"127.0.0.1:" + std::to_string(w.git_port) + "\"\n"
           "upstream_ca_file = \"" + w.dir + "/ca.crt\"\n";
}

// A bare repository with one file (hello.txt) under DIR/git, and its server.
void start_git_server(World& w) {
    if (!have_program("git")) return;
    const std::string g = w.dir + "/git";
    fs::create_directories(g + "/tree");
    write_file(g + "/tree/hello.txt", "hello-from-git\n");
    for (const auto& step : std::vector<std::vector<std::string>>{
             {"git", "-C", g + "/tree", "init", "-q"},
             {"git", "-C", g + "/tree", "add", "hello.txt"},
             {"git", "-C", g + "/tree", "-c", "user.name=t", "-c", "user.email=t@test", "commit", "-q", "-m", "init"},
             {"git", "clone", "-q", "--bare", g + "/tree", g + "/repos/repo.git"}})
        if (run(step).exit_code != 0) throw std::runtime_error("git: could not make the test repository");
    make_test_leaf(w.dir, "git", "DNS:git.capture.test");
    w.git_token = "git-real-" + random_hex(32);
    write_file(w.dir + "/git.token", w.git_token + "\n", 0600);
    // Its request lines in DIR/git-standin.log (for a failure's diagnosis).
    w.git = std::make_unique<Background>(std::vector<std::string>{
        "sh", "-c", "exec python3 -u \"$0\" --cert \"$1\" --key \"$2\" --root \"$3\" --token-file \"$4\" 2>>\"$5\"",
        source_root() + "/tests/support/git_https_standin.py", w.dir + "/git.crt", w.dir + "/git.key", g + "/repos",
        w.dir + "/git.token", w.dir + "/git-standin.log"});
    if (!w.git->wait_for_stdout("port ", std::chrono::seconds(20))) throw std::runtime_error("the git stand-in did not start");
    auto line = w.git->drain_stdout();
    w.git_port = std::atoi(line.c_str() + line.find("port ") + 5);
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
           "routes = [\"POST /v1/messages\", \"GET /ws\"]\n"
           "allow_private = true\n"
           "connect_to = \"127.0.0.1:" + std::to_string(w.upstream_port) + "\"\n"
           "upstream_ca_file = \"" + w.dir + "/ca.crt\"\n" + git_sections(w);
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

}  // namespace

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

    start_git_server(*w);
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

std::string test_ca_dir() {
    World& w = world();
    const std::string dir = w.dir + "/box-ca";
    if (!fs::exists(dir + "/ca.crt")) {
        fs::create_directories(dir);
        fs::copy_file(w.dir + "/ca.crt", dir + "/ca.crt");
        ::chmod(dir.c_str(), 0755);
        ::chmod((dir + "/ca.crt").c_str(), 0644);
    }
    return dir;
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

namespace {

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

// AddressSanitizer's shadow memory (x86_64: LowShadow from 0x7fff8000,
// ShadowGap, HighShadow up to 0x10007fff8000): terabytes mapped readable,
// holding only ASan's bookkeeping about other memory, never a copy of any
// data. Skipped in a sanitizer build, where the box's root processes (copies
// of corral) carry it; everything else readable is scanned.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CORRAL_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define CORRAL_TEST_ASAN 1
#endif
bool in_asan_shadow(unsigned long long lo, unsigned long long hi) {
#ifdef CORRAL_TEST_ASAN
    return lo >= 0x7fff8000ULL && hi <= 0x10007fff8000ULL;
#else
    (void)lo, (void)hi;
    return false;
#endif
}

// Whether `needle` is in [lo, hi) of `mem` (/proc/PID/mem), read a MiB at a
// time; each read keeps the previous one's last needle.size() - 1 bytes so a
// copy across two reads is still found.
bool region_contains(int mem, unsigned long long lo, unsigned long long hi, const std::string& needle) {
    constexpr std::size_t kChunk = 1 << 20;
    const std::size_t keep = needle.size() - 1;
    std::string window;
    for (unsigned long long at = lo; at < hi;) {
        std::size_t want = static_cast<std::size_t>(std::min<unsigned long long>(kChunk, hi - at));
        std::size_t old = window.size();
        window.resize(old + want);
        ssize_t n = ::pread(mem, window.data() + old, want, static_cast<off_t>(at));
        if (n <= 0) return false;
        window.resize(old + static_cast<std::size_t>(n));
        if (window.find(needle) != std::string::npos) return true;
        if (window.size() > keep) window.erase(0, window.size() - keep);
        at += static_cast<unsigned long long>(n);
    }
    return false;
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
        if (in_asan_shadow(lo, hi)) continue;
        found = region_contains(mem, lo, hi, needle);
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


}  // namespace

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
    o.stderr_file = b.run_dir + ".corral-stderr";
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
    b.corral_err = read_file(b.run_dir + ".corral-stderr");
    return b;
}

void check_no_secret_anywhere(const BoxRun& b) {
    const World& w = world();
    CHECK(b.box_root_processes == 2);
    CHECK_MESSAGE(b.memory_hits == "", "the real key is in the memory of the box's root processes " << b.memory_hits);
    // The scan finds the key where it is: in this process, which holds it.
    CHECK(memory_contains(::getpid(), w.real_key));
    CHECK(b.environ_text.find("PATH=") != std::string::npos);  // the environ was really read
    CHECK(b.environ_text.find(w.real_key) == std::string::npos);
    CHECK(b.environ_text.find(":" + std::to_string(w.upstream_port)) == std::string::npos);
    CHECK(b.environ_text.find(w.org) == std::string::npos);
    CHECK(b.scan_hits == "");
    CHECK(b.out.find(w.real_key) == std::string::npos);
    auto r = run({"grep", "-rlsF", "-e", w.real_key, b.run_dir});
    CHECK_MESSAGE(r.exit_code == 1, "real key found in the run dir: " << r.out);
}

// The variables the bridge gives every box (docs/security.md, the box's environment),
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
    // nothing but the bridge's listeners (and, with capture, the DNS stub and
    // its captured listeners, which only a granted name reaches).
    for (const char* probe : {"direct4", "direct6", "direct-proxy-port-host"}) {
        std::string s = section(b.out, probe);
        INFO(probe << ": " << s);
        CHECK(s.find("exit=0") == std::string::npos);
        CHECK(s.find("exit=") != std::string::npos);
    }
    // The granted name without the proxy: captured (on by default for a run
    // with grants, and through a daemon, which the stub asks: CORRAL-GRANTED)
    // and refused by the grant's routes like any GET, in the gateway's ledger
    // (the run's, or the daemon's: CORRAL-CAPTURED).
    std::string direct_name = section(b.out, "direct-name");
    INFO("direct-name: " << direct_name);
    CHECK(direct_name.find("403 route_denied") != std::string::npos);
    bool captured = false;
    for (const auto& l : ledger(ledger_path))
        if (l.value("host", "") == "api.anthropic.com" && l.value("method", "") == "GET" &&
            l.value("reason", "") == "route_denied" && l.value("captured", false) && l.value("identity", "") == identity)
            captured = true;
    CHECK_MESSAGE(captured, "ledger " << ledger_path << " has the captured GET");
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


}  // namespace corral::test::bridge
