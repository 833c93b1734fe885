// tests/mcp_e2e/test_stdio_run.cpp — a worker's stdio MCP server through
// `corral run`: corral starts our test server (test_server.mjs --stdio) in a
// box of its own, with its secret_env read host side; the SDK client in the
// agent's box calls it through the box's MCP listener. Checked from the host
// while both boxes live: the server's box is not the agent's (network, IPC,
// PID and cgroup namespaces, UID), has only `lo`, no capability, no new
// privileges, seccomp, no view of the agent's workspace; the server holds
// its secret and the agent's box does not, not even in the answer that
// echoed it (scrubbed). After the run: the denied call never reached the
// server, run.json counts the calls, the teardown covered the server's box
// and found it clean. Root only (test_run_main.cpp).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/mcp_e2e/box_run.hpp"
#include "tests/mcp_e2e/harness.hpp"
#include "tests/support/process.hpp"

namespace corral::test::mcp_e2e {

namespace fs = std::filesystem;

namespace {

const char* kStdioBoxScript = R"SH(#!/bin/sh
echo "== client"
node /opt/mcp/client/client.mjs --url http://127.0.0.1:3129/mcp/local --list \
  --call echo_env '{"name":"CORRAL_MCP_TEST_SECRET"}' --call echo '{"text":"hi"}'
echo "exit=$?"
echo "== broken"
node /opt/mcp/client/client.mjs --url http://127.0.0.1:3129/mcp/broken --list
echo "== ready"
while [ ! -e /workspace/done ]; do sleep 0.1; done
echo "== end"
)SH";

// A worker whose one MCP server is test_server.mjs over stdio, its secret
// from a credential file, echo denied.
void write_stdio_org(const std::string& dir, const std::string& calls_file) {
    fs::create_directories(dir + "/org/workers/w1");
    write_file(dir + "/org/org.toml",
               "[engine]\nagent = \"claude\"\n"
               "[gateway]\nstate_dir = \"" + dir + "/gwstate\"\n"
               "[credentials.serverkey]\nkind = \"api_key\"\nfile = \"" + dir + "/server.secret\"\n");
    write_file(dir + "/org/workers/w1/worker.toml",
               "agent = \"none\"\n"
               "[mcp.servers.local]\n"
               "command = [\"/usr/bin/node\", \"/opt/mcp/client/test_server.mjs\", \"--stdio\", \"--calls-file\", \"" +
                   calls_file + "\"]\n"
               "env = { MCP_MODE = \"test\" }\n"
               "secret_env = { CORRAL_MCP_TEST_SECRET = \"serverkey\" }\n"
               "[mcp.servers.broken]\ncommand = [\"/nonexistent/mcp-server\"]\n"
               "[[mcp.rules]]\nserver = \"local\"\ntool = \"echo_env\"\naction = \"allow\"\n"
               "[[mcp.rules]]\nserver = \"local\"\ntool = \"echo\"\naction = \"deny\"\n");
}

// The test server's process on the host, found by its calls file on its command line.
pid_t find_server(const std::string& calls_file) {
    for (const auto& e : fs::directory_iterator("/proc")) {
        const std::string name = e.path().filename();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        const std::string cmdline = read_file(e.path().string() + "/cmdline");
        if (cmdline.find("test_server.mjs") != std::string::npos && cmdline.find(calls_file) != std::string::npos)
            return static_cast<pid_t>(std::stoi(name));
    }
    return -1;
}

std::string ns_of(pid_t pid, const std::string& ns) {
    std::error_code ec;
    return fs::read_symlink("/proc/" + std::to_string(pid) + "/ns/" + ns, ec).string();
}

// The value of `key:` in /proc/PID/status, its first field.
std::string status_field(pid_t pid, const std::string& key) {
    const std::string status = read_file("/proc/" + std::to_string(pid) + "/status");
    const auto at = status.find("\n" + key + ":");
    if (at == std::string::npos) return "";
    const auto start = status.find_first_not_of(" \t", at + key.size() + 2);
    return status.substr(start, status.find_first_of(" \t\n", start) - start);
}

// What the host saw of both boxes at "== ready".
struct Seen {
    pid_t server = -1;
    std::string server_environ, server_cgroup, server_net_dev, calls;
    std::vector<std::string> same_namespaces;   // the agent's and the server's, where equal
    std::string server_uid, agent_uid, cap_eff, no_new_privs, seccomp;
    bool sees_workspace = true;
};

Seen look_at_boxes(pid_t shell, const std::string& calls_file) {
    Seen s;
    s.server = find_server(calls_file);
    if (s.server <= 0) return s;
    const std::string proc = "/proc/" + std::to_string(s.server);
    s.server_environ = read_file(proc + "/environ");
    s.server_cgroup = read_file(proc + "/cgroup");
    s.server_net_dev = read_file(proc + "/net/dev");
    s.calls = read_file(proc + "/root" + calls_file);
    for (const char* ns : {"net", "ipc", "pid", "mnt", "uts", "cgroup"})
        if (ns_of(s.server, ns) == ns_of(shell, ns)) s.same_namespaces.push_back(ns);
    s.server_uid = status_field(s.server, "Uid");
    s.agent_uid = status_field(shell, "Uid");
    s.cap_eff = status_field(s.server, "CapEff");
    s.no_new_privs = status_field(s.server, "NoNewPrivs");
    s.seccomp = status_field(s.server, "Seccomp");
    s.sees_workspace = fs::exists(proc + "/root/workspace/box.sh");
    return s;
}

}  // namespace

