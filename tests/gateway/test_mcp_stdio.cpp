// The MCP stdio transport (gateway/mcp_stdio.hpp): the line framing, one
// channel's exchanges with a real child process speaking MCP over its
// stdin/stdout (a small node script of this test's own, started on the host
// by a launcher of the test's: the run's launcher, which sandboxes it, is
// tested as root by tests/mcp_e2e), and the gateway's MCP endpoint serving a
// stdio server through the same governing as a remote one. Loopback only.
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include <doctest/doctest.h>

#include "gateway/mcp_endpoint.hpp"
#include "gateway/mcp_stdio.hpp"
#include "tests/gateway/loopback_fixture.hpp"

namespace corral::test::loopback {

namespace {

using json = nlohmann::json;
using gateway::LineReader;
const std::string kStdioSecret = "stdio-secret-5be1d0c3-NEVER-IN-THE-BOX";

// The fake server: tools/list, and tools/call of echo, secret (its env var),
// split (its answer in two writes), slow (answered after 100 ms), never (no answer), exit, big, chatty (a
// notification and a request of its own first; it answers with what corral
// said to that request), calls (how many tools/call it received).
constexpr const char* kFakeServer = R"JS(
const rl = require('readline').createInterface({input: process.stdin});
let calls = 0, chatty = null;
const out = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const tool = (name) => ({name, description: 'The ' + name + ' tool.', inputSchema: {type: 'object'}});
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === 'srv-1' && chatty !== null) {
    out({jsonrpc: '2.0', id: chatty, result: {content: [{type: 'text', text: JSON.stringify(m)}]}});
    chatty = null;
    return;
  }
  if (m.id === undefined || !m.method) return;
  const reply = (result) => out({jsonrpc: '2.0', id: m.id, result});
  if (m.method === 'initialize') return reply({protocolVersion: '2025-11-25', capabilities: {tools: {}}, serverInfo: {name: 'fake', version: '1'}});
  if (m.method === 'tools/list') return reply({tools: ['echo', 'secret', 'danger', 'calls'].map(tool)});
  if (m.method !== 'tools/call') return out({jsonrpc: '2.0', id: m.id, error: {code: -32601, message: 'no such method'}});
  const name = m.params.name, args = m.params.arguments || {};
  if (name !== 'calls') ++calls;
  if (name === 'echo') return reply({content: [{type: 'text', text: String(args.text)}]});
  if (name === 'calls') return reply({content: [{type: 'text', text: String(calls)}]});
  if (name === 'secret') return reply({content: [{type: 'text', text: 'token=' + process.env.FAKE_TOKEN}]});
  if (name === 'big') return reply({content: [{type: 'text', text: 'x'.repeat(200000)}]});
  if (name === 'exit') process.exit(3);
  if (name === 'slow') return setTimeout(() => reply({content: [{type: 'text', text: 'slow'}]}), 100);
  if (name === 'split') {
    const s = JSON.stringify({jsonrpc: '2.0', id: m.id, result: {content: [{type: 'text', text: 'split'}]}}) + '\n';
    process.stdout.write(s.slice(0, 10));
    setTimeout(() => process.stdout.write(s.slice(10)), 100);
    return;
  }
  if (name === 'chatty') {
    chatty = m.id;
    out({jsonrpc: '2.0', method: 'notifications/message', params: {level: 'info', data: 'hello'}});
    out({jsonrpc: '2.0', id: 'srv-1', method: 'sampling/createMessage', params: {}});
  }
});
)JS";

// Starts the fake server on the host, its stdin and stdout one socket, its
// environment the server's env and secret_env (from `secrets`).
struct HostLauncher : gateway::StdioLauncher {
    std::string script;
    std::map<std::string, std::string> secrets;
    std::atomic<int> starts{0};

    gateway::StdioProcess start(const std::string&, const mcp::StdioServer& s) override {
        std::vector<std::string> env_text;
        for (const auto& [k, v] : s.env) env_text.push_back(k + "=" + v);
        for (const auto& [k, credential] : s.secret_env) env_text.push_back(k + "=" + secrets.at(credential));
        std::vector<char*> envp, argv{const_cast<char*>("/usr/bin/node"), script.data(), nullptr};
        for (auto& e : env_text) envp.push_back(e.data());
        envp.push_back(nullptr);
        int sv[2];
        REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
        pid_t pid = fork();
        if (pid == 0) {
            dup2(sv[1], 0), dup2(sv[1], 1);
            execve(argv[0], argv.data(), envp.data());
            _exit(127);
        }
        close(sv[1]);
        ++starts;
        gateway::StdioProcess p;
        p.to_server = Fd(sv[0]);
        p.from_server = Fd(dup(sv[0]));
        p.stop = [pid] {
            kill(pid, SIGKILL);
            waitpid(pid, nullptr, 0);
        };
        return p;
    }
};

