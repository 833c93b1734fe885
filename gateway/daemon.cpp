#include "gateway/daemon.hpp"

#include <sys/random.h>
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
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/log.hpp"
#include "approval/protocol.hpp"
#include "gateway/approval_desk.hpp"
#include "gateway/approval_notifier.hpp"
#include "base/parse.hpp"
#include "base/sys_error.hpp"
#include "gateway/daemon_claim.hpp"
#include "gateway/daemon_protocol.hpp"
#include "gateway/grants.hpp"
#include "gateway/gateway.hpp"
#include "gateway/mcp_endpoint.hpp"
#include "gateway/socket_owner.hpp"

namespace corral::gateway {

namespace {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;
constexpr auto nothrow = asio::as_tuple(asio::use_awaitable);
using FirstLine = DaemonFirstLine;

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
        uid_t owner = tcp_socket_owner(theirs, ours);
        if (owner == 0) return "";
        return "the connecting socket belongs to uid " + std::to_string(owner) +
               "; listen_tcp serves root's connections only (it is for tests and benchmarks)";
    } catch (const std::exception& e) {  // SysError naming the failed call; anything else refuses too
        return std::string("the owner of the connecting socket cannot be read (") + e.what() +
               "); listen_tcp serves root's connections only";
    }
}

// On the connection's own loop, so the owner lookup never holds up accepting.
asio::awaitable<void> serve_tcp_client(asio::ip::tcp::socket s, Gateway& gw, Identity id) {
    std::string refusal = tcp_peer_refusal(s);
    if (refusal.empty()) {
        co_await gw.serve(std::move(s), std::move(id));
        co_return;
    }
    log::warn("gateway: refused a TCP client: " + refusal);
    co_await gw.refuse(std::move(s), std::move(id), std::string(reason::tcp_peer_not_root), refusal);
}

asio::awaitable<void> accept_tcp(asio::ip::tcp::acceptor& acceptor, EventLoops& loops, Gateway& gw,
                                 Identity id) {
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
    char peek[kMaxFirstLine];
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
        co_return parse_daemon_first_line(line);
    }
    co_return std::nullopt;
}

// The workers' governed tools; one with none for the workers that have none
// (their every MCP message is refused as unknown_server).
struct DaemonTools {
    std::map<std::string, std::shared_ptr<McpTools>> by_worker;
    std::shared_ptr<McpTools> none = std::make_shared<McpTools>(mcp::ToolsConfig{});
    const std::shared_ptr<McpTools>* find(const std::string& worker) const {
        auto it = by_worker.find(worker);
        return it == by_worker.end() ? nullptr : &it->second;
    }
};