TEST_CASE("corral run: a stdio MCP server in a box of its own, its secret out of the agent's box") {
    TempDir t("corral-mcp-stdio-run");
    const std::string& dir = t.path;
    ::chmod(dir.c_str(), 0711);
    const std::string secret = "stdio-secret-" + random_hex(32);
    write_file(dir + "/server.secret", secret + "\n", 0600);
    const std::string calls_file = "/tmp/stdio-calls-" + random_hex(8) + ".jsonl";
    write_stdio_org(dir, calls_file);
    fs::create_directories(dir + "/ws");
    ::chmod((dir + "/ws").c_str(), 0777);
    write_file(dir + "/ws/box.sh", kStdioBoxScript, 0755);

    Seen seen;
    BoxRun b = run_box(dir, secret, [&](pid_t shell, BoxRun&) { seen = look_at_boxes(shell, calls_file); });
    INFO("corral's stdout:\n" << b.out << "\ncorral's stderr:\n" << b.corral_err);
    REQUIRE(b.exit_code == 0);

    // The client's steps: only the allowed tool listed, its answer scrubbed,
    // the denied call refused with corral's sentence.
    const std::string local_out = b.out.substr(0, b.out.find("== broken"));
    const std::vector<json> steps = client_steps(local_out);
    REQUIRE(steps.size() == 3);
    std::vector<std::string> listed;
    for (const auto& tool : steps[0].value("tools", json::array())) listed.push_back(tool.value("name", ""));
    CHECK(listed == std::vector<std::string>{"echo_env"});
    CHECK(steps[1]["name"] == "echo_env");
    REQUIRE(steps[1].contains("result"));
    const std::string echoed = steps[1]["result"].dump();
    CHECK_MESSAGE(echoed.find(std::string(secret.size(), '*')) != std::string::npos, echoed);
    CHECK(steps[2]["name"] == "echo");
    CHECK(steps[2]["error"]["code"] == -32001);
    CHECK(steps[2]["error"]["message"].get<std::string>().find("refused by corral: tool echo is denied") !=
          std::string::npos);

    // A server whose command is not in its box: the box is told it exited,
    // in corral's words, and the run goes on.
    const std::string broken_out = b.out.substr(b.out.find("== broken"));
    CHECK_MESSAGE(broken_out.find("corral gateway: MCP server broken could not be reached: the stdio MCP server "
                                  "broken exited") != std::string::npos, broken_out);

    // The server's box, seen from the host while it lived.
    REQUIRE_MESSAGE(seen.server > 0, "the stdio server's process was not found");
    CHECK(seen.same_namespaces.empty());
    CHECK(seen.server_uid != seen.agent_uid);
    CHECK(seen.server_uid != "0");
    CHECK(seen.cap_eff == "0000000000000000");
    CHECK(seen.no_new_privs == "1");
    CHECK(seen.seccomp == "2");
    CHECK_FALSE(seen.sees_workspace);
    // Only lo: /proc/PID/net/dev lists the interfaces of its network namespace.
    CHECK(seen.server_net_dev.find("lo:") != std::string::npos);
    CHECK(seen.server_net_dev.find("eth") == std::string::npos);
    CHECK(seen.server_net_dev.find("veth") == std::string::npos);
    // The secret is in the server's environment, and nowhere in the agent's box.
    CHECK(seen.server_environ.find("CORRAL_MCP_TEST_SECRET=" + secret) != std::string::npos);
    CHECK(seen.server_environ.find("MCP_MODE=test") != std::string::npos);
    CHECK(b.environ_text.find("PATH=") != std::string::npos);
    CHECK(b.environ_text.find(secret) == std::string::npos);
    CHECK(b.scan_hits == "");
    CHECK(b.out.find(secret) == std::string::npos);
    // What reached the server: the allowed call only.
    auto calls = json_lines(seen.calls);
    REQUIRE(calls.size() == 1);
    CHECK(calls[0]["name"] == "echo_env");

    // The run's records: counts, the servers' teardown, no secret anywhere.
    json record = json::parse(read_file(b.run_dir + "/run.json"), nullptr, false);
    REQUIRE(record.is_object());
    // Its cgroup is its box's (servers in name order: broken is -mcp-1, local -mcp-2).
    const std::string server_run_id = record.value("id", "?") + "-mcp-2";
    CHECK_MESSAGE(seen.server_cgroup.find("/corral/" + server_run_id) != std::string::npos, seen.server_cgroup);
    CHECK(record["tools"]["calls"] == 2);
    // run.json names each server's box.
    const json& boxes = record["tools"]["stdio_boxes"];
    REQUIRE(boxes.size() == 2);
    CHECK(boxes[1]["server"] == "local");
    CHECK(boxes[1]["run_id"] == server_run_id);
    CHECK(std::to_string(boxes[1]["uid"].get<unsigned>()) == seen.server_uid);
    CHECK(record["tools"]["allowed"] == 1);
    CHECK(record["teardown"]["verdict"] == "clean");
    int server_steps = 0;
    for (const auto& step : record["teardown"]["steps"]) {
        const std::string name = step.value("step", "");
        server_steps += name.rfind("mcp local: ", 0) == 0 || name.rfind("mcp broken: ", 0) == 0;
    }
    CHECK(server_steps >= 2 * 8);   // every step of both boxes' teardowns
    CHECK(fs::exists(b.run_dir + "/mcp-local.stderr.log"));
    // `corral ps -a --json` carries the same counts.
    auto ps = run({corral_bin(), "ps", "-a", "--json", "--state-dir", dir + "/runs"});
    json listed_runs = json::parse(ps.out, nullptr, false);
    REQUIRE_MESSAGE(listed_runs.is_array(), ps.out << ps.err);
    REQUIRE(listed_runs.size() == 1);
    CHECK(listed_runs[0]["tools"] == record["tools"]);
    auto r = run({"grep", "-rlsF", "-e", secret, b.run_dir});
    CHECK_MESSAGE(r.exit_code == 1, "the secret is in the run dir: " << r.out);
    // Nothing of the server's box is left: its process is gone.
    CHECK_FALSE(fs::exists("/proc/" + std::to_string(seen.server) + "/root" + calls_file));
}

