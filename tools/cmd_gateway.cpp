// tools/cmd_gateway.cpp — `corral gateway --config FILE | --org DIR`: the
// egress gateway daemon.
//
// Configuration: either a stand-alone gateway file (--config: [gateway],
// [credentials.*], [[grants]] exactly as written), or an organisation (--org:
// loaded and validated as `corral run --config DIR` does; it serves every
// worker the grants its runs would get from an embedded gateway, scoped to
// that worker: agents::org_gateway_config).
//
// Listeners:
//  - listen_unix: a Unix stream socket, mode 0600, for the sandbox bridge
//    (shim/bridge). Only root peers are accepted (SO_PEERCRED). Each connection
//    starts with one announcement line naming who the bridge vouches for:
//        CORRAL-IDENTITY <worker>/<run>\n
//    (at most 256 bytes, within 5 s; worker and run made of [A-Za-z0-9._-]).
//    The client's own bytes follow it; a connection without a valid line is
//    closed without an answer. Instead, a run's supervisor may send
//        CORRAL-COUNTS <worker>/<run>\n
//    and gets one line {"requests":N,"refusals":M,"secrets_reflected":K} (that run's requests and
//    refusals so far, exact even past the ledger's refusal-line cap) for its
//    run.json, then the connection closes.
//  - listen_tcp: loopback only, for tests and benchmarks run as root; every
//    connection gets the fixed tcp_identity, so it is served only when the
//    socket at its other end is root's (the Unix listener's rule): the kernel
//    is asked who owns that socket (NETLINK_SOCK_DIAG, shim/socket_owner.hpp;
//    one netlink round trip per accepted connection, not per request). Any
//    other peer, or one whose owner cannot be read, gets 403
//    tcp_peer_not_root and a ledger line, and nothing is dialled: otherwise
//    every local user could send requests with the injected credentials.
// Threads: --threads N event loops (default: the number of CPUs, at most 4),
// each an io_context run by exactly one thread. The listeners accept on the
// first loop and hand each connection to the next loop in turn; everything a
// connection does (its client socket, upstream sockets, timers) then stays on
// that loop's thread, so no handler crosses threads and no loop has to wake
// another (one io_context shared by N threads woke sleeping threads, a futex
// and an epoll_ctl, whenever work moved between them).
// Once every listener is bound it prints "listening unix:PATH" and/or
// "listening tcp:ADDR:PORT" on stdout (flushed). SIGTERM/SIGINT stop accepting,
// sync the ledger and exit 0.
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/log.hpp"
#include "base/sys_error.hpp"
#include "config/gateway_config.hpp"
#include "gateway/gateway.hpp"
#include "config/org_config.hpp"
#include "rootfs/host_paths.hpp"
#include "shim/socket_owner.hpp"
#include "agents/agent_profile.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

namespace {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
constexpr auto nothrow = asio::as_tuple(asio::use_awaitable);
using FirstLine = gateway::DaemonFirstLine;

// One io_context per thread; connections are spread over them round-robin.
struct EventLoops {
    explicit EventLoops(unsigned n) {
        for (unsigned i = 0; i < n; ++i) loops.push_back(std::make_unique<asio::io_context>(1));
    }
    asio::io_context& first() { return *loops.front(); }
    // Only the accept loops call this, and they all run on the first loop's thread.
    asio::io_context& next() { return *loops[next_++ % loops.size()]; }
    std::vector<std::unique_ptr<asio::io_context>> loops;

private:
    std::size_t next_ = 0;
};

void usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: corral gateway (--config FILE | --org DIR) [--threads N]\n"
                 "\n"
                 "Runs the egress gateway: CONNECT and absolute-form http:// proxy with grants,\n"
                 "address vetting, TLS interception with credential injection, limits and a ledger.\n"
                 "\n"
                 "  --config FILE   gateway TOML ([gateway], [credentials.*], [[grants]]); see docs/gateway.md\n"
                 "  --org DIR       an organisation (DIR/org.toml, DIR/workers/*/worker.toml), validated as\n"
                 "                  `corral run --config DIR` does: org.toml's [gateway] and [credentials], its\n"
                 "                  [[grants]], and for every worker the grants its agent implies plus its\n"
                 "                  worker.toml grants, usable only by that worker's runs (identity WORKER/RUN).\n"
                 "                  Needs [gateway] listen_unix (default %s).\n"
                 "                  A worker whose agent's credential is unavailable is served without its\n"
                 "                  model grants, with a warning naming it; see docs/gateway.md\n"
                 "  --threads N     event-loop threads (default: CPUs, at most 4)\n"
                 "\n"
                 "Unix clients (listen_unix, root peers only) first send \"CORRAL-IDENTITY worker/run\\n\".\n"
                 "TCP clients (listen_tcp, for tests and benchmarks) are served only if their socket is root's.\n"
                 "Prints \"listening unix:PATH\" / \"listening tcp:ADDR:PORT\" once ready; SIGTERM/SIGINT stop it.\n",
                 std::string(config::default_gateway_socket).c_str());
}