// A budget answer line with "tool_calls" added.
std::string with_tool_calls(const std::string& answer, nlohmann::json tool_calls) {
    auto j = nlohmann::json::parse(answer, nullptr, false);
    if (!j.is_object()) return answer;
    j["tool_calls"] = std::move(tool_calls);
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

asio::awaitable<void> serve_unix_client(asio::local::stream_protocol::socket s, Gateway& gw, std::string instance,
                                        const DaemonTools& tools) {
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
    if (first.budget) {
        // `corral budget show|reset` (root peers only, as above).
        std::string answer = gw.worker_budget_answer(first.worker, first.budget_reset);
        // The worker's tool calls across its runs ([mcp.budget] tool_calls_per_worker) beside it.
        if (const auto* t = tools.find(first.worker); t && (*t)->across_runs()) {
            if (first.budget_reset) (*t)->across_runs()->reset();
            answer = with_tool_calls(answer, (*t)->across_runs()->state_json());
        }
        if (first.budget_reset) log::info("gateway: worker " + first.worker + "'s budget across runs was reset");
        co_await asio::async_write(s, asio::buffer(answer), nothrow);
        co_return;
    }
    if (first.counts) {
        // The run's supervisor asks at its start (is the daemon there?) and at
        // its end, for run.json (root peers only, as above).
        std::string who = first.id.str();
        DaemonCounts counts{gw.ledger().requests(who), gw.ledger().refusals(who), gw.ledger().secrets_reflected(who),
                            instance, gw.ledger().failure(), gw.model_totals(who), gw.ledger().refusal_notices(who)};
        if (const auto* t = tools.find(first.id.worker)) {
            (*t)->refresh();  // a trust accepted since holds for this run from now on
            counts.tools = (*t)->counts(who);
        }
        counts.approvals = gw.approvals().counts(who);
        std::string answer = counts_answer(counts);
        co_await asio::async_write(s, asio::buffer(answer), nothrow);
        co_return;
    }
    if (first.granted) {
        // A run's capture stub asks before it hands out an address (root peers only, as above).
        std::string answer = granted_answer(granted_ports(gw.config(), first.id, first.target->host));
        co_await asio::async_write(s, asio::buffer(answer), nothrow);
        co_return;
    }
    if (first.dns) {
        // A run's stub refused a query: the line the embedded gateway writes (run/capture_service.cpp).
        gw.ledger().append(dns_refusal_entry(first.id.str(), first.qtype, first.name, first.reason));
        co_await asio::async_write(s, asio::buffer(std::string("ok\n")), nothrow);
        co_return;
    }
    if (first.captured) {
        co_await gw.serve_captured(std::move(s), first.id, first.target);
        co_return;
    }
    if (first.mcp) {
        const auto* t = tools.find(first.id.worker);
        co_await gw.serve_mcp(std::move(s), first.id, t ? *t : tools.none);
        co_return;
    }
    co_await gw.serve(std::move(s), first.id);
}

asio::awaitable<void> accept_unix(asio::local::stream_protocol::acceptor& acceptor, EventLoops& loops,
                                  Gateway& gw, std::string instance, const DaemonTools& tools) {
    for (;;) {
        asio::local::stream_protocol::socket s(loops.next());
        auto [ec] = co_await acceptor.async_accept(s, nothrow);
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
        if (ec) {
            co_await back_off();
            continue;
        }
        auto ex = s.get_executor();
        asio::co_spawn(ex, serve_unix_client(std::move(s), gw, instance, tools), asio::detached);
    }
}

// Binds the Unix socket with mode 0600 from the start (umask), replacing a
// stale socket file but never any other kind of file (no other daemon serves
// it: the caller holds the socket's DaemonClaim). Returns which file it bound.
SocketFileId bind_unix(asio::local::stream_protocol::acceptor& acceptor, const std::string& path) {
    bind_root_only_socket(acceptor, path, "listen_unix");
    const auto bound = socket_file_id(path);
    if (!bound) throw SysError("lstat", path + " (just bound)", errno ? errno : ENOENT);
    return *bound;
}

asio::awaitable<void> sync_ledger_periodically(Gateway& gw) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    for (;;) {
        t.expires_after(std::chrono::seconds(1));
        auto [ec] = co_await t.async_wait(nothrow);
        if (ec) co_return;
        gw.ledger().sync();
    }
}

// 64 random bits in hex, drawn once per daemon start: a run compares the
// instance that answered at its start with the one at its end.
std::string new_instance_id() {
    unsigned char bytes[8];
    std::size_t got = 0;
    while (got < sizeof bytes) {
        ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw SysError("getrandom", "daemon instance id", errno);
        got += static_cast<std::size_t>(n);
    }
    static const char* digits = "0123456789abcdef";
    std::string id;
    for (unsigned char b : bytes) {
        id += digits[b >> 4];
        id += digits[b & 15];
    }
    return id;
}

// SIGHUP: the ledger is reopened by path (logrotate's create/move), every time.
asio::awaitable<void> reopen_ledger_on_sighup(asio::signal_set& signals, Gateway& gw) {
    for (;;) {
        auto [ec, sig] = co_await signals.async_wait(nothrow);
        if (ec) co_return;
        log::info("gateway: SIGHUP, " + gw.ledger().reopen());
    }
}