namespace {

const char* kFilesystemBoxScript = R"SH(#!/bin/sh
echo "== client"
node /opt/mcp/client/client.mjs --url http://127.0.0.1:3129/mcp/fs --list \
  --call read_text_file '{"path":"/data/hello.txt"}' \
  --call read_text_file '{"path":"/data/../etc/passwd"}' \
  --call write_file '{"path":"/data/new.txt","content":"x"}'
echo "exit=$?"
echo "== ready"
while [ ! -e /workspace/done ]; do sleep 0.1; done
echo "== end"
)SH";

}  // namespace

TEST_CASE("corral run: server-filesystem (npm) as a stdio server in its box, reads under its root and nothing else") {
    TempDir t("corral-mcp-stdio-fs");
    const std::string& dir = t.path;
    ::chmod(dir.c_str(), 0711);
    fs::create_directories(dir + "/data");
    ::chmod((dir + "/data").c_str(), 0755);
    write_file(dir + "/data/hello.txt", "hello from the data dir\n", 0644);
    fs::create_directories(dir + "/org/workers/w1");
    write_file(dir + "/org/org.toml", "[engine]\nagent = \"claude\"\n[gateway]\nstate_dir = \"" + dir + "/gwstate\"\n");
    write_file(dir + "/org/workers/w1/worker.toml",
               "agent = \"none\"\n"
               "[mcp.servers.fs]\n"
               "command = [\"/usr/bin/node\", \"/opt/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/"
               "index.js\", \"/data\"]\n"
               "[[mcp.rules]]\nserver = \"fs\"\ntool = \"read_text_file\"\naction = \"allow\"\n"
               "when = [ { pointer = \"/path\", path_under = \"/data\" } ]\n");
    fs::create_directories(dir + "/ws");
    ::chmod((dir + "/ws").c_str(), 0777);
    write_file(dir + "/ws/box.sh", kFilesystemBoxScript, 0755);

    BoxRun b = run_box(dir, "no-secret-in-this-run", {}, {"--ro-bind", dir + "/data:/data"});
    INFO("corral's stdout:\n" << b.out << "\ncorral's stderr:\n" << b.corral_err);
    REQUIRE(b.exit_code == 0);
    const std::vector<json> steps = client_steps(b.out);
    REQUIRE(steps.size() == 4);
    std::vector<std::string> listed;
    for (const auto& tool : steps[0].value("tools", json::array())) listed.push_back(tool.value("name", ""));
    CHECK(listed == std::vector<std::string>{"read_text_file"});   // of server-filesystem's 14 or so
    CHECK_MESSAGE(steps[1].dump().find("hello from the data dir") != std::string::npos, steps[1].dump());
    CHECK(steps[2]["error"]["code"] == -32001);
    CHECK(steps[2]["error"]["message"].get<std::string>().find("refused by corral") != std::string::npos);
    CHECK(steps[3]["error"]["code"] == -32001);
    CHECK_FALSE(fs::exists(dir + "/data/new.txt"));
}