struct Fake {
    TempDir dir;
    std::shared_ptr<HostLauncher> launcher = std::make_shared<HostLauncher>();
    mcp::StdioServer server;
    Fake() {
        launcher->script = dir.path + "/fake.js";
        std::ofstream(launcher->script) << kFakeServer;
        launcher->secrets["fake-credential"] = kStdioSecret;
        server.argv = {"/usr/bin/node", launcher->script};
        server.env = {{"PATH", "/usr/bin:/bin"}};
        server.secret_env = {{"FAKE_TOKEN", "fake-credential"}};
    }
};

json call(int id, const std::string& tool, json arguments = json::object()) {
    return {{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", {{"name", tool}, {"arguments", arguments}}}};
}

gateway::StdioRequest request_of(const json& body, std::chrono::milliseconds within = std::chrono::seconds(10)) {
    gateway::StdioRequest r;
    auto items = body.is_array() ? body : json::array({body});
    for (const auto& m : items) {
        r.lines.push_back(m.dump());
        if (m.contains("id") && m.contains("method")) r.ids.push_back(m["id"]);
        if (m.value("method", "") == "initialize") r.initialize = true;
    }
    r.batch = body.is_array();
    r.deadline = std::chrono::steady_clock::now() + within;
    return r;
}

std::string text_of(const json& answer) { return answer["result"]["content"][0]["text"]; }

}  // namespace

TEST_CASE("mcp stdio: lines are read whole across writes; CRLF and blank lines; an oversize line is skipped") {
    LineReader r(16);
    std::string line;
    r.feed("{\"a\":");
    CHECK(r.next(line) == LineReader::Next::none);
    r.feed("1}\r\n\n  \n{\"b\":2}\n");
    REQUIRE(r.next(line) == LineReader::Next::line);
    CHECK(line == "{\"a\":1}");
    REQUIRE(r.next(line) == LineReader::Next::line);
    CHECK(line == "{\"b\":2}");
    CHECK(r.next(line) == LineReader::Next::none);
    r.feed(std::string(40, 'x'));
    CHECK(r.next(line) == LineReader::Next::oversize);
    r.feed(std::string(40, 'y') + "\n{\"c\":3}\n");
    REQUIRE(r.next(line) == LineReader::Next::line);
    CHECK(line == "{\"c\":3}");
    r.feed(std::string(17, 'z') + "\n{\"d\":4}\n");
    CHECK(r.next(line) == LineReader::Next::oversize);
    REQUIRE(r.next(line) == LineReader::Next::line);
    CHECK(line == "{\"d\":4}");
}

TEST_CASE("mcp stdio: a request, a split answer, a batch answered out of order, a session minted") {
    Fake f;
    gateway::StdioChannel ch("fake", f.server, f.launcher, 1 << 20);
    auto init = ch.exchange(request_of({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", json::object()}}));
    REQUIRE_FALSE(init.refusal);
    CHECK(init.answer.status == 200);
    CHECK(init.answer.content_type == "application/json");
    CHECK(init.answer.session_id.starts_with("corral-"));
    CHECK(json::parse(init.answer.body)["result"]["serverInfo"]["name"] == "fake");
    auto split = ch.exchange(request_of(call(2, "split")));
    REQUIRE_FALSE(split.refusal);
    CHECK(text_of(json::parse(split.answer.body)) == "split");
    auto batch = ch.exchange(request_of(json::array({call(3, "slow"), call(4, "echo", {{"text", "four"}})})));
    REQUIRE_FALSE(batch.refusal);
    json b = json::parse(batch.answer.body);
    REQUIRE(b.is_array());
    REQUIRE(b.size() == 2);
    CHECK(b[0]["id"] == 4);  // as they came: echo answers at once, slow after 100 ms
    CHECK(b[1]["id"] == 3);
    auto note = ch.exchange(request_of({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}));
    CHECK(note.answer.status == 202);
    CHECK(note.answer.body.empty());
    CHECK(f.launcher->starts.load() == 1);
}

TEST_CASE("mcp stdio: an id that never comes back is a bounded timeout; a late answer is not taken for the next") {
    Fake f;
    gateway::StdioChannel ch("fake", f.server, f.launcher, 1 << 20);
    auto started = std::chrono::steady_clock::now();
    auto r = ch.exchange(request_of(call(1, "never"), std::chrono::milliseconds(300)));
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(3));
    REQUIRE(r.refusal);
    CHECK(r.refusal->reason == "timeout");
    CHECK(r.refusal->detail == "the stdio MCP server fake did not answer within idle_timeout");
    auto next = ch.exchange(request_of(call(1, "echo", {{"text", "same id, new call"}})));
    REQUIRE_FALSE(next.refusal);
    CHECK(text_of(json::parse(next.answer.body)) == "same id, new call");
}

TEST_CASE("mcp stdio: a server that exits is an error, and the next message starts it again") {
    Fake f;
    gateway::StdioChannel ch("fake", f.server, f.launcher, 1 << 20);
    auto r = ch.exchange(request_of(call(1, "exit")));
    REQUIRE(r.refusal);
    CHECK(r.refusal->reason == "upstream_connect");
    CHECK(r.refusal->detail ==
          "the stdio MCP server fake exited before it answered; it is started again on the next message");
    auto again = ch.exchange(request_of(call(3, "echo", {{"text", "back"}})));
    REQUIRE_FALSE(again.refusal);
    CHECK(text_of(json::parse(again.answer.body)) == "back");
    CHECK(f.launcher->starts.load() == 2);
}

TEST_CASE("mcp stdio: a session id of a process that is gone is expired (404) until initialize") {
    Fake f;
    gateway::StdioChannel ch("fake", f.server, f.launcher, 1 << 20);
    auto init = ch.exchange(request_of({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", json::object()}}));
    auto req = request_of(call(2, "echo", {{"text", "x"}}));
    req.session_id = init.answer.session_id;
    CHECK(ch.exchange(req).answer.status == 200);
    ch.stop();
    auto expired = ch.exchange(req);
    CHECK_FALSE(expired.refusal);
    CHECK(expired.answer.status == 404);
    CHECK(f.launcher->starts.load() == 1);
}

TEST_CASE("mcp stdio: an oversize answer line is reported oversize; the lines after it are read in step") {
    Fake f;
    gateway::StdioChannel ch("fake", f.server, f.launcher, 64 * 1024);
    auto big = ch.exchange(request_of(call(1, "big")));
    REQUIRE_FALSE(big.refusal);
    CHECK(big.answer.oversize);
    CHECK(big.answer.body.empty());
    auto next = ch.exchange(request_of(call(2, "echo", {{"text", "in step"}})));
    REQUIRE_FALSE(next.refusal);
    CHECK(text_of(json::parse(next.answer.body)) == "in step");
}

TEST_CASE("mcp stdio: the server's own request is answered by corral, its notification dropped") {
    Fake f;
    gateway::StdioChannel ch("fake", f.server, f.launcher, 1 << 20);
    auto r = ch.exchange(request_of(call(5, "chatty")));
    REQUIRE_FALSE(r.refusal);
    json a = json::parse(r.answer.body);
    REQUIRE(a.is_object());
    CHECK(a["id"] == 5);
    json told = json::parse(text_of(a));
    CHECK(told["error"]["code"] == -32601);
    CHECK(told["error"]["message"] == std::string(gateway::kStdioServerRequestRefused));
}

TEST_CASE("mcp stdio: a launcher that cannot start the server is an error naming it") {
    struct Failing : gateway::StdioLauncher {
        gateway::StdioProcess start(const std::string&, const mcp::StdioServer&) override {
            throw std::runtime_error("no sandbox today");
        }
    };
    mcp::StdioServer s;
    gateway::StdioChannel ch("fake", s, std::make_shared<Failing>(), 1024);
    auto r = ch.exchange(request_of(call(1, "echo")));
    REQUIRE(r.refusal);
    CHECK(r.refusal->detail == "the stdio MCP server fake could not be started: no sandbox today");
}

namespace {

// The gateway serving one worker's stdio server "files" on 127.0.0.1.
struct StdioEndpoint {
    World w;
    Fake fake;
    std::unique_ptr<Gateway> gw;
    std::shared_ptr<gateway::McpTools> tools;
    asio::io_context ioc;
    tcp::acceptor acceptor{ioc};
    std::thread thread;
    std::uint16_t port = 0;

    explicit StdioEndpoint(bool with_launcher = true) {
        gw = std::make_unique<Gateway>(w.config(), std::map<std::string, std::string>{{"fake-credential", kStdioSecret}});
        mcp::ToolsConfig t;
        t.servers["files"] = mcp::Server{"files", "test:1", fake.server, false};
        t.policy.servers = {"files"};
        for (std::string tool : {"echo", "secret", "calls"}) {
            mcp::Rule r;
            r.name = "allow-" + tool, r.server = "files", r.tool = tool, r.action = mcp::Action::allow;
            t.policy.rules.push_back(r);
        }
        tools = std::make_shared<gateway::McpTools>(t);
        if (with_launcher) tools->serve_stdio(fake.launcher, 1 << 20);
        port = listen_on_loopback(acceptor);
        asio::co_spawn(ioc, accept_loop(), asio::detached);
        thread = std::thread([this] { ioc.run(); });
    }
    ~StdioEndpoint() {
        ioc.stop();
        thread.join();
        // The channel's exchange thread before the io_context: a finished
        // job holds a strand of it until the thread lets go (UBSan caught a
        // strand outliving its service once, in CI run 42, when ioc went first).
        if (auto* channel = tools->stdio("files")) channel->join_exchanges();
    }
    asio::awaitable<void> accept_loop() {
        for (;;) {
            auto [ec, s] = co_await acceptor.async_accept(nothrow);
            if (ec) co_return;
            asio::co_spawn(ioc, gw->serve_mcp(std::move(s), Identity{"worker-a", "run-1"}, tools), asio::detached);
        }
    }
    json post(const json& body) {
        Client c(port);
        std::string text = body.dump();
        auto res = c.roundtrip("POST /mcp/files HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                               "Content-Length: " + std::to_string(text.size()) + "\r\n\r\n" + text);
        REQUIRE(res.result_int() == 200);
        return json::parse(res.body());
    }
};

}  // namespace

TEST_CASE("mcp endpoint, stdio server: tools/list filtered, allowed call answered, denied never sent, secret scrubbed") {
    StdioEndpoint ep;
    json listed = ep.post({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}});
    std::vector<std::string> names;
    for (const auto& t : listed["result"]["tools"]) names.push_back(t["name"]);
    CHECK(names == std::vector<std::string>{"echo", "secret", "calls"});  // danger: no rule allows it
    CHECK(text_of(ep.post(call(2, "echo", {{"text", "hi"}}))) == "hi");
    json denied = ep.post(call(3, "danger"));
    CHECK(denied["error"]["code"] == -32001);
    CHECK(denied["error"]["data"]["reason"] == "unknown_tool");
    CHECK(text_of(ep.post(call(4, "calls"))) == "1");  // echo only: danger never reached the server
    // The server got its secret (it echoes it) and the box reads it masked.
    std::string leaked = text_of(ep.post(call(5, "secret")));
    CHECK(leaked.starts_with("token="));
    CHECK(leaked.find(kStdioSecret) == std::string::npos);
    CHECK(leaked != "token=undefined");
    ep.gw->ledger().sync();
    CHECK(slurp(ep.w.ledger()).find(kStdioSecret) == std::string::npos);
}

TEST_CASE("mcp endpoint, stdio server: without a launcher it is an unknown server, as before") {
    StdioEndpoint ep(false);
    json a = ep.post(call(1, "echo", {{"text", "x"}}));
    CHECK(a["error"]["data"]["reason"] == "unknown_server");
    CHECK(ep.fake.launcher->starts.load() == 0);
}

TEST_CASE("mcp endpoint, stdio server: a server that exits is corral's -32603 sentence, HTTP 200") {
    StdioEndpoint ep;
    json a = ep.post(call(1, "echo", {{"text", std::string("x")}}));
    CHECK(text_of(a) == "x");
    ep.fake.launcher->script = "/nonexistent.js";  // the next start exits at once
    ep.tools->stdio("files")->stop();
    json gone = ep.post(call(2, "echo", {{"text", "y"}}));
    CHECK(gone["error"]["code"] == -32603);
    CHECK(gone["error"]["message"].get<std::string>().starts_with("corral gateway: MCP server files could not be reached: "
                                                                  "the stdio MCP server files exited"));
    CHECK(gone["id"] == 2);
}

}  // namespace corral::test::loopback
