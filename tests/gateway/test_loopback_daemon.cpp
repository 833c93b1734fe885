// gateway_loopback: `corral gateway` as a daemon (root-only Unix socket,
// identity announcements, --org), beside the in-process gateway of
// loopback_fixture.hpp.
#include <doctest/doctest.h>

#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gateway/daemon_claim.hpp"
#include "tests/gateway/loopback_fixture.hpp"
#include "tests/support/process.hpp"

namespace fs = std::filesystem;
using namespace corral;
using namespace corral::gateway;
using namespace corral::test::loopback;

// The Unix listener serves root peers only: skipped without root (doctest counts it).
TEST_CASE("corral gateway daemon: listening lines, root-only Unix socket with identity announcement, SIGTERM" * doctest::skip(!test::running_as_root())) {
    World w;
    std::string sock = w.dir.path + "/gw.sock";
    std::string cfg_path = w.dir.path + "/gateway.toml";
    {
        std::ofstream cfg(cfg_path);
        cfg << "[gateway]\nlisten_unix = \"" << sock << "\"\nlisten_tcp = \"127.0.0.1:0\"\ntcp_identity = \"bench/run-0\"\n"
            << "ledger = \"" << w.ledger() << "\"\nstate_dir = \"" << w.dir.path << "/state\"\n"
            << "upstream_ca_file = \"" << w.upstream_ca.certificate_path() << "\"\nhosts_file = \"" << w.dir.path
            << "/hosts\"\n\n[[grants]]\nhost = \"tun.test\"\nport = " << w.good.port
            << "\nmode = \"tunnel\"\nallow_private = true\n";
    }
    test::Background daemon({test::corral_bin(), "gateway", "--config", cfg_path, "--threads", "2"});
    REQUIRE(daemon.wait_for_stdout("listening tcp:127.0.0.1:", std::chrono::seconds(10)));
    REQUIRE(daemon.wait_for_stdout("\n", std::chrono::seconds(2)));
    std::string out = daemon.drain_stdout();
    CHECK(out.find("listening unix:" + sock) != std::string::npos);
    struct stat st {};
    REQUIRE(::stat(sock.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);

    asio::io_context ioc;
    std::string connect = "CONNECT tun.test:" + std::to_string(w.good.port) + " HTTP/1.1\r\nHost: x\r\n\r\n";
    {
        asio::local::stream_protocol::socket s(ioc);
        s.connect(asio::local::stream_protocol::endpoint(sock));
        asio::write(s, asio::buffer("CORRAL-IDENTITY worker-u/run-9\n" + connect));
        beast::flat_buffer b;
        http::response_parser<http::empty_body> p;
        p.skip(true);
        beast::error_code ec;
        http::read(s, b, p, ec);
        CHECK(p.get().result_int() == 200);
        // Then TLS with the real upstream through the spliced Unix→TCP tunnel.
        asio::ssl::context ctx(asio::ssl::context::tls_client);
        ctx.load_verify_file(w.upstream_ca.certificate_path());
        ctx.set_verify_mode(asio::ssl::verify_peer);
        asio::ssl::stream<asio::local::stream_protocol::socket> tls(std::move(s), ctx);
        SSL_set_tlsext_host_name(tls.native_handle(), "up.test");
        SSL_set1_host(tls.native_handle(), "up.test");
        tls.handshake(asio::ssl::stream_base::client, ec);
        REQUIRE_MESSAGE(!ec, ec.message());
        asio::write(tls, asio::buffer(std::string("GET /echo HTTP/1.1\r\nHost: up.test\r\n\r\n")));
        http::response<http::string_body> res;
        beast::flat_buffer rb;
        http::read(tls, rb, res, ec);
        CHECK(res.result_int() == 200);
        CHECK(res.body().find("key-is-real=no") != std::string::npos);
    }
    {
        // No announcement: closed without an answer, nothing dialled.
        asio::local::stream_protocol::socket s(ioc);
        s.connect(asio::local::stream_protocol::endpoint(sock));
        asio::write(s, asio::buffer(connect));
        char b[64];
        beast::error_code ec;
        std::size_t n = s.read_some(asio::buffer(b), ec);
        CHECK(n == 0);
        // Closing with the client's bytes unread may turn the FIN into a reset.
        CHECK((ec == asio::error::eof || ec == asio::error::connection_reset));
    }
    {
        // A peer that is not root, even with the socket opened to everyone:
        // its announcement is never read (SO_PEERCRED), nothing is dialled.
        REQUIRE(::chmod(w.dir.path.c_str(), 0711) == 0);
        REQUIRE(::chmod(sock.c_str(), 0666) == 0);
        std::string bytes = "CORRAL-IDENTITY worker-x/run-x\n" + connect;
        pid_t child = ::fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            // Only system calls between fork and _exit: the parent has threads.
            if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) ::_exit(3);
            int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
            sockaddr_un addr{};
            addr.sun_family = AF_UNIX;
            std::memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
            if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) ::_exit(2);
            // The daemon closes a peer that is not root's before reading a
            // byte: wait for that, then send anyway. The send then fails
            // (EPIPE, no SIGPIPE: the daemon closing first is the point).
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 5000) != 1) ::_exit(4);
            char b[64];
            if (::recv(fd, b, sizeof b, MSG_DONTWAIT) > 0) ::_exit(1);
            if (::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) >= 0 && ::read(fd, b, sizeof b) > 0) ::_exit(1);
            ::_exit(0);  // EOF or reset, no answer
        }
        int status = 0;
        REQUIRE(::waitpid(child, &status, 0) == child);
        CHECK_MESSAGE(WIFEXITED(status), "status " << status);
        CHECK_MESSAGE(WEXITSTATUS(status) == 0,
                      "uid 65534 peer: 1 = got an answer, 2 = could not connect, 3 = setresuid, 4 = not closed within 5 s");
        REQUIRE(::chmod(sock.c_str(), 0600) == 0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(slurp(w.ledger()).find("\"identity\":\"worker-u/run-9\"") != std::string::npos);
    CHECK(slurp(w.ledger()).find("worker-x") == std::string::npos);
    CHECK(w.good.connections.load() == 1);

    ::kill(daemon.pid(), SIGTERM);
    bool gone = false;
    for (int i = 0; i < 50 && !gone; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        gone = ::access(sock.c_str(), F_OK) != 0;
    }
    CHECK(gone);  // clean shutdown removes the socket
}