TEST_CASE("corral run: a stdio server's box is refused anything the agent can write, before any box exists") {
    TempDir t("corral-mcp-stdio-overlap");
    const std::string& dir = t.path;
    ::chmod(dir.c_str(), 0711);
    fs::create_directories(dir + "/org/workers/w1");
    fs::create_directories(dir + "/ws/tools");
    write_file(dir + "/org/org.toml", "[engine]\nagent = \"claude\"\n[gateway]\nstate_dir = \"" + dir + "/gwstate\"\n");
    write_file(dir + "/org/workers/w1/worker.toml",
               "agent = \"none\"\n[mcp.servers.fs]\ncommand = [\"/opt/tools/server\"]\n");
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = dir + "/runs";
    auto r = run({corral_bin(), "run", "--config", dir + "/org", "--worker", "w1", "--rootfs", "host", "--workspace",
                  dir + "/ws", "--ro-bind", dir + "/ws/tools:/opt/tools", "--run-dir", dir + "/run", "--state-dir",
                  dir + "/runs", "--", "/bin/sh", "-c", "echo started"},
                 o);
    CHECK(r.exit_code == 125);
    CHECK(r.out.find("started") == std::string::npos);
    CHECK_MESSAGE(r.err.find("MCP server fs's box: --ro-bind " + dir + "/ws/tools:/opt/tools: overlaps the workspace (" +
                             dir + "/ws), which the agent can write") != std::string::npos, r.err);
    json record = json::parse(read_file(dir + "/run/run.json"), nullptr, false);
    CHECK(record.value("outcome", "") == "setup_failed");
}

TEST_CASE("corral run: a stdio server's box is refused the workspace under another name: a bind mount of it, a symlink to its parent") {
    TempDir t("corral-mcp-stdio-alias");
    const std::string& dir = t.path;
    ::chmod(dir.c_str(), 0711);
    fs::create_directories(dir + "/org/workers/w1");
    fs::create_directories(dir + "/p/ws/tools");
    fs::create_directories(dir + "/alias");
    fs::create_directory_symlink(dir + "/p", dir + "/up");   // the workspace's parent
    write_file(dir + "/org/org.toml", "[engine]\nagent = \"claude\"\n[gateway]\nstate_dir = \"" + dir + "/gwstate\"\n");
    write_file(dir + "/org/workers/w1/worker.toml",
               "agent = \"none\"\n[mcp.servers.fs]\ncommand = [\"/opt/tools/server\"]\n");
    RunOptions o;
    o.env["CORRAL_STATE_DIR"] = dir + "/runs";
    auto corral_run = [&](const std::string& ro_bind) {
        return std::vector<std::string>{corral_bin(), "run", "--config", dir + "/org", "--worker", "w1", "--rootfs", "host",
                                        "--workspace", dir + "/p/ws", "--ro-bind", ro_bind, "--run-dir", dir + "/run",
                                        "--state-dir", dir + "/runs", "--", "/bin/sh", "-c", "echo started"};
    };
    // The workspace bound at DIR/alias in a mount namespace of the run's own
    // (the host's mount table is not touched): the same directory by another path.
    std::vector<std::string> argv = {"unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                                     "mount --bind \"$0\"/p/ws \"$0\"/alias && shift && exec \"$@\"", dir, "x"};
    for (auto& a : corral_run(dir + "/alias:/opt/tools")) argv.push_back(a);
    auto r = run(argv, o);
    CHECK(r.exit_code == 125);
    CHECK(r.out.find("started") == std::string::npos);
    CHECK_MESSAGE(r.err.find("MCP server fs's box: --ro-bind " + dir + "/alias:/opt/tools: overlaps the workspace (" +
                             dir + "/p/ws), which the agent can write: on disk " + dir + "/alias is " + dir + "/p/ws") !=
                      std::string::npos,
                  r.err);
    fs::remove_all(dir + "/run");
    r = run(corral_run(dir + "/up:/opt/tools"), o);
    CHECK(r.exit_code == 125);
    CHECK_MESSAGE(r.err.find("--ro-bind " + dir + "/up:/opt/tools: overlaps the workspace (" + dir + "/p/ws), which the agent can write: on disk " + dir + "/up contains " + dir + "/p/ws") !=
                      std::string::npos,
                  r.err);
}