// The gateway configuration of an organisation, with what it serves told on stderr.
config::GatewayConfig org_config(const std::string& dir) {
    config::OrgConfig org = config::load_org(dir);
    for (const auto& w : org.warnings) log::warn(w.text());
    auto plan = agents::org_gateway_config(org, agents::agent_credential_status(org));
    for (const auto& line : plan.left_out) log::warn("gateway: " + line);
    for (const auto& [name, wc] : org.workers) {
        std::string hosts;
        // Its own: the grants added after org.toml's (which keep their identities).
        for (std::size_t i = org.gateway.grants.size(); i < plan.config.grants.size(); ++i) {
            const auto& g = plan.config.grants[i];
            if (g.identities == std::vector<std::string>{name})
                hosts += (hosts.empty() ? "" : ", ") + g.host + ":" + std::to_string(g.port);
        }
        log::info("gateway: worker " + name + " (" + std::string(config::to_string(config::resolve_worker(org, name).agent)) +
                  "): " + (hosts.empty() ? std::string("no grants of its own") : hosts));
    }
    return std::move(plan.config);
}

void raise_fd_limit() {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &rl);
    }
}

// Pauses accepting briefly when out of fds instead of spinning.
asio::awaitable<void> back_off() {
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(50));
    co_await t.async_wait(nothrow);
}

// Why a TCP connection may not be served ("" when its peer is root). The
// peer is on loopback, so its socket is in this network namespace and the
// kernel knows its owner; anything short of "owned by uid 0" refuses.
std::string tcp_peer_refusal(const asio::ip::tcp::socket& s) {
    boost::system::error_code ec1, ec2;
    auto ours = s.local_endpoint(ec1);
    auto theirs = s.remote_endpoint(ec2);
    if (ec1 || ec2) return "the connection's addresses cannot be read: " + (ec1 ? ec1 : ec2).message();
    try {
        uid_t owner = shim::tcp_socket_owner(theirs, ours);
        if (owner == 0) return "";
        return "the connecting socket belongs to uid " + std::to_string(owner) +
               "; listen_tcp serves root's connections only (it is for tests and benchmarks)";
    } catch (const std::exception& e) {  // SysError naming the failed call; anything else refuses too
        return std::string("the owner of the connecting socket cannot be read (") + e.what() +
               "); listen_tcp serves root's connections only";
    }
}

// On the connection's own loop, so the owner lookup never holds up accepting.
asio::awaitable<void> serve_tcp_client(asio::ip::tcp::socket s, gateway::Gateway& gw, gateway::Identity id) {
    std::string refusal = tcp_peer_refusal(s);
    if (refusal.empty()) {
        co_await gw.serve(std::move(s), std::move(id));
        co_return;
    }
    log::warn("gateway: refused a TCP client: " + refusal);
    co_await gw.refuse(std::move(s), std::move(id), std::string(gateway::reason::tcp_peer_not_root), refusal);
}

asio::awaitable<void> accept_tcp(asio::ip::tcp::acceptor& acceptor, EventLoops& loops, gateway::Gateway& gw,
                                 gateway::Identity id) {
    for (;;) {
        asio::ip::tcp::socket s(loops.next());  // the loop the connection will live on
        auto [ec] = co_await acceptor.async_accept(s, nothrow);
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
        if (ec) {
            co_await back_off();
            continue;
        }
        boost::system::error_code ignored;
        s.set_option(asio::ip::tcp::no_delay(true), ignored);
        auto ex = s.get_executor();
        asio::co_spawn(ex, serve_tcp_client(std::move(s), gw, id), asio::detached);
    }
}