// SIGTERM/SIGINT: stop accepting, give the open connections the grace to
// finish (a connection between keep-alive requests closes instead of waiting
// for another), then stop every loop. A second signal ends the grace.
asio::awaitable<void> stop_on_signal(asio::signal_set& signals, std::function<void()> close_listeners, Gateway& gw,
                                     EventLoops& loops, std::chrono::milliseconds grace) {
    auto [ec, sig] = co_await signals.async_wait(nothrow);
    if (ec) co_return;
    const char* name = sig == SIGINT ? "SIGINT" : "SIGTERM";
    close_listeners();
    gw.begin_drain();
    log::info(std::string("gateway: ") + name + ", no new connections; " + std::to_string(gw.active_connections()) +
              " open, waiting at most " + format_duration(grace) + " for them");
    auto again_flag = std::make_shared<bool>(false);  // outlives this frame: the handler may run after it
    signals.async_wait([again_flag](const boost::system::error_code& e, int) { *again_flag = !e; });
    const bool& again = *again_flag;
    asio::steady_timer tick(co_await asio::this_coro::executor);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (gw.active_connections() != 0 && !again && std::chrono::steady_clock::now() < deadline) {
        tick.expires_after(std::chrono::milliseconds(20));
        co_await tick.async_wait(nothrow);
    }
    if (std::size_t left = gw.active_connections(); left != 0)
        log::warn("gateway: " + std::to_string(left) + " connections still open " +
                  (again ? std::string("at a second signal") : "after " + format_duration(grace)) + "; closing them");
    signals.cancel();
    for (auto& l : loops.loops) l->stop();
}

// The loopback TCP listener ([gateway] listen_tcp), bound and listening;
// returns the "listening tcp:HOST:PORT" line. Only loopback addresses.
std::string listen_tcp(asio::ip::tcp::acceptor& acceptor, const config::GatewayConfig& cfg, const std::string& source,
                       Gateway& gw) {
    auto addr = asio::ip::make_address(cfg.gateway.listen_tcp_host);
    if (!addr.is_loopback())
        throw UsageError(source + ": listen_tcp \"" + cfg.gateway.listen_tcp + "\": only loopback addresses are allowed");
    asio::ip::tcp::endpoint ep(addr, cfg.gateway.listen_tcp_port);
    acceptor.open(ep.protocol());
    acceptor.set_option(asio::socket_base::reuse_address(true));
    boost::system::error_code ec;
    acceptor.bind(ep, ec);
    if (ec) throw SysError("bind", cfg.gateway.listen_tcp, ec.value());
    acceptor.listen(asio::socket_base::max_listen_connections);
    auto bound = acceptor.local_endpoint();
    gw.add_listening_endpoint(bound);
    std::string shown = bound.address().is_v6() ? "[" + bound.address().to_string() + "]" : bound.address().to_string();
    return "listening tcp:" + shown + ":" + std::to_string(bound.port());
}

// Runs every event loop (the first on this thread) until they are stopped;
// the other loops may have nothing to do yet, so each is kept running.
void run_all_loops(EventLoops& loops, Gateway& gw) {
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> keep;
    for (auto& l : loops.loops) keep.push_back(asio::make_work_guard(*l));
    std::vector<std::thread> pool;
    for (std::size_t i = 1; i < loops.loops.size(); ++i)
        pool.emplace_back([&l = *loops.loops[i], i, &gw] { run_event_loop(l, "event loop " + std::to_string(i), &gw); });
    run_event_loop(loops.first(), "event loop 0", &gw);
    for (auto& l : loops.loops) l->stop();
    for (auto& t : pool) t.join();
}

// The approvals control socket, for grants and tool rules that ask a person
// first (`corral approvals --state-dir` finds it there). Always: a daemon
// serves many workers' rules, and it is one idle socket. And the notifier
// hook, when configured: told of each new request.
void serve_approvals(asio::io_context& ioc, Gateway& gw, const std::string& control_path,
                     std::optional<asio::local::stream_protocol::acceptor>& control,
                     std::optional<ApprovalNotifier>& notifier) {
    listen_for_approvals(control.emplace(ioc), control_path);
    // Named: GCC 12 mishandles a temporary passed to a coroutine's by-value
    // parameter (the daemon's own stack was overwritten when it was "daemon").
    const std::string decider = "daemon";
    asio::co_spawn(ioc, serve_approval_control(*control, gw.approvals(), decider), asio::detached);
    const config::GatewaySettings& settings = gw.config().gateway;
    if (settings.approval_command.empty()) return;
    notifier.emplace(ioc.get_executor(), settings.approval_command, resolve_hook_user(settings.approval_command_user));
    gw.approvals().on_asked([&n = *notifier](const approval::Entry& e) { n.notify(e); });
}

}  // namespace

