// gateway/gateway.hpp — the serving side of the egress gateway.
//
// A Gateway owns everything shared between connections: the config, the
// credential secrets, the CA and its per-host TLS contexts, upstream trust
// stores and the pool of idle upstream connections, the ledger and the
// per-identity budgets. It is thread-safe: one io_context may run it on
// several threads; each connection then runs on its own strand. On an
// io_context built with concurrency hint 1 (run by one thread, as each of
// the daemon's loops and `corral run`'s loop is) no strand is needed or made.
//
// serve() is the one entry point: whoever accepted the connection (the
// daemon's TCP listener with its fixed identity, the Unix listener after the
// bridge's announcement line, or `corral run`'s embedded bridge) vouches for
// the identity; nothing the client sends can change it.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include "config/gateway_config.hpp"
#include "gateway/ca.hpp"
#include "gateway/grants.hpp"
#include "gateway/host.hpp"
#include "gateway/identity.hpp"
#include "gateway/ledger.hpp"
#include "gateway/metering/totals.hpp"
#include "gateway/tls.hpp"

namespace corral::gateway {

class ApprovalDesk;

class McpTools;  // gateway/mcp_endpoint.hpp

class Gateway {
public:
    // Loads (or creates) the CA in cfg.gateway.state_dir, opens the ledger,
    // reads hosts_file, and registers every secret with the ledger for
    // redaction. Throws UsageError/SysError for an unusable CA or hosts file;
    // an unwritable ledger does not throw: the gateway then refuses requests
    // with 503 ledger_unwritable and says so.
    Gateway(config::GatewayConfig cfg, std::map<std::string, std::string> secrets);
    ~Gateway();
    Gateway(const Gateway&) = delete;
    Gateway& operator=(const Gateway&) = delete;

    // Serves one accepted connection until it closes. Never throws: every
    // failure ends as a status to the client (if still possible) and a ledger
    // line. Runs the connection on a strand of the socket's executor, unless
    // that executor's io_context was built with concurrency hint 1.
    boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket s, Identity id);
    boost::asio::awaitable<void> serve(boost::asio::local::stream_protocol::socket s, Identity id);
    boost::asio::awaitable<void> serve(boost::asio::generic::stream_protocol::socket s, Identity id);

    // Serves one captured connection (docs/capture.md): accepted by a run's
    // captured listener in the box, `target` the name and port its local
    // address stands for (nullopt: none; refused and recorded). Served as a
    // CONNECT to that name:port, after its first bytes are checked; every
    // ledger line it makes says "captured": true. Never throws.
    boost::asio::awaitable<void> serve_captured(boost::asio::ip::tcp::socket s, Identity id,
                                                std::optional<Authority> target);
    // The same for a run whose captured connection a daemon serves: its
    // supervisor relays it over the Unix socket (CORRAL-CAPTURED,
    // daemon_protocol.hpp) and the daemon vouches for nothing more.
    boost::asio::awaitable<void> serve_captured(boost::asio::local::stream_protocol::socket s, Identity id,
                                                std::optional<Authority> target);
    boost::asio::awaitable<void> serve_captured(boost::asio::generic::stream_protocol::socket s, Identity id,
                                                std::optional<Authority> target);

    // Serves one accepted connection to the MCP endpoint of a worker's
    // remote MCP servers (gateway/mcp_endpoint.hpp): POST /mcp/NAME, plain
    // HTTP/1.1 with keep-alive, every request governed by `tools`. The
    // acceptor vouches for the identity, as for serve(). Never throws.
    boost::asio::awaitable<void> serve_mcp(boost::asio::ip::tcp::socket s, Identity id, std::shared_ptr<McpTools> tools);
    boost::asio::awaitable<void> serve_mcp(boost::asio::generic::stream_protocol::socket s, Identity id,
                                           std::shared_ptr<McpTools> tools);
    boost::asio::awaitable<void> serve_mcp(boost::asio::local::stream_protocol::socket s, Identity id,
                                           std::shared_ptr<McpTools> tools);

    // Hands the gateway its secrets after construction: `corral run` reads
    // them only once the box's init has been cloned, so no copy of them
    // exists in any process of the box. Call before serving connections
    // (not thread-safe); replaces any secrets given before.
    void install_secrets(std::map<std::string, std::string> secrets);

    // Refuses one accepted connection for a reason its acceptor found, before
    // reading a byte of it (the daemon's listen_tcp: a peer that is not
    // root): the status of reason `code` with X-Corral-Reason and `detail`,
    // one ledger line for `id`, then the connection closes (after the bounded
    // drain every refusal gets, so a request already on its way does not turn
    // the answer into a reset). Nothing is resolved or dialled. Never throws.
    boost::asio::awaitable<void> refuse(boost::asio::ip::tcp::socket s, Identity id, std::string code,
                                        std::string detail);

    // Closes the idle upstream connections kept for reuse. Call once the
    // event loops have stopped and before they are destroyed: a pooled
    // socket deregisters from its loop's reactor when it closes. (The loops
    // themselves go before the gateway: the connections' coroutine frames
    // they destroy give buffers back to it.)
    void close_idle_upstreams();

    // Records a TCP endpoint the gateway listens on so it never dials itself
    // (vet_addresses refuses it). Call before serving connections.
    void add_listening_endpoint(const boost::asio::ip::tcp::endpoint& ep);

    // `text` with every secret replaced by "[redacted]", for log lines built
    // from text the gateway did not write itself (an exception's message).
    std::string redact(std::string text) const;

    Ledger& ledger() { return ledger_; }
    const config::GatewayConfig& config() const { return cfg_; }
    const std::string& ca_certificate_pem() const { return ca_.certificate_pem(); }
    const std::string& ca_certificate_path() const { return ca_.certificate_path(); }
    std::size_t active_connections() const { return active_.load(); }
    // The daemon is stopping: a connection that has finished an exchange
    // closes instead of waiting for the next keep-alive request.
    void begin_drain();
    // Requests and tunnels admitted for `identity` so far (the budget counter).
    std::uint64_t admitted(const std::string& identity) const;
    // What `identity`'s model traffic came to so far (gateway/metering/totals.hpp).
    metering::MeterTotals model_totals(const std::string& identity) const;
    // A worker's budget across its runs as one JSON line (with its '\n'),
    // after resetting it when `reset`; {"worker":W,"budget":null} when it has none.
    std::string worker_budget_answer(const std::string& worker, bool reset);

    // The requests waiting for a person's approval, and the control
    // socket's answers (gateway/approval_desk.hpp).
    ApprovalDesk& approvals();

    // State shared by the connection handlers (gateway/internals.hpp).
    struct Internals;

private:
    config::GatewayConfig cfg_;
    std::map<std::string, std::string> secrets_;
    CertificateAuthority ca_;
    Ledger ledger_;
    std::unique_ptr<Internals> internals_;
    std::atomic<std::size_t> active_{0};
};

// Runs `loop` until it is stopped or out of work. An exception escaping a
// handler (a library throwing inside an I/O completion, where no coroutine's
// try can catch it) is logged, naming `name`, with the secrets of `gw` (if
// given) redacted, and the loop resumes: one connection must never take the
// daemon, or a run's egress, down. Returns how many exceptions it survived.
std::size_t run_event_loop(boost::asio::io_context& loop, std::string_view name, const Gateway* gw = nullptr);

}  // namespace corral::gateway