// A server that hands its own stderr away: it answers initialize and
// tools/list, then sends its stderr fd over its stdout socket (SCM_RIGHTS) in a message the
// gateway never reads (the exchange is over), and waits. The queued message
// keeps the stderr pipe open after the server is killed, so the log's end
// must come from the server's PID namespace ending, not from an EOF that
// never comes: the run must still end and tear down clean.
const char* kFdPassingServer = R"PY(import array, json, socket, sys, time
s = socket.socket(fileno=1)
for line in sys.stdin:
    req = json.loads(line)
    if "id" not in req:
        continue
    if req["method"] == "initialize":
        result = {"protocolVersion": req["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "fdpass", "version": "1"}}
    else:
        result = {"tools": []}
    s.sendall((json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": result}) + "\n").encode())
    if req["method"] == "tools/list":
        time.sleep(0.5)
        s.sendmsg([b" "], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [2]))])
)PY";

TEST_CASE("corral run: a stdio server that passes its stderr away cannot hold the run's teardown") {
    TempDir t("corral-mcp-stdio-fdpass");
    const std::string& dir = t.path;
    ::chmod(dir.c_str(), 0711);
    fs::create_directories(dir + "/org/workers/w1");
    fs::create_directories(dir + "/evil");
    ::chmod((dir + "/evil").c_str(), 0755);
    write_file(dir + "/evil/server.py", kFdPassingServer, 0644);
    write_file(dir + "/org/org.toml", "[engine]\nagent = \"claude\"\n[gateway]\nstate_dir = \"" + dir + "/gwstate\"\n");
    write_file(dir + "/org/workers/w1/worker.toml",
               "agent = \"none\"\n[mcp.servers.evil]\ncommand = [\"/usr/bin/python3\", \"/opt/evil/server.py\"]\n"
               "[[mcp.rules]]\nserver = \"evil\"\ntool = \"*\"\naction = \"allow\"\n");
    RunOptions o;
    o.timeout = std::chrono::seconds(90);
    o.env["CORRAL_STATE_DIR"] = dir + "/runs";
    const std::string src = source_root();
    auto r = run({corral_bin(), "run", "--config", dir + "/org", "--worker", "w1", "--rootfs", "host", "--run-dir",
                  dir + "/run", "--state-dir", dir + "/runs", "--ro-bind", src + "/node_modules:/opt/mcp/node_modules",
                  "--ro-bind", src + "/tests/mcp_e2e:/opt/mcp/client", "--ro-bind", dir + "/evil:/opt/evil", "--", "/bin/sh",
                  "-c", "node /opt/mcp/client/client.mjs --url http://127.0.0.1:3129/mcp/evil --list; sleep 1; echo client-done"},
                 o);
    INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
    CHECK(r.out.find("\"connected\"") != std::string::npos);   // the exchange happened
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("client-done") != std::string::npos);
    json record = json::parse(read_file(dir + "/run/run.json"), nullptr, false);
    REQUIRE(record.is_object());
    CHECK(record["state"] == "finished");
    CHECK(record["teardown"]["verdict"] == "clean");
}

}  // namespace corral::test::mcp_e2e
