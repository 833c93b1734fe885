#include "tests/gateway_e2e/fixture.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/ledger.hpp"
#include "tests/support/test_pki.hpp"

namespace corral::test::gw {

namespace fs = std::filesystem;

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

namespace {

// The test CA and the upstream certificates.
void make_certificates(const std::string& d) {
    make_test_ca(d, "corral e2e test CA");
    make_test_leaf(d, "good", "DNS:upstream.test,DNS:api.anthropic.test,DNS:oauth.test,DNS:tunnel.test,IP:127.0.0.1");
    make_test_leaf(d, "wronghost", "DNS:other.test");
    // The broken ones the helper does not make: self-signed, and expired.
    const std::vector<std::string> ec = {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"};
    auto req = [&](std::vector<std::string> extra) {
        std::vector<std::string> argv = {"openssl", "req"};
        argv.insert(argv.end(), ec.begin(), ec.end());
        argv.insert(argv.end(), extra.begin(), extra.end());
        run_checked(argv, d);
    };
    req({"-x509", "-keyout", "selfsigned.key", "-out", "selfsigned.crt", "-days", "2", "-subj", "/CN=selfsigned.test",
         "-addext", "subjectAltName=DNS:selfsigned.test"});
    // OpenSSL 3.0's `x509 -req` cannot backdate; `openssl ca` can set both dates.
    req({"-new", "-keyout", "expired.key", "-out", "expired.csr", "-subj", "/CN=expired.test"});
    fs::create_directories(d + "/newcerts");
    write_file(d + "/index.txt", "");
    write_file(d + "/serial", "1000\n");
    write_file(d + "/ca.cnf",
               "[ca]\ndefault_ca = test\n[test]\ndir = " + d +
                   "\ndatabase = $dir/index.txt\nnew_certs_dir = $dir/newcerts\nserial = $dir/serial\n"
                   "default_md = sha256\npolicy = any\nunique_subject = no\n[any]\ncommonName = supplied\n"
                   "[ext]\nsubjectAltName = DNS:expired.test\nbasicConstraints = CA:FALSE\n"
                   "extendedKeyUsage = serverAuth\n");
    run_checked({"openssl", "ca", "-batch", "-config", "ca.cnf", "-cert", "ca.crt", "-keyfile", "ca.key", "-in", "expired.csr",
          "-out", "expired.crt", "-startdate", "20200101000000Z", "-enddate", "20200201000000Z", "-extensions", "ext",
          "-notext"},
         d);
}

// One name per special-purpose range, plus mixed answers. The public address
// 93.184.216.34 appears only inside mixed answers, which are refused before any
// dial; no other public address is named anywhere.
const char* hosts_text = R"(# corral gateway e2e names
127.0.0.1 upstream.test tunnel.test self.test
127.0.0.1 mixedok.test
93.184.216.34 mixedok.test
0.0.0.0 r0.ssrf.test
0.255.255.255 r0b.ssrf.test
10.0.0.1 r10.ssrf.test
10.255.255.255 r10b.ssrf.test
100.64.0.1 cgnat.ssrf.test
100.127.255.254 cgnatb.ssrf.test
127.0.0.1 loop.ssrf.test
127.255.255.254 loopb.ssrf.test
169.254.169.254 meta.ssrf.test
172.16.0.1 r172.ssrf.test
172.31.255.254 r172b.ssrf.test
192.0.0.170 ietf.ssrf.test
192.0.2.1 doc1.ssrf.test
192.88.99.1 relay.ssrf.test
192.168.1.1 r192.ssrf.test
198.18.0.1 bench.ssrf.test
198.19.255.254 benchb.ssrf.test
198.51.100.1 doc2.ssrf.test
203.0.113.1 doc3.ssrf.test
224.0.0.1 mcast.ssrf.test
239.255.255.250 mcastb.ssrf.test
240.0.0.1 res.ssrf.test
255.255.255.255 bcast.ssrf.test
:: unspec6.ssrf.test
::1 loop6.ssrf.test
fe80::1 ll6.ssrf.test
fc00::1 ula.ssrf.test
fd00:ec2::254 meta6.ssrf.test
ff02::1 mcast6.ssrf.test
2001:db8::1 doc6.ssrf.test
3fff::1 doc6b.ssrf.test
2001:2::1 bench6.ssrf.test
100::1 discard6.ssrf.test
fec0::1 site6.ssrf.test
::ffff:127.0.0.1 mapped.ssrf.test
::ffff:10.0.0.1 mappedb.ssrf.test
::127.0.0.1 compat.ssrf.test
64:ff9b::7f00:1 nat64.ssrf.test
64:ff9b:1::a00:1 nat64b.ssrf.test
2002:7f00:1::1 sixto4.ssrf.test
2001:0:7f00:1::1 teredo.ssrf.test
127.0.0.1 mixed.ssrf.test
93.184.216.34 mixed.ssrf.test
93.184.216.34 mixedb.ssrf.test
10.0.0.2 mixedb.ssrf.test
)";

std::string gateway_config(const World& w) {
    const auto& d = w.dir;
    auto main = std::to_string(w.ports.at("main"));
    auto p = [&](const char* n) { return std::to_string(w.ports.at(n)); };
    auto gp = std::to_string(w.gateway_port);
    return "[gateway]\n"
           "listen_tcp = \"127.0.0.1:" + gp + "\"\n"
           "tcp_identity = \"e2e/run-1\"\n"
           "ledger = \"" + d + "/ledger.jsonl\"\n"
           "state_dir = \"" + d + "/state\"\n"
           "upstream_ca_file = \"" + d + "/ca.crt\"\n"
           "hosts_file = \"" + d + "/hosts\"\n"
           "[gateway.limits]\n"
           "max_body_bytes = \"64KiB\"\n"
           "read_timeout = \"3s\"\n"
           "idle_timeout = \"20s\"\n"
           "[credentials.anthropic]\nkind = \"api_key\"\nfile = \"" + d + "/anthropic.key\"\n"
           "[credentials.claude]\nkind = \"oauth_token\"\nfile = \"" + d + "/claude.token\"\n"
           "anthropic_beta = \"oauth-2025-04-20\"\n"
           // API-key injection with a route list; the upstream is reached through connect_to.
           "[[grants]]\nhost = \"api.anthropic.test\"\nmode = \"inject\"\ncredential = \"anthropic\"\n"
           "routes = [\"POST /v1/messages\", \"GET /v1/models/*\", \"POST /upload\", \"GET /sse\", \"GET /ws\", "
           "\"GET /large\", \"GET /reflect/*\", \"GET /ws-reflect\"]\n"
           "allow_private = true\nconnect_to = \"127.0.0.1:" + main + "\"\n"
           "[[grants]]\nhost = \"oauth.test\"\nmode = \"inject\"\ncredential = \"claude\"\nallow_private = true\n"
           "connect_to = \"127.0.0.1:" + main + "\"\n"
           // Names from hosts_file on the upstream's own port.
           "[[grants]]\nhost = \"upstream.test\"\nport = " + main + "\nmode = \"inject\"\nallow_private = true\n"
           "[[grants]]\nhost = \"tunnel.test\"\nport = " + main + "\nmode = \"tunnel\"\nallow_private = true\n"
           "[[grants]]\nhost = \"expired.test\"\nmode = \"inject\"\nallow_private = true\nconnect_to = \"127.0.0.1:" +
           p("expired") + "\"\n"
           "[[grants]]\nhost = \"selfsigned.test\"\nmode = \"inject\"\nallow_private = true\nconnect_to = \"127.0.0.1:" +
           p("selfsigned") + "\"\n"
           "[[grants]]\nhost = \"wronghost.test\"\nmode = \"inject\"\nallow_private = true\nconnect_to = \"127.0.0.1:" +
           p("wronghost") + "\"\n"
           // The gateway's own listener, even with allow_private.
           "[[grants]]\nhost = \"self.test\"\nport = " + gp + "\nmode = \"tunnel\"\nallow_private = true\n"
           // Mixed answers are refused even with allow_private.
           "[[grants]]\nhost = \"mixedok.test\"\nmode = \"tunnel\"\nallow_private = true\n"
           // SSRF targets: granted names and literals, but private addresses are not allowed.
           "[[grants]]\nhost = \"*.ssrf.test\"\nmode = \"tunnel\"\n"
           "[[grants]]\nhost = \"10.0.0.1\"\nmode = \"tunnel\"\n"
           "[[grants]]\nhost = \"[::1]\"\nmode = \"tunnel\"\n"
           "[[grants]]\nhost = \"169.254.169.254\"\nport = 80\nmode = \"tunnel\"\n";
}

World* the_world = nullptr;
World& build_world();

}  // namespace

World::~World() {
    gateway.reset();
    upstream.reset();
    if (!dir.empty() && !std::getenv("CORRAL_KEEP_TEST_DIR")) fs::remove_all(dir);
    if (!corral_ca_public.empty()) fs::remove(corral_ca_public);
}

std::string missing_prerequisite() {
    // The clients connect to listen_tcp, which serves root's connections only.
    if (!running_as_root()) return "needs root (corral gateway's listen_tcp serves root's connections only)";
    for (const char* p : {"openssl", "curl", "node", "setpriv"})
        if (!have_program(p)) return std::string(p) + " not found in PATH";
    if (!fs::exists(source_root() + "/node_modules/ws/package.json"))
        return "node package ws missing: run tools/install-npm-deps.sh";
    if (!fs::exists(corral_bin())) return "corral binary not built: " + corral_bin();
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

namespace {

World& build_world() {
    static World w;
    char tmpl[] = "/tmp/corral-gw-e2e-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    w.dir = tmpl;
    w.test_ca = w.dir + "/ca.crt";
    w.ledger = w.dir + "/ledger.jsonl";
    w.gateway_stderr = w.dir + "/gateway.stderr";
    w.corral_ca = w.dir + "/state/ca/ca.crt";
    make_certificates(w.dir);

    w.api_key = "sk-ant-api03-REALKEY-" + random_hex(32);
    w.oauth_token = "sk-ant-oat01-REALTOKEN-" + random_hex(32);
    write_file(w.dir + "/anthropic.key", w.api_key + "\n", 0600);
    write_file(w.dir + "/claude.token", w.oauth_token + "\n", 0600);
    write_file(w.dir + "/hosts", hosts_text);

    RunOptions env;
    env.env["CORRAL_SOURCE_ROOT"] = source_root();
    w.upstream = std::make_unique<Background>(
        std::vector<std::string>{"node", source_root() + "/tests/gateway_e2e/upstream.js", w.dir}, env);
    if (!w.upstream->wait_for_stdout("\n", std::chrono::seconds(20)))
        throw std::runtime_error("upstream.js did not start");
    auto line = w.upstream->drain_stdout();
    auto json_start = line.find('{');
    if (line.rfind("ready ", 0) != 0 || json_start == std::string::npos)
        throw std::runtime_error("upstream.js said: " + line);
    auto ports = nlohmann::json::parse(line.substr(json_start));
    for (auto it = ports.begin(); it != ports.end(); ++it) w.ports[it.key()] = it.value().get<int>();

    w.gateway_port = free_port();
    auto config = w.dir + "/gateway.toml";
    write_file(config, gateway_config(w));
    // Background drops stderr; keep the gateway's in a file for the secret scan.
    w.gateway = std::make_unique<Background>(std::vector<std::string>{
        "sh", "-c", "exec \"$0\" gateway --config \"$1\" 2>\"$2\"", corral_bin(), config, w.gateway_stderr});
    auto want = "listening tcp:127.0.0.1:" + std::to_string(w.gateway_port);
    if (!w.gateway->wait_for_stdout(want, std::chrono::seconds(20)))
        throw std::runtime_error("corral gateway did not print \"" + want + "\"; stdout: " +
                                 w.gateway->drain_stdout() + " stderr: " + read_file(w.gateway_stderr));
    if (!fs::exists(w.corral_ca)) throw std::runtime_error("no corral CA at " + w.corral_ca);
    w.corral_ca_public = w.dir + "-ca.crt";
    write_file(w.corral_ca_public, read_file(w.corral_ca), 0644);
    the_world = &w;
    return w;
}

}  // namespace

Result curl(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
    return curl_as(0, args, timeout);
}

Result curl_as(unsigned uid, const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
    auto& w = world();
    std::vector<std::string> argv;
    if (uid != 0) {
        auto id = std::to_string(uid);
        argv = {"setpriv", "--reuid=" + id, "--regid=" + id, "--clear-groups"};
    }
    // corral's CA is public; the copy is readable by any uid.
    for (const std::string& a : std::vector<std::string>{"curl", "-sS", "--max-time", "20", "--proxy",
                                 "http://127.0.0.1:" + std::to_string(w.gateway_port), "--cacert",
                                 uid == 0 ? w.corral_ca : w.corral_ca_public,
                                 "-w", "\nconnect=%{http_connect} status=%{http_code}\n"})
        argv.push_back(a);
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions o;
    o.timeout = timeout;
    o.env["NO_PROXY"] = "";
    o.env["no_proxy"] = "";
    auto r = run(argv, o);
    w.client_visible += r.out + r.err;
    return r;
}

nlohmann::json node_client(nlohmann::json spec, std::chrono::milliseconds timeout) {
    auto& w = world();
    return node_client_via(w.gateway_port, w.corral_ca, std::move(spec), timeout);
}

nlohmann::json node_client_via(int proxy_port, const std::string& ca, nlohmann::json spec,
                               std::chrono::milliseconds timeout) {
    auto& w = world();
    spec["proxy"] = proxy_port;
    spec["ca"] = ca;
    spec["control"] = w.ports.at("control");
    RunOptions o;
    o.timeout = timeout;
    o.env["CORRAL_SOURCE_ROOT"] = source_root();
    auto r = run({"node", source_root() + "/tests/gateway_e2e/client.js", spec.dump()}, o);
    w.client_visible += r.out + r.err;
    if (r.timed_out) return nlohmann::json{{"timedOut", true}};
    try {
        return nlohmann::json::parse(r.out);
    } catch (const std::exception&) {
        return nlohmann::json{{"clientFailed", r.out + r.err}};
    }
}

std::string raw_proxy(const std::string& bytes, std::chrono::milliseconds timeout) {
    auto& w = world();
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(w.gateway_port));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return "(connect to gateway failed)";
    }
    ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    std::string out;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        char buf[4096];
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    w.client_visible += out;
    return out;
}

