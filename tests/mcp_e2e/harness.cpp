#include "tests/mcp_e2e/harness.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace corral::test::mcp_e2e {
namespace {

namespace fs = std::filesystem;

// The pinned packages the suite runs (package.json's MCP dependencies) and a
// file each must have.
const std::vector<std::pair<std::string, std::string>>& pinned_files() {
    static const std::vector<std::pair<std::string, std::string>> files = {
        {"@modelcontextprotocol/sdk", "dist/esm/client/index.js"},
        {"@modelcontextprotocol/server-filesystem", "dist/index.js"},
        {"@modelcontextprotocol/server-everything", "dist/index.js"},
        {"@modelcontextprotocol/inspector-cli", "build/cli.js"},
        {"@modelcontextprotocol/conformance", "dist/index.js"},
    };
    return files;
}

int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        ::close(fd);
        throw std::runtime_error(std::string("bind 127.0.0.1:0: ") + std::strerror(errno));
    }
    ::close(fd);
    return ntohs(a.sin_port);
}

}  // namespace

std::string package_file(const std::string& package, const std::string& relative) {
    return source_root() + "/node_modules/" + package + "/" + relative;
}
std::string here(const std::string& name) { return source_root() + "/tests/mcp_e2e/" + name; }
std::string filesystem_server() { return package_file("@modelcontextprotocol/server-filesystem", "dist/index.js"); }
std::string everything_server() { return package_file("@modelcontextprotocol/server-everything", "dist/index.js"); }

std::string missing_prerequisite() {
    if (!have_program("node")) return "node not found in PATH";
    for (const auto& [package, file] : pinned_files())
        if (!fs::exists(package_file(package, file)))
            return "node package " + package + " missing: run tools/install-npm-deps.sh";
    return "";
}

std::string isolate_loopback() {
    if (!running_as_root()) return "";
    if (::unshare(CLONE_NEWNET) != 0) return std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
    auto r = run({"ip", "link", "set", "lo", "up"});
    if (r.exit_code != 0) return "ip link set lo up: exit " + std::to_string(r.exit_code) + ": " + r.err;
    return "";
}

TempDir::TempDir(const std::string& tag) {
    std::string tmpl = "/tmp/corral-mcp-e2e-" + tag + "-XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp " + tmpl + ": " + std::strerror(errno));
    path = tmpl;
}
TempDir::~TempDir() {
    std::error_code ec;
    if (!std::getenv("CORRAL_KEEP_TEST_DIR")) fs::remove_all(path, ec);
}

ClientRun run_client(const std::vector<std::string>& args, RunOptions options) {
    std::vector<std::string> argv = {"node", here("client.mjs")};
    argv.insert(argv.end(), args.begin(), args.end());
    ClientRun c;
    c.raw = run(argv, options);
    for (const auto& line : lines(c.raw.out)) {
        auto j = json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object()) continue;
        if (j.contains("connected")) c.connected = j["connected"];
        else if (j.contains("step")) c.steps.push_back(j);
        else if (j.contains("server_request")) c.server_requests.push_back(j["server_request"]);
    }
    return c;
}

std::string result_text(const json& step) {
    const json* content = step.contains("result") ? &step["result"]["content"] : nullptr;
    if (!content || !content->is_array() || content->empty()) return "";
    return (*content)[0].value("text", "");
}

json tool_named(const json& list_step, const std::string& name) {
    for (const auto& t : list_step.value("tools", json::array()))
        if (t.value("name", "") == name) return t;
    return nullptr;
}

HttpServer start_test_server(const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {"node", here("test_server.mjs"), "--http", "0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    HttpServer s;
    s.process = std::make_unique<Background>(argv);
    if (!s.process->wait_for_stdout("\n", std::chrono::seconds(30)))
        throw std::runtime_error("test_server.mjs did not say ready in 30 s");
    auto line = s.process->drain_stdout();
    auto brace = line.find('{');
    if (line.rfind("ready ", 0) != 0 || brace == std::string::npos)
        throw std::runtime_error("test_server.mjs said: " + line);
    s.port = json::parse(line.substr(brace)).at("port").get<int>();
    bool tls = std::find(extra.begin(), extra.end(), "--tls-cert") != extra.end();
    s.url = std::string(tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(s.port) + "/mcp";
    return s;
}

// server-everything listens on PORT (all addresses: in the suite's own
// network namespace when root) and says so on stderr.
HttpServer start_everything_http(const std::string& scratch_dir) {
    HttpServer s;
    s.port = free_port();
    RunOptions o;
    o.env["PORT"] = std::to_string(s.port);
    o.stderr_file = scratch_dir + "/everything.stderr";
    s.process = std::make_unique<Background>(std::vector<std::string>{"node", everything_server(), "streamableHttp"}, o);
    const std::string said = "listening on port " + std::to_string(s.port);
    for (int i = 0; i < 300; ++i) {
        if (read_file(o.stderr_file).find(said) != std::string::npos) {
            s.url = "http://127.0.0.1:" + std::to_string(s.port) + "/mcp";
            return s;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    throw std::runtime_error("server-everything did not listen in 30 s; stderr: " + read_file(o.stderr_file));
}

}  // namespace corral::test::mcp_e2e