// Reads the first line without consuming a byte of what follows it.
asio::awaitable<std::optional<FirstLine>> read_announcement(asio::local::stream_protocol::socket& s) {
    char peek[256];
    for (int tries = 0; tries < 64; ++tries) {
        auto [ec, n] = co_await s.async_receive(asio::buffer(peek), asio::socket_base::message_peek, nothrow);
        if (ec || n == 0) co_return std::nullopt;
        std::string_view seen(peek, n);
        auto nl = seen.find('\n');
        if (nl == std::string_view::npos) {
            if (n == sizeof peek) co_return std::nullopt;
            // Partial line: wait for more (the timeout around us bounds this).
            asio::steady_timer t(s.get_executor(), std::chrono::milliseconds(20));
            co_await t.async_wait(nothrow);
            continue;
        }
        std::string line(seen.substr(0, nl));
        auto [rec, rn] = co_await asio::async_read(s, asio::buffer(peek, nl + 1), nothrow);
        if (rec || rn != nl + 1) co_return std::nullopt;
        co_return gateway::parse_daemon_first_line(line);
    }
    co_return std::nullopt;
}

asio::awaitable<void> serve_unix_client(asio::local::stream_protocol::socket s, gateway::Gateway& gw) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(s.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != 0) {
        log::warn("gateway: refused a Unix client that is not root (uid " + std::to_string(cred.uid) + ")");
        co_return;
    }
    asio::steady_timer timer(s.get_executor(), std::chrono::seconds(5));
    auto result = co_await (read_announcement(s) || timer.async_wait(asio::use_awaitable));
    if (result.index() != 0 || !std::get<0>(result)) {
        log::warn("gateway: closed a Unix client without a valid \"CORRAL-IDENTITY worker/run\" line");
        co_return;
    }
    const FirstLine& first = *std::get<0>(result);
    if (first.counts) {
        // The run's supervisor asks at its end, for run.json (root peers only, as above).
        std::string who = first.id.str();
        std::string answer = nlohmann::json{{"requests", gw.ledger().requests(who)},
                                            {"refusals", gw.ledger().refusals(who)},
                                            {"secrets_reflected", gw.ledger().secrets_reflected(who)}}
                                 .dump() +
                             "\n";
        co_await asio::async_write(s, asio::buffer(answer), nothrow);
        co_return;
    }
    co_await gw.serve(std::move(s), first.id);
}

asio::awaitable<void> accept_unix(asio::local::stream_protocol::acceptor& acceptor, EventLoops& loops,
                                  gateway::Gateway& gw) {
    for (;;) {
        asio::local::stream_protocol::socket s(loops.next());
        auto [ec] = co_await acceptor.async_accept(s, nothrow);
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
        if (ec) {
            co_await back_off();
            continue;
        }
        auto ex = s.get_executor();
        asio::co_spawn(ex, serve_unix_client(std::move(s), gw), asio::detached);
    }
}

// Binds the Unix socket with mode 0600 from the start (umask), replacing a
// stale socket file but never any other kind of file.
void bind_unix(asio::local::stream_protocol::acceptor& acceptor, const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            throw UsageError("listen_unix " + path + " exists and is not a socket; refusing to replace it");
        check_sys(::unlink(path.c_str()), "unlink", path);
    }
    asio::local::stream_protocol::endpoint ep(path);
    acceptor.open(ep.protocol());
    mode_t old = ::umask(0177);
    boost::system::error_code ec;
    acceptor.bind(ep, ec);
    ::umask(old);
    if (ec) throw SysError("bind", path, ec.value());
    check_sys(::chmod(path.c_str(), 0600), "chmod", path);
    acceptor.listen(asio::socket_base::max_listen_connections);
}

asio::awaitable<void> sync_ledger_periodically(gateway::Gateway& gw) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    for (;;) {
        t.expires_after(std::chrono::seconds(1));
        auto [ec] = co_await t.async_wait(nothrow);
        if (ec) co_return;
        gw.ledger().sync();
    }
}

}  // namespace