namespace {

// One proxy request on the daemon's Unix socket in the name of `identity`
// (the announcement a run's bridge sends); returns the status and the reason.
struct DaemonAnswer {
    int status = -1;
    std::string reason;
};
DaemonAnswer connect_as(const std::string& sock, const std::string& identity, const std::string& authority,
                        std::unique_ptr<asio::local::stream_protocol::socket>* keep = nullptr) {
    static asio::io_context ioc;
    auto s = std::make_unique<asio::local::stream_protocol::socket>(ioc);
    s->connect(asio::local::stream_protocol::endpoint(sock));
    asio::write(*s, asio::buffer("CORRAL-IDENTITY " + identity + "\nCONNECT " + authority + " HTTP/1.1\r\nHost: " +
                                 authority + "\r\n\r\n"));
    beast::flat_buffer b;
    http::response_parser<http::string_body> p;
    beast::error_code ec;
    if (http::read_header(*s, b, p, ec); ec) return {};
    DaemonAnswer a{static_cast<int>(p.get().result_int()), std::string(p.get()["X-Corral-Reason"])};
    if (keep) *keep = std::move(s);
    return a;
}

}  // namespace

// The Unix listener serves root peers only: skipped without root (doctest counts it).
TEST_CASE("corral gateway --org: each worker's implied grants serve that worker's runs only (403 for another's)" * doctest::skip(!test::running_as_root())) {
    World w;
    // Workers: a runs pi (api.anthropic.com), b runs codex with an API key
    // (api.openai.com), c runs claude and has a worker.toml grant for the test
    // upstream. The model hosts resolve to 127.0.0.1 from the hosts file: an
    // implied grant (no allow_private) that matches answers 403
    // private_address, one that does not 403 not_granted — told apart with
    // nothing dialled and no DNS asked.
    const std::string org = w.dir.path + "/org";
    const std::string sock = w.dir.path + "/org-gw.sock";
    fs::create_directories(org + "/workers/a");
    fs::create_directories(org + "/workers/b");
    fs::create_directories(org + "/workers/c");
    {
        std::ofstream hosts(w.dir.path + "/org-hosts");
        hosts << "127.0.0.1 up.test tun.test api.anthropic.com api.openai.com chatgpt.com\n";
    }
    {
        std::ofstream o(org + "/org.toml");
        o << "[gateway]\nlisten_unix = \"" << sock << "\"\nledger = \"" << w.ledger() << "\"\nstate_dir = \""
          << w.dir.path << "/state\"\nupstream_ca_file = \"" << w.upstream_ca.certificate_path()
          << "\"\nhosts_file = \"" << w.dir.path << "/org-hosts\"\n"
          << "[credentials.anthropic]\nkind = \"api_key\"\nenv = \"CORRAL_LOOPBACK_ANTHROPIC\"\n"
          << "[credentials.openai]\nkind = \"api_key\"\nenv = \"CORRAL_LOOPBACK_OPENAI\"\n"
          << "template = { \"authorization\" = \"Bearer {key}\" }\n"
          << "[[grants]]\nhost = \"tun.test\"\nport = " << w.good.port
          << "\nmode = \"tunnel\"\nallow_private = true\nidentities = [\"b\"]\n";
        std::ofstream(org + "/workers/a/worker.toml") << "agent = \"pi\"\n";
        std::ofstream(org + "/workers/b/worker.toml") << "agent = \"codex\"\n";
        std::ofstream(org + "/workers/c/worker.toml")
            << "agent = \"claude\"\n[[grants]]\nhost = \"up.test\"\nport = " << w.good.port
            << "\nmode = \"inject\"\ncredential = \"anthropic\"\nroutes = [\"GET /echo\"]\nallow_private = true\n";
    }
    test::RunOptions env;
    env.env["CORRAL_LOOPBACK_ANTHROPIC"] = kSecret;
    env.env["CORRAL_LOOPBACK_OPENAI"] = "sk-openai-loopback-secret";
    const std::string err = w.dir.path + "/org-gw.stderr";
    test::Background daemon({"sh", "-c", "exec \"$0\" gateway --org \"$1\" --threads 1 2>\"$2\"", test::corral_bin(),
                             org, err},
                            env);
    REQUIRE_MESSAGE(daemon.wait_for_stdout("listening unix:" + sock, std::chrono::seconds(10)), slurp(err));

    // Only b's agent implies api.openai.com; only a's and c's api.anthropic.com.
    CHECK(connect_as(sock, "a/run-1", "api.openai.com:443").reason == "not_granted");
    CHECK(connect_as(sock, "c/run-1", "api.openai.com:443").reason == "not_granted");
    CHECK(connect_as(sock, "b/run-1", "api.openai.com:443").reason == "private_address");
    CHECK(connect_as(sock, "a/run-1", "api.anthropic.com:443").reason == "private_address");
    CHECK(connect_as(sock, "c/run-1", "api.anthropic.com:443").reason == "private_address");
    CHECK(connect_as(sock, "b/run-1", "api.anthropic.com:443").reason == "not_granted");
    // An identity outside the organisation gets nothing; an org grant keeps its own scope.
    CHECK(connect_as(sock, "z/run-1", "api.anthropic.com:443").reason == "not_granted");
    CHECK(connect_as(sock, "a/run-1", "tun.test:" + std::to_string(w.good.port)).reason == "not_granted");
    // Token refresh: nobody.
    for (const char* who : {"a/run-1", "b/run-1", "c/run-1"})
        for (const char* target : {"platform.claude.com:443", "auth.openai.com:443"}) {
            CAPTURE(who);
            CAPTURE(target);
            auto answer = connect_as(sock, who, target);
            CHECK(answer.status == 403);
            CHECK(answer.reason == "not_granted");
        }
    // c's worker.toml grant is c's alone, and serves c with the real credential.
    const std::string up = "up.test:" + std::to_string(w.good.port);
    CHECK(connect_as(sock, "a/run-1", up).reason == "not_granted");
    CHECK(connect_as(sock, "b/run-1", up).reason == "not_granted");
    CHECK(w.good.connections.load() == 0);  // nothing so far was dialled
    {
        std::unique_ptr<asio::local::stream_protocol::socket> s;
        REQUIRE(connect_as(sock, "c/run-1", up, &s).status == 200);
        asio::ssl::context ctx(asio::ssl::context::tls_client);
        ctx.load_verify_file(w.corral_ca());
        ctx.set_verify_mode(asio::ssl::verify_peer);
        asio::ssl::stream<asio::local::stream_protocol::socket> tls(std::move(*s), ctx);
        SSL_set_tlsext_host_name(tls.native_handle(), "up.test");
        SSL_set1_host(tls.native_handle(), "up.test");
        beast::error_code ec;
        tls.handshake(asio::ssl::stream_base::client, ec);
        REQUIRE_MESSAGE(!ec, ec.message());
        asio::write(tls, asio::buffer("GET /echo HTTP/1.1\r\nHost: " + up + "\r\nx-api-key: " + kSentinel + "\r\n\r\n"));
        http::response<http::string_body> res;
        beast::flat_buffer rb;
        http::read(tls, rb, res, ec);
        CHECK(res.result_int() == 200);
        CHECK(res.body().find("key-is-real=yes") != std::string::npos);
    }
    {
        std::unique_ptr<asio::local::stream_protocol::socket> s;
        CHECK(connect_as(sock, "b/run-1", "tun.test:" + std::to_string(w.good.port), &s).status == 200);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const std::string ledger = slurp(w.ledger());
    CHECK(ledger.find("\"identity\":\"a/run-1\"") != std::string::npos);
    CHECK(ledger.find(kSecret) == std::string::npos);
    const std::string daemon_err = slurp(err);
    CHECK(daemon_err.find(kSecret) == std::string::npos);
    CHECK(daemon_err.find("worker b (codex): api.openai.com:443") != std::string::npos);
}

// The Unix listener serves root peers only: skipped without root (doctest counts it).
TEST_CASE("corral gateway --org: a worker whose credential is unavailable is named and left out; the others are served" * doctest::skip(!test::running_as_root())) {
    World w;
    const std::string org = w.dir.path + "/org";
    const std::string sock = w.dir.path + "/org-gw.sock";
    fs::create_directories(org + "/workers/a");
    fs::create_directories(org + "/workers/b");
    {
        std::ofstream hosts(w.dir.path + "/org-hosts");
        hosts << "127.0.0.1 api.anthropic.com api.openai.com\n";
    }
    std::ofstream(org + "/org.toml") << "[gateway]\nlisten_unix = \"" << sock << "\"\nledger = \"" << w.ledger()
                                     << "\"\nstate_dir = \"" << w.dir.path << "/state\"\nhosts_file = \"" << w.dir.path
                                     << "/org-hosts\"\n[credentials.anthropic]\nkind = \"api_key\"\nenv = "
                                        "\"CORRAL_LOOPBACK_ANTHROPIC\"\n[credentials.openai]\nkind = \"api_key\"\n"
                                        "env = \"CORRAL_LOOPBACK_UNSET\"\n";
    std::ofstream(org + "/workers/a/worker.toml") << "agent = \"pi\"\n";
    std::ofstream(org + "/workers/b/worker.toml") << "agent = \"codex\"\n";
    test::RunOptions env;
    env.env["CORRAL_LOOPBACK_ANTHROPIC"] = kSecret;
    const std::string err = w.dir.path + "/org-gw.stderr";
    test::Background daemon({"sh", "-c", "unset CORRAL_LOOPBACK_UNSET; exec \"$0\" gateway --org \"$1\" 2>\"$2\"",
                             test::corral_bin(), org, err},
                            env);
    REQUIRE_MESSAGE(daemon.wait_for_stdout("listening unix:" + sock, std::chrono::seconds(10)), slurp(err));
    const std::string said = slurp(err);
    CHECK(said.find("worker 'b' runs codex, which needs the credential 'openai' (env CORRAL_LOOPBACK_UNSET): not "
                    "available") != std::string::npos);
    CHECK(said.find("left out") != std::string::npos);
    CHECK(connect_as(sock, "b/run-1", "api.openai.com:443").reason == "not_granted");
    CHECK(connect_as(sock, "a/run-1", "api.anthropic.com:443").reason == "private_address");  // a is served
}

TEST_CASE("corral gateway --config ORG/org.toml: every error line is prefixed, with a hint to use --org") {
    World w;
    const std::string org = w.dir.path + "/hint-org";
    fs::create_directories(org + "/workers");
    std::ofstream(org + "/org.toml") << "[engine]\nagent = \"claude\"\n";
    auto r = test::run({test::corral_bin(), "gateway", "--config", org + "/org.toml"});
    INFO(r.err);
    CHECK(r.exit_code == 125);
    CHECK(r.err.find("corral gateway: " + org + "/org.toml:1: unknown key 'engine', allowed: gateway | credentials | "
                     "grants | budget | prices; this looks like an organisation's org.toml: use corral gateway --org " + org + "\n") !=
          std::string::npos);
    std::istringstream lines(r.err);
    int n = 0;
    for (std::string line; std::getline(lines, line); ++n) CHECK_MESSAGE(line.rfind("corral gateway: ", 0) == 0, line);
    CHECK(n >= 2);  // the missing [gateway] too, on its own prefixed line
    // Named org.toml without [engine]: the hint as well.
    std::ofstream(org + "/org.toml", std::ios::trunc) << "[credentials.a]\nkind = \"api_key\"\nenv = \"X\"\n";
    auto r2 = test::run({test::corral_bin(), "gateway", "--config", org + "/org.toml"});
    CHECK(r2.err.find("use corral gateway --org " + org) != std::string::npos);
}

namespace {

// A minimal daemon config: a Unix socket, a state dir, no grants.
std::string daemon_config(const std::string& dir, const std::string& name, const std::string& sock,
                          const std::string& state_dir) {
    const std::string path = dir + "/" + name + ".toml";
    std::ofstream(path) << "[gateway]\nlisten_unix = \"" << sock << "\"\nledger = \"" << dir << "/" << name
                        << "-ledger.jsonl\"\nstate_dir = \"" << state_dir << "\"\n";
    return path;
}

// Every line of every file of the daemon's journal directory.
std::string journal_text(const std::string& state_dir) {
    std::string all;
    for (const auto& e : fs::directory_iterator(state_dir + "/journal/gateway")) all += slurp(e.path().string());
    return all;
}

}  // namespace

// Root: the daemon's files are root's; skipped without root (doctest counts it).
TEST_CASE("a second corral gateway on a running one's state dir or socket is refused before it touches either" *
          doctest::skip(!test::running_as_root())) {
    World w;
    const std::string sock = w.dir.path + "/gw.sock";
    const std::string state = w.dir.path + "/state";
    test::Background first({test::corral_bin(), "gateway", "--config", daemon_config(w.dir.path, "first", sock, state)});
    REQUIRE(first.wait_for_stdout("listening unix:" + sock, std::chrono::seconds(10)));
    const auto first_socket = socket_file_id(sock);
    REQUIRE(first_socket);

    // The same state dir (and socket): refused, the live journal not recovered as lost.
    test::Result same = test::run({test::corral_bin(), "gateway", "--config", daemon_config(w.dir.path, "same", sock, state)});
    CHECK(same.exit_code != 0);
    CHECK_MESSAGE(same.err.find("another corral gateway (pid " + std::to_string(first.pid()) + ") is running with it") !=
                      std::string::npos, same.err);
    // Another state dir, the same socket: refused too.
    test::Result other = test::run(
        {test::corral_bin(), "gateway", "--config", daemon_config(w.dir.path, "other", sock, w.dir.path + "/state2")});
    CHECK(other.exit_code != 0);
    CHECK_MESSAGE(other.err.find("another corral gateway (pid " + std::to_string(first.pid()) + ") serves this socket") !=
                      std::string::npos, other.err);
    const auto still = socket_file_id(sock);
    REQUIRE(still);
    CHECK(still->ino == first_socket->ino);  // the second ones never replaced it
    CHECK(journal_text(state).find("gateway daemon lost") == std::string::npos);

    // A socket put at the path since is not the first daemon's to remove.
    REQUIRE(::unlink(sock.c_str()) == 0);
    asio::io_context ioc;
    asio::local::stream_protocol::acceptor newcomer(ioc, asio::local::stream_protocol::endpoint(sock));
    first.signal(SIGTERM);
    CHECK(first.wait_exit(std::chrono::seconds(15)) == 0);
    CHECK(socket_file_id(sock).has_value());
    CHECK(journal_text(state).find("gateway daemon lost") == std::string::npos);

    // Once the first has stopped, its state dir and socket path are free again.
    newcomer.close();
    ::unlink(sock.c_str());
    test::Background again({test::corral_bin(), "gateway", "--config", daemon_config(w.dir.path, "again", sock, state)});
    CHECK(again.wait_for_stdout("listening unix:" + sock, std::chrono::seconds(10)));
}