nlohmann::json upstream_stats() {
    auto& w = world();
    auto r = run({"curl", "-sS", "--noproxy", "*", "http://127.0.0.1:" + std::to_string(w.ports.at("control")) + "/stats"});
    return nlohmann::json::parse(r.out);
}

std::vector<nlohmann::json> ledger_lines() { return read_ledger(world().ledger); }

std::vector<nlohmann::json> ledger_lines_with_reason(const std::string& reason, std::size_t at_least) {
    return wait_for_ledger_lines(
        world().ledger, [&](const nlohmann::json& l) { return l.value("reason", "") == reason; },
        corral::test::at_least(at_least));
}

bool ledger_has(const std::string& host, const std::string& reason) {
    return !wait_for_ledger_lines(world().ledger, [&](const nlohmann::json& l) {
                return l.value("host", "") == host && l.value("reason", "") == reason;
            }).empty();
}

OwnDaemon::OwnDaemon(const std::string& name, const std::string& ledger_path, const std::string& grace,
                     std::string who, const std::string& more_toml)
    : identity(std::move(who)) {
    auto& w = world();
    dir = w.dir + "/" + name;
    fs::create_directories(dir);
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
    config = dir + "/gateway.toml";
    err = dir + "/gateway.stderr";
    socket = dir + "/gateway.sock";
    ledger = ledger_path.empty() ? dir + "/ledger.jsonl" : ledger_path;
    ca = dir + "/state/ca/ca.crt";
    port = free_port();
    const std::string grants = more_toml.empty() ? "[[grants]]\nhost = \"upstream.test\"\nport = " +
                                                       std::to_string(w.ports.at("main")) +
                                                       "\nmode = \"inject\"\nallow_private = true\n"
                                                 : more_toml;
    write_file(config, "[gateway]\nlisten_tcp = \"127.0.0.1:" + std::to_string(port) + "\"\ntcp_identity = \"" +
                           identity + "\"\nlisten_unix = \"" + socket + "\"\nledger = \"" + ledger +
                           "\"\nstate_dir = \"" + dir + "/state\"\nupstream_ca_file = \"" + w.test_ca +
                           "\"\nhosts_file = \"" + w.dir + "/hosts\"\n" + grants);
    proc = std::make_unique<Background>(std::vector<std::string>{
        "sh", "-c", "exec \"$0\" gateway --config \"$1\" --grace \"$3\" 2>\"$2\"", corral_bin(), config, err, grace});
    auto want = "listening tcp:127.0.0.1:" + std::to_string(port);
    if (!proc->wait_for_stdout(want, std::chrono::seconds(20)))
        throw std::runtime_error("corral gateway did not start: " + read_file(err));
}