namespace {
// --config takes a stand-alone gateway file; an organisation's org.toml given
// there fails on its [engine] (or its missing [gateway]): say what was meant.
config::GatewayConfig load_standalone_config(const std::string& path) {
    try {
        return config::load_gateway_config(path);
    } catch (const config::ConfigError& e) {
        std::string text = e.what();
        const bool org_name = std::filesystem::path(path).filename() == "org.toml";
        if (!org_name && text.find("unknown key 'engine'") == std::string::npos) throw;
        auto dir = std::filesystem::path(path).parent_path().string();
        auto eol = text.find('\n');
        text.insert(eol == std::string::npos ? text.size() : eol,
                    "; this looks like an organisation's org.toml: use corral gateway --org " + (dir.empty() ? "." : dir));
        throw config::ConfigError(text);
    }
}

// A malformed command line: one line naming the problem, exit 2 (as every
// corral subcommand), not the 125 of a gateway that failed to start.
int bad_usage(const std::string& problem) {
    std::fprintf(stderr, "corral gateway: %s (see corral gateway --help)\n", problem.c_str());
    return 2;
}
}  // namespace

int cmd_gateway(int argc, char** argv) {
    std::string config_path, org_dir;
    unsigned threads = std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
    for (int i = 1; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a == "--help" || a == "-h") {
            usage(stdout);
            return 0;
        }
        const bool takes_value = a == "--config" || a == "--org" || a == "--threads";
        if (takes_value && i + 1 >= argc) return bad_usage(std::string(a) + " needs a value");
        if (takes_value) {
            std::string v = argv[++i];
            if (v.empty()) return bad_usage(std::string(a) + " needs a non-empty value");
            if (a == "--config") {
                config_path = v;
            } else if (a == "--org") {
                org_dir = v;
            } else {
                char* end = nullptr;
                unsigned long n = std::strtoul(v.c_str(), &end, 10);
                if (v.empty() || *end || n < 1 || n > 64)
                    return bad_usage("--threads \"" + v + "\": expected a number from 1 to 64");
                threads = static_cast<unsigned>(n);
            }
            continue;
        }
        return bad_usage("unexpected argument \"" + std::string(a) +
                         "\"; expected: --config FILE | --org DIR, [--threads N]");
    }
    if (!config_path.empty() && !org_dir.empty())
        return bad_usage("--config and --org: give one of them, not both");
    if (config_path.empty() && org_dir.empty()) return bad_usage("--config FILE or --org DIR is required");
    auto cfg = org_dir.empty() ? load_standalone_config(config_path) : org_config(org_dir);
    const std::string source = org_dir.empty() ? config_path : cfg.file;
    // The CA key, the ledger and the socket are written by root by path: only
    // in trees nobody but root can change (rootfs/host_paths.hpp).
    // The full paths: a file root creates must not land in a directory
    // others can write, even a sticky one (they could plant it first).
    rootfs::require_root_only_tree("[gateway] state_dir", cfg.gateway.state_dir + "/ca");
    if (!cfg.gateway.ledger.empty()) {
        rootfs::require_root_only_tree("[gateway] ledger", cfg.gateway.ledger);
        // The ledger is opened without following links: say so now, not as a
        // refusal of every request later. Its directory is made here if new.
        struct stat lst {};
        if (::lstat(cfg.gateway.ledger.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode))
            throw UsageError("[gateway] ledger " + cfg.gateway.ledger + ": is a symbolic link; name the file itself");
        (void)rootfs::open_root_only_dir("[gateway] ledger",
                                         std::filesystem::path(cfg.gateway.ledger).parent_path().string(), 0700);
    }
    if (!cfg.gateway.listen_unix.empty()) {
        rootfs::require_root_only_tree("[gateway] listen_unix", cfg.gateway.listen_unix);
        // The default socket's directory (/run/corral) is gone after a reboot: made here (0755) if missing.
        (void)rootfs::open_root_only_dir("[gateway] listen_unix",
                                         std::filesystem::path(cfg.gateway.listen_unix).parent_path().string(), 0755);
    }
    auto secrets = config::load_credential_secrets(cfg);
    ::signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();

    auto tcp_identity = gateway::parse_identity(cfg.gateway.tcp_identity);
    if (!cfg.gateway.listen_tcp.empty() && !tcp_identity)
        throw UsageError(source + ": tcp_identity \"" + cfg.gateway.tcp_identity + "\": expected worker/run");

    // The gateway outlives the loops (the coroutine frames they destroy give
    // buffers back to it); its pooled upstream sockets are closed before the
    // loops go (ClosePooledFirst).
    gateway::Gateway gw(cfg, std::move(secrets));
    EventLoops loops(threads);
    struct ClosePooledFirst {  // destroyed before `loops`, however this function ends
        gateway::Gateway& gw;
        ~ClosePooledFirst() { gw.close_idle_upstreams(); }
    } close_pooled_first{gw};
    // Sandboxes started with --gateway unix:PATH read <state_dir>/ca/ca.crt:
    // the daemon creates (or checks) its CA at start even without inject grants.
    (void)gw.ca_certificate_pem();
    asio::io_context& ioc = loops.first();

    std::optional<asio::local::stream_protocol::acceptor> unix_acceptor;
    std::optional<asio::ip::tcp::acceptor> tcp_acceptor;
    std::vector<std::string> ready_lines;
    if (!cfg.gateway.listen_unix.empty()) {
        unix_acceptor.emplace(ioc);
        bind_unix(*unix_acceptor, cfg.gateway.listen_unix);
        ready_lines.push_back("listening unix:" + cfg.gateway.listen_unix);
    }
    if (!cfg.gateway.listen_tcp.empty()) {
        auto addr = asio::ip::make_address(cfg.gateway.listen_tcp_host);
        if (!addr.is_loopback())
            throw UsageError(source + ": listen_tcp \"" + cfg.gateway.listen_tcp + "\": only loopback addresses are allowed");
        asio::ip::tcp::endpoint ep(addr, cfg.gateway.listen_tcp_port);
        tcp_acceptor.emplace(ioc);
        tcp_acceptor->open(ep.protocol());
        tcp_acceptor->set_option(asio::socket_base::reuse_address(true));
        boost::system::error_code ec;
        tcp_acceptor->bind(ep, ec);
        if (ec) throw SysError("bind", cfg.gateway.listen_tcp, ec.value());
        tcp_acceptor->listen(asio::socket_base::max_listen_connections);
        auto bound = tcp_acceptor->local_endpoint();
        gw.add_listening_endpoint(bound);
        std::string shown = bound.address().is_v6() ? "[" + bound.address().to_string() + "]" : bound.address().to_string();
        ready_lines.push_back("listening tcp:" + shown + ":" + std::to_string(bound.port()));
    }

    if (unix_acceptor) asio::co_spawn(ioc, accept_unix(*unix_acceptor, loops, gw), asio::detached);
    if (tcp_acceptor) asio::co_spawn(ioc, accept_tcp(*tcp_acceptor, loops, gw, *tcp_identity), asio::detached);
    asio::co_spawn(ioc, sync_ledger_periodically(gw), asio::detached);

    asio::signal_set signals(ioc, SIGTERM, SIGINT);
    signals.async_wait([&](const boost::system::error_code&, int sig) {
        log::info(std::string("gateway: ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ", shutting down");
        boost::system::error_code ec;
        if (unix_acceptor) unix_acceptor->close(ec);
        if (tcp_acceptor) tcp_acceptor->close(ec);
        for (auto& l : loops.loops) l->stop();
    });

    for (const auto& l : ready_lines) std::printf("%s\n", l.c_str());
    std::fflush(stdout);

    // The other loops may have nothing to do yet: keep them running until stopped.
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> keep;
    for (auto& l : loops.loops) keep.push_back(asio::make_work_guard(*l));
    std::vector<std::thread> pool;
    for (std::size_t i = 1; i < loops.loops.size(); ++i)
        pool.emplace_back([&l = *loops.loops[i], i, &gw] { gateway::run_event_loop(l, "event loop " + std::to_string(i), &gw); });
    gateway::run_event_loop(ioc, "event loop 0", &gw);
    for (auto& l : loops.loops) l->stop();
    for (auto& t : pool) t.join();
    gw.ledger().sync();
    if (!cfg.gateway.listen_unix.empty()) ::unlink(cfg.gateway.listen_unix.c_str());
    return 0;
}

}  // namespace corral::cli