int serve_daemon(DaemonOptions options) {
    const config::GatewayConfig& cfg = options.config;
    const std::string& source = options.source;
    auto secrets = config::load_credential_secrets(cfg);
    ::signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();

    auto tcp_identity = parse_identity(cfg.gateway.tcp_identity);
    if (!cfg.gateway.listen_tcp.empty() && !tcp_identity)
        throw UsageError(source + ": tcp_identity \"" + cfg.gateway.tcp_identity + "\": expected worker/run");

    // The gateway outlives the loops (the coroutine frames they destroy give
    // buffers back to it); its pooled upstream sockets are closed before the
    // loops go (ClosePooledFirst).
    Gateway gw(cfg, std::move(secrets));
    const DaemonTools tools{std::move(options.mcp_tools)};
    if (options.ledger_mirror) gw.ledger().mirror_to(std::move(options.ledger_mirror));
    EventLoops loops(options.threads);
    const std::string instance = new_instance_id();
    struct ClosePooledFirst {  // destroyed before `loops`, however this function ends
        Gateway& gw;
        ~ClosePooledFirst() { gw.close_idle_upstreams(); }
    } close_pooled_first{gw};
    // Sandboxes started with --gateway unix:PATH read <state_dir>/ca/ca.crt:
    // the daemon creates (or checks) its CA at start even without inject grants.
    (void)gw.ca_certificate_pem();
    asio::io_context& ioc = loops.first();

    std::optional<asio::local::stream_protocol::acceptor> unix_acceptor;
    std::optional<SocketFileId> bound_socket;
    std::optional<asio::ip::tcp::acceptor> tcp_acceptor;
    std::vector<std::string> ready_lines;
    if (!cfg.gateway.listen_unix.empty()) {
        unix_acceptor.emplace(ioc);
        bound_socket = bind_unix(*unix_acceptor, cfg.gateway.listen_unix);
        ready_lines.push_back("listening unix:" + cfg.gateway.listen_unix);
    }
    if (!cfg.gateway.listen_tcp.empty()) ready_lines.push_back(listen_tcp(tcp_acceptor.emplace(ioc), cfg, source, gw));
    std::optional<asio::local::stream_protocol::acceptor> control_acceptor;
    std::optional<ApprovalNotifier> notifier;
    const std::string control_path = approval::daemon_control_socket(cfg.gateway.state_dir);
    serve_approvals(ioc, gw, control_path, control_acceptor, notifier);
    ready_lines.push_back("approvals unix:" + control_path);

    if (unix_acceptor) asio::co_spawn(ioc, accept_unix(*unix_acceptor, loops, gw, instance, tools), asio::detached);
    if (tcp_acceptor) asio::co_spawn(ioc, accept_tcp(*tcp_acceptor, loops, gw, *tcp_identity), asio::detached);
    asio::co_spawn(ioc, sync_ledger_periodically(gw), asio::detached);

    asio::signal_set reopen_signal(ioc, SIGHUP);
    asio::co_spawn(ioc, reopen_ledger_on_sighup(reopen_signal, gw), asio::detached);
    asio::signal_set stop_signals(ioc, SIGTERM, SIGINT);
    auto close_listeners = [&] {
        boost::system::error_code ec;
        if (unix_acceptor) unix_acceptor->close(ec);
        if (tcp_acceptor) tcp_acceptor->close(ec);
        if (control_acceptor) control_acceptor->close(ec);
        // A request still waiting for a person ends now, recorded as
        // cancelled: nobody can approve it once the daemon is gone.
        gw.approvals().cancel_all("the gateway daemon stopped");
        if (notifier) notifier->stop();
    };
    asio::co_spawn(ioc, stop_on_signal(stop_signals, close_listeners, gw, loops, options.shutdown_grace), asio::detached);
    for (const auto& l : ready_lines) std::printf("%s\n", l.c_str());
    std::fflush(stdout);

    run_all_loops(loops, gw);
    gw.ledger().sync();
    // Only the socket this daemon bound: one put there since is someone else's.
    if (bound_socket) (void)remove_socket_if_ours(cfg.gateway.listen_unix, *bound_socket);
    if (control_acceptor) ::unlink(control_path.c_str());
    log::info("gateway: stopped");
    return 0;
}

}  // namespace corral::gateway