std::string OwnDaemon::url(const std::string& path) const {
    return "https://upstream.test:" + std::to_string(world().ports.at("main")) + path;
}

Result OwnDaemon::curl_args(const std::vector<std::string>& args, std::chrono::milliseconds timeout) const {
    RunOptions o;
    o.timeout = timeout;
    o.env["NO_PROXY"] = "";
    o.env["no_proxy"] = "";
    std::vector<std::string> argv{"curl", "-sS", "--max-time", "15", "--proxy", "http://127.0.0.1:" + std::to_string(port),
                                  "--cacert", ca, "-w", "\nstatus=%{http_code}\nconnect=%{http_connect}\n"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, o);
}

Result OwnDaemon::curl(const std::string& path, std::chrono::milliseconds timeout) const {
    return curl_args({url(path)}, timeout);
}

nlohmann::json OwnDaemon::counts(const std::string& who) const {
    int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", socket.c_str());
    if (::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(s);
        return nullptr;
    }
    std::string line = "CORRAL-COUNTS " + (who.empty() ? identity : who) + "\n";
    (void)!::write(s, line.data(), line.size());
    std::string answer;
    char buf[512];
    for (ssize_t n; (n = ::read(s, buf, sizeof buf)) > 0;) answer.append(buf, static_cast<std::size_t>(n));
    ::close(s);
    return nlohmann::json::parse(answer, nullptr, false);
}

bool OwnDaemon::stderr_says(const std::string& needle) const {
    for (int i = 0; i < 250; ++i) {
        if (read_file(err).find(needle) != std::string::npos) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

}  // namespace corral::test::gw
