#include "run/egress.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <variant>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>

#include "base/log.hpp"
#include "base/sys_error.hpp"
#include "config/gateway_config.hpp"
#include "approval/protocol.hpp"
#include "gateway/approval_desk.hpp"
#include "gateway/approval_notifier.hpp"
#include "gateway/gateway.hpp"
#include "gateway/identity.hpp"
#include "gateway/mcp_endpoint.hpp"
#include "gateway/refusal.hpp"
#include "gateway/socket_owner.hpp"
#include "rootfs/host_paths.hpp"
#include "run/capture_service.hpp"
#include "run/prepare.hpp"
#include "run/worker_tools.hpp"
#include "run/state_dir.hpp"
#include "run/terminal_approvals.hpp"
#include "run/trust.hpp"
#include "supervisor/invocation.hpp"

namespace corral::run {

using nlohmann::json;

namespace {

// Waits until `done()` or the bound: the box is gone (supervise returned
// after init exited), so its connections are closed and what is still open
// ends by itself.
template <typename F>
void wait_bounded(F&& done, std::chrono::milliseconds poll) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (!done() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(poll);
}

// The gateway in this process: the run's grants and credentials, its ledger
// in the run dir.
// A session's connection, served as its role (Identity::role, on each of
// its ledger lines); refused, unread, when it is no role's.
boost::asio::awaitable<void> serve_with_role(boost::asio::ip::tcp::socket s, gateway::Gateway* gw, gateway::Identity id,
                                             std::shared_ptr<const ConnectionRoles> roles) {
    auto role = roles->role_of(s);
    if (!role) {
        co_await gw->refuse(std::move(s), std::move(id), std::string(gateway::reason::session_role_unknown),
                            role.problem());
        co_return;
    }
    id.role = *role;
    co_await gw->serve(std::move(s), std::move(id));
}

// An MCP connection (the box's MCP listener), served as its role in a
// session; closed unserved when it is no role's.
boost::asio::awaitable<void> serve_mcp_as(boost::asio::ip::tcp::socket s, gateway::Gateway* gw, gateway::Identity id,
                                          std::shared_ptr<gateway::McpTools> tools,
                                          std::shared_ptr<const ConnectionRoles> roles) {
    if (roles) {
        auto role = roles->role_of(s);
        if (!role) {
            log::warn("bridge: closed an MCP connection of " + id.str() + " unserved: " + role.problem());
            co_return;
        }
        id.role = *role;
    }
    co_await gw->serve_mcp(std::move(s), std::move(id), std::move(tools));
}

// A configured grant or MCP server that needs an unreadable credential stops
// the run: name that grant or server (its file:line), not only the credential.
// Whether any grant or tool rule asks a person first (then the run serves
// the approvals control socket).
bool asks_approval(const config::GatewayConfig& cfg) {
    if (cfg.gateway.ask_unlisted) return true;
    for (const auto& g : cfg.grants)
        if (g.approval) return true;
    for (const auto& r : cfg.tools.policy.rules)
        if (r.action == mcp::Action::approval) return true;
    return false;
}

void require_credentials(const config::GatewayConfig& cfg) {
    std::set<std::string> checked;
    auto require = [&](const std::string& credential, const std::string& what) {
        if (credential.empty() || !checked.insert(credential).second) return;
        auto st = config::credential_status(cfg, credential);
        if (!st.available)
            throw UsageError(what + " needs the credential '" + credential + "'" +
                             (st.source.empty() ? "" : " (" + st.source + ")") + ", which is not available: " +
                             st.problem + (st.fix.empty() ? "" : "; to fix: " + st.fix));
    };
    for (const auto& g : cfg.grants)
        require(g.credential, g.where + ": the grant for " + g.host.text() + ":" + std::to_string(g.port));
    for (const auto& [name, server] : cfg.tools.servers)
        if (const auto* http = std::get_if<mcp::HttpServer>(&server.transport))
            require(http->credential, server.where + ": the MCP server " + name);
}

class EmbeddedEgress final : public Egress {
public:
    EmbeddedEgress(config::GatewayConfig config, bool intercepts, bool builtin_tools, gateway::Identity id,
                   std::string control_socket)
        : config_(std::move(config)), intercepts_(intercepts), builtin_tools_(builtin_tools), id_(std::move(id)),
          control_socket_(std::move(control_socket)) {}
    ~EmbeddedEgress() override { stop(); }

    std::string prepare() override {
        // A budget across the worker's runs needs one keeper for all of them:
        // a gateway embedded in one run cannot see the others (fail closed).
        if (config_.metering.worker.any())
            throw UsageError(worker_budget_refusal(id_.worker));
        if (!config_.tools.empty() && config_.tools.budgets.per_worker)
            throw UsageError(tool_calls_per_worker_refusal(id_.worker));
        require_credentials(config_);
        if (!config_.gateway.approval_command.empty())
            hook_user_ = gateway::resolve_hook_user(config_.gateway.approval_command_user);
        // Checked now (a run that cannot authenticate must not start) but kept
        // only from start() on, after the clone: the init and the reaper are
        // copies of this process and must hold no secret (docs/security.md).
        for (auto& [name, secret] : config::load_credential_secrets(config_)) explicit_bzero(secret.data(), secret.size());
        gateway_ = std::make_unique<gateway::Gateway>(config_, std::map<std::string, std::string>{});
        // The worker's MCP servers: one McpTools (one PinBook) for the run;
        // an agent run's also serves corral's own (report_outcome).
        if (!config_.tools.empty() || builtin_tools_) {
            mcp_tools_ = std::make_shared<gateway::McpTools>(config_.tools);
            if (builtin_tools_) mcp_tools_->serve_builtin();
            if (!config_.tools.empty()) load_pins();
        }
        if (!gateway_->ledger().healthy())
            throw UsageError("ledger " + gateway_->ledger().path() + ": " + gateway_->ledger().failure());
        return intercepts_ ? gateway_->ca_certificate_pem() : std::string();
    }

    bool journal_decisions(gateway::LedgerMirror mirror) override {
        gateway_->ledger().mirror_to(std::move(mirror));
        return true;
    }

    void serve_stdio_servers(std::shared_ptr<StdioServerBoxes> servers) override {
        if (!mcp_tools_ || servers->empty()) return;
        stdio_servers_ = servers;
        mcp_tools_->serve_stdio(std::move(servers), config_.gateway.limits.max_response_bytes);
    }

    json record_fields() const override {
        return {{"mode", "embedded"},
                {"ledger", gateway_ ? json(config_.gateway.ledger) : json(nullptr)},
                {"requests", gateway_ && started_ ? json(requests_) : json(nullptr)},
                {"refusals", gateway_ && started_ ? json(refusals_) : json(nullptr)},
                {"egress_refusals", gateway_ && started_ ? json(egress_refusals_) : json(nullptr)},
                {"secrets_reflected", gateway_ && started_ ? json(secrets_reflected_) : json(nullptr)},
                {"ledger_failure", ledger_failure_.empty() ? json(nullptr) : json(ledger_failure_)},
                {"model", model_ ? gateway::metering::totals_json(*model_) : json(nullptr)},
                {"approvals", gateway_ && started_ ? gateway::approval_counts_json(approvals_) : json(nullptr)}};
    }
    std::optional<gateway::metering::MeterTotals> model_totals() const override { return model_; }
    std::optional<approval::AgentReport> agent_report() const override { return agent_report_; }
    supervisor::QuestionSource* terminal_questions() override { return terminal_approvals_.get(); }
    json tools_record() const override {
        if (!mcp_tools_) return nullptr;
        json out = gateway::tool_counts_json(mcp_tools_->counts(id_.str()));
        // Where the stdio servers ran: each one's box (its run id names its cgroup and scratch).
        if (stdio_servers_) out["stdio_boxes"] = stdio_servers_->record();
        return out;
    }

protected:
    run::ConnectionHandler connection_handler() override {
        gateway::Gateway* gw = gateway_.get();
        gateway::Identity id = id_;
        if (!roles_) return [gw, id](boost::asio::ip::tcp::socket s) { return gw->serve(std::move(s), id); };
        auto roles = roles_;
        return [gw, id, roles](boost::asio::ip::tcp::socket s) { return serve_with_role(std::move(s), gw, id, roles); };
    }
    bool serves_mcp() const override { return mcp_tools_ != nullptr; }
    run::ConnectionHandler mcp_handler() override {
        gateway::Gateway* gw = gateway_.get();
        return [gw, id = id_, tools = mcp_tools_, roles = roles_](boost::asio::ip::tcp::socket s) {
            return serve_mcp_as(std::move(s), gw, id, tools, roles);
        };
    }
    void before_loop() override {
        auto secrets = config::load_credential_secrets(config_);
        // The stdio servers' secret_env comes from the same secrets, read
        // now: the agent's box exists, no clone of this process follows.
        if (stdio_servers_) stdio_servers_->use_secrets(secrets);
        gateway_->install_secrets(std::move(secrets));
        if (!asks_approval(config_)) return;
        if (approvals_at_terminal_) {
            terminal_approvals_ =
                std::make_unique<TerminalApprovals>(gateway_->approvals(), terminal_decider(::getuid()));
            gateway_->approvals().announce_in_log(false);
        }
        serve_approvals();
    }
    CaptureEndpoint capture_endpoint() override { return embedded_capture(*gateway_); }
    const gateway::Identity& identity() const override { return id_; }
    void run_loop() override { gateway::run_event_loop(*ioc_, "bridge event loop", gateway_.get()); }
    // Gives the exchanges a moment to write their ledger lines. A request
    // still waiting for a person ends now: nobody can approve it any more.
    void drain() override {
        gateway_->approvals().cancel_all("the run ended");
        wait_bounded([this] { return gateway_->active_connections() == 0; }, std::chrono::milliseconds(10));
    }
    std::vector<gateway::RefusalNotice> refusals_so_far() override {
        return gateway_ ? gateway_->ledger().refusal_notices(id_.str()) : std::vector<gateway::RefusalNotice>{};
    }
    gateway::GrantsFrom grants_from() const override { return gateway::GrantsFrom::run; }
    bool traffic_open() const override { return gateway_ && gateway_->active_connections() > 0; }
    void after_loop() override {
        if (!gateway_) return;
        gateway_->close_idle_upstreams();  // while ioc_ (their reactor) exists
        if (notifier_) notifier_->stop();  // a hook still telling of a request that ended
        if (control_) {
            boost::system::error_code ignored;
            control_->close(ignored);
            control_.reset();
            ::unlink(control_socket_.c_str());
        }
        gateway_->ledger().sync();
        const std::string identity = id_.str();
        requests_ = gateway_->ledger().requests(identity);
        refusals_ = gateway_->ledger().refusals(identity);
        egress_refusals_ = gateway_->ledger().egress_refusals(identity);
        secrets_reflected_ = gateway_->ledger().secrets_reflected(identity);
        model_ = gateway_->model_totals(identity);
        approvals_ = gateway_->approvals().counts(identity);
        if (mcp_tools_) agent_report_ = mcp_tools_->report(identity);
        ledger_failure_ = gateway_->ledger().failure();
        if (!ledger_failure_.empty())
            stop_messages_.push_back("the ledger failed during the run (" + ledger_failure_ +
                                     "); every request after that was refused");
        if (started_) save_pins();
    }

private:
    // The approvals control socket (gateway/approval_desk.hpp), for a run
    // whose grants ask a person first: `corral approvals|approve|deny`.
    void serve_approvals() {
        control_ = std::make_unique<boost::asio::local::stream_protocol::acceptor>(*ioc_);
        gateway::listen_for_approvals(*control_, control_socket_);
        // Named, not a temporary: see gateway/daemon.cpp's decider.
        const std::string decider = "run " + id_.run_id;
        boost::asio::co_spawn(*ioc_, gateway::serve_approval_control(*control_, gateway_->approvals(), decider),
                              boost::asio::detached);
        if (hook_user_) {
            notifier_ = std::make_unique<gateway::ApprovalNotifier>(ioc_->get_executor(),
                                                                    config_.gateway.approval_command, *hook_user_);
            gateway_->approvals().on_asked([n = notifier_.get()](const approval::Entry& e) { n->notify(e); });
        }
    }

    // The worker's MCP pins store (run/mcp_pin_store.hpp): what earlier runs
    // trusted holds in this one, below the configuration's pins. A store that
    // cannot be read stops the run (fail closed: trusting every tool afresh
    // would undo the quarantines it holds).
    void load_pins() {
        pin_dir_ = load_stored_pins(*mcp_tools_, "[gateway] state_dir", config_.gateway.state_dir, id_.worker);
    }
    // This run's first sights and quarantines, merged into the store.
    void save_pins() {
        if (!mcp_tools_ || pin_dir_.empty()) return;
        try {
            save_sights(*mcp_tools_, pin_dir_, id_.run_id);
        } catch (const std::exception& e) {
            stop_messages_.push_back(std::string("the MCP pins store could not be updated (") + e.what() +
                                     "): this run's first sights and quarantines are not kept for later runs");
        }
    }

    config::GatewayConfig config_;  // where the secrets are read from in before_loop()
    bool intercepts_;
    bool builtin_tools_;            // serve corral's own MCP server (an agent run)
    gateway::Identity id_;
    // Before the gateway: the desk's listeners point into it until the gateway is gone.
    std::unique_ptr<TerminalApprovals> terminal_approvals_;
    // The gateway outlives the loop (the coroutine frames the loop destroys
    // give buffers back to it); its pooled upstream sockets, which need the
    // loop's reactor, are closed in after_loop() before the loop goes.
    std::unique_ptr<gateway::Gateway> gateway_;
    std::shared_ptr<gateway::McpTools> mcp_tools_;  // null: the worker has no MCP servers
    std::shared_ptr<StdioServerBoxes> stdio_servers_;  // null: none to start
    std::string pin_dir_;                            // its pins store's directory
    std::string control_socket_;                     // the approvals control socket's path
    std::unique_ptr<boost::asio::local::stream_protocol::acceptor> control_;  // while it serves
    std::optional<gateway::HookUser> hook_user_;              // [gateway] approval_command's user
    std::unique_ptr<gateway::ApprovalNotifier> notifier_;    // with control_, when approval_command is set
    gateway::ApprovalCounts approvals_;
    std::uint64_t requests_ = 0, refusals_ = 0, egress_refusals_ = 0, secrets_reflected_ = 0;
    std::optional<gateway::metering::MeterTotals> model_;
    std::optional<approval::AgentReport> agent_report_;
    std::string ledger_failure_;
};

// A relay to the daemon (of the proxy listener's connections, or the MCP
// listener's with `mcp`), counted while it runs so that the daemon is asked
// for the run's counts only after the relays ended. A plain coroutine (not a
// capturing lambda): its parameters live in its own frame. A session's
// connection of no role's UID is closed unserved (the daemon then never hears of it).
boost::asio::awaitable<void> counted_relay(boost::asio::ip::tcp::socket s, std::string path, gateway::Identity id,
                                           std::shared_ptr<std::atomic<int>> active,
                                           std::shared_ptr<const ConnectionRoles> roles, bool mcp) {
    if (roles) {
        auto role = roles->role_of(s);
        if (!role) {
            log::warn("bridge: closed " + std::string(mcp ? "an MCP" : "a") + " connection of " + id.str() +
                      " unserved: " + role.problem());
            co_return;
        }
        id.role = *role;
    }
    active->fetch_add(1);
    co_await run::relay_to_daemon(std::move(s), std::move(path), std::move(id),
                                  mcp ? run::DaemonListener::mcp : run::DaemonListener::proxy);
    active->fetch_sub(1);
}

// A `corral gateway` daemon: it holds grants, credentials and the ledger;
// the box needs its CA.
class DaemonEgress final : public Egress {
public:
    // `mcp`: whether the worker has MCP servers (the box then gets the MCP
    // listener, relayed to the daemon as CORRAL-MCP connections).
    DaemonEgress(std::string socket, std::string state_dir, gateway::Identity id, bool mcp)
        : socket_(std::move(socket)), state_dir_(std::move(state_dir)), id_(std::move(id)), mcp_(mcp) {}
    ~DaemonEgress() override { stop(); }

    std::string prepare() override {
        const std::string named = "--gateway unix:" + socket_;
        const std::string start_it = "start it with `corral gateway --org ORG` or `systemctl start corral-gateway`";
        struct stat st{};
        if (::stat(socket_.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode))
            throw UsageError(named + ": no socket there (is `corral gateway` running? " + start_it + ")");
        // The box's traffic goes there: a socket only root can have put in place.
        rootfs::require_root_only_tree("--gateway", socket_);
        std::string ca_path = state_dir_ + "/ca/ca.crt";
        std::string ca = read_optional_file(ca_path);
        if (ca.find("BEGIN CERTIFICATE") == std::string::npos)
            throw UsageError("--gateway: cannot read the gateway's CA certificate " + ca_path +
                             " (the daemon's state_dir: [gateway] state_dir in org.toml with --config, else --state-dir)");
        // A socket file outlives a killed daemon, and a stopped (SIGSTOP) or
        // wedged one accepts and never answers: ask it something before the
        // box exists, so a run never starts without its gateway. Its answer
        // also names the daemon instance the run's counts will come from.
        auto counts = run::query_daemon_counts(socket_, id_, kDaemonAnswerTimeout);
        if (!counts) throw UsageError(named + ": the daemon does not answer (" + counts.problem() + "); " + start_it);
        if (!counts->ledger_failure.empty())
            throw UsageError(named + ": the daemon refuses every request: its ledger cannot be written (" +
                             counts->ledger_failure + ")");
        // The box's MCP listener is relayed there: a daemon that serves this
        // worker no MCP servers would refuse every call (or, older than
        // CORRAL-MCP, close the connections unread). Say so before the box exists.
        if (mcp_ && !counts->tools)
            throw UsageError(named + ": the daemon serves worker " + id_.worker + " no MCP servers (it was started "
                             "before the worker's [mcp.servers] were written, or is older than this corral): "
                             "restart it (`systemctl restart corral-gateway`), or run without --gateway");
        instance_at_start_ = counts->instance;
        return ca;
    }

    // The daemon keeps the ledger (its lines carry this identity) and the
    // counts, asked for at stop(); null if it could not be asked, or if the
    // daemon that answers is not the one the run started with (a restarted
    // daemon knows nothing of the run's earlier requests).
    bool journal_decisions(gateway::LedgerMirror) override { return false; }
    // check_run_can_start refuses a stdio server with --gateway; were one
    // here anyway, the daemon answers its messages unknown_server (fail
    // closed), and its box is torn down with the run's.
    void serve_stdio_servers(std::shared_ptr<StdioServerBoxes>) override {}

    json record_fields() const override {
        return {{"mode", "unix:" + socket_},
                {"ledger", nullptr},
                {"requests", counts_ ? json(counts_->requests) : json(nullptr)},
                {"refusals", counts_ ? json(counts_->refusals) : json(nullptr)},
                {"secrets_reflected", counts_ ? json(counts_->secrets_reflected) : json(nullptr)},
                {"ledger_failure", ledger_failure_.empty() ? json(nullptr) : json(ledger_failure_)},
                {"model", counts_ && counts_->model ? gateway::metering::totals_json(*counts_->model) : json(nullptr)},
                // The daemon's count of the run's approvals (null: an older daemon, or no counts).
                {"approvals", counts_ && counts_->approvals ? approval::approval_counts_json(*counts_->approvals)
                                                            : json(nullptr)}};
    }
    std::optional<gateway::metering::MeterTotals> model_totals() const override {
        return counts_ ? counts_->model : std::nullopt;
    }
    // The daemon's counts of the run's tool calls (null: no MCP, or no counts).
    json tools_record() const override {
        return mcp_ && counts_ && counts_->tools ? gateway::tool_counts_json(*counts_->tools) : json(nullptr);
    }

protected:
    run::ConnectionHandler connection_handler() override { return relay_handler(false); }
    bool serves_mcp() const override { return mcp_; }
    run::ConnectionHandler mcp_handler() override { return relay_handler(true); }
    run::ConnectionHandler relay_handler(bool mcp) {
        std::string path = socket_;
        gateway::Identity id = id_;
        auto active = active_relays_;
        auto roles = roles_;
        return [path, id, active, roles, mcp](boost::asio::ip::tcp::socket s) {
            return counted_relay(std::move(s), path, id, active, roles, mcp);
        };
    }
    void run_loop() override { gateway::run_event_loop(*ioc_, "bridge event loop", nullptr); }
    CaptureEndpoint capture_endpoint() override { return daemon_capture(socket_); }
    const gateway::Identity& identity() const override { return id_; }
    // The box is gone, its relays see EOF and end; the daemon counts an
    // exchange when it ends, so ask only after them.
    void drain() override {
        wait_bounded([this] { return active_relays_->load() == 0; }, std::chrono::milliseconds(5));
    }
    void after_loop() override {
        if (!started_) return;
        const std::string unknown = "; requests, refusals and secrets_reflected recorded as null";
        auto counts = run::query_daemon_counts(socket_, id_, kDaemonAnswerTimeout);
        if (!counts) {
            stop_messages_.push_back(counts.problem() + unknown);
            return;
        }
        ledger_failure_ = counts->ledger_failure;
        if (!ledger_failure_.empty())
            stop_messages_.push_back("gateway daemon at " + socket_ + ": its ledger failed (" + ledger_failure_ +
                                     "); every request after that was refused");
        if (counts->instance != instance_at_start_) {
            stop_messages_.push_back("gateway daemon at " + socket_ + " restarted during the run (instance " +
                                     (instance_at_start_.empty() ? "?" : instance_at_start_) + " at the start, " +
                                     (counts->instance.empty() ? "?" : counts->instance) +
                                     " at the end): the counts of the run's earlier requests are lost" + unknown);
            return;
        }
        counts_ = *counts;
    }

    // At the end, the counts already asked for; while the run is alive, a
    // query of its own. A daemon that did not answer is not asked again for
    // 1 s, doubling to 8 s: each box on it polls while it has traffic, and a
    // query given up leaves a connection in its queue, so polling a daemon
    // that falls behind would fill that queue (256 boxes at a load of 100:
    // docs/benchmarks.md, "Scale"). The run's end asks regardless.
    std::vector<gateway::RefusalNotice> refusals_so_far() override {
        if (counts_) return counts_->refused;
        const auto now = std::chrono::steady_clock::now();
        if (now < quiet_until_) return {};
        auto counts = run::query_daemon_counts(socket_, id_, kDaemonAnswerTimeout);
        if (!counts) {
            quiet_for_ = std::min(std::max(quiet_for_ * 2, std::chrono::milliseconds(1000)), std::chrono::milliseconds(8000));
            quiet_until_ = std::chrono::steady_clock::now() + quiet_for_;
            return {};
        }
        quiet_for_ = std::chrono::milliseconds(0);
        return counts->refused;
    }
    gateway::GrantsFrom grants_from() const override { return gateway::GrantsFrom::daemon; }
    bool traffic_open() const override { return active_relays_->load() > 0; }

private:
    // How long the daemon may take to answer one step of a counts query.
    static constexpr std::chrono::milliseconds kDaemonAnswerTimeout{2000};
    std::string socket_, state_dir_;
    gateway::Identity id_;
    bool mcp_;
    std::string instance_at_start_;
    // refusals_so_far's pause after a query the daemon did not answer.
    std::chrono::milliseconds quiet_for_{0};
    std::chrono::steady_clock::time_point quiet_until_{};
    std::shared_ptr<std::atomic<int>> active_relays_ = std::make_shared<std::atomic<int>>(0);
    std::optional<gateway::DaemonCounts> counts_;
    std::string ledger_failure_;
};

}  // namespace

Checked<std::string> ConnectionRoles::role_of(const boost::asio::ip::tcp::socket& s) const {
    boost::system::error_code ec1, ec2;
    auto ours = s.local_endpoint(ec1);
    auto theirs = s.remote_endpoint(ec2);
    if (ec1 || ec2) return Failed{"the connection's addresses cannot be read: " + (ec1 ? ec1 : ec2).message()};
    uid_t owner = 0;
    try {
        std::lock_guard lock(mutex_);
        owner = gateway::tcp_socket_owner(sock_diag_.get(), theirs, ours);
    } catch (const std::exception& e) {
        return Failed{std::string("the owner of the connecting socket cannot be read (") + e.what() + ")"};
    }
    for (const auto& [uid, role] : roles_)
        if (uid == owner) return role;
    return Failed{"the connecting socket belongs to uid " + std::to_string(owner) + ", which is none of the session's roles"};
}

Egress::~Egress() = default;

void Egress::start(const supervisor::Sandbox& box) {
    started_ = true;
    Fd netns = box.open_network_namespace();
    const bool session = !box.role_leases().empty();
    const bool capture = box.spec().capture;
    run::BridgeListeners listeners = run::open_bridge_listeners(netns.get(), run::bridge_port, session,
                                                                serves_mcp() ? run::mcp_bridge_port : 0, capture);
    if (session) {
        std::vector<std::pair<uid_t, std::string>> roles;
        for (auto role : {supervisor::Role::agent, supervisor::Role::service, supervisor::Role::verifier})
            roles.emplace_back(supervisor::role_uid_gid(box, role).first, std::string(supervisor::role_name(role)));
        roles_ = std::make_shared<const ConnectionRoles>(std::move(listeners.sock_diag), std::move(roles));
    }
    // One event-loop thread: a run's box is one client, its exchanges are
    // asynchronous, and every thread is a clone and a wakeup on each start
    // and stop of a run (the daemon runs one loop per CPU instead).
    ioc_ = std::make_unique<boost::asio::io_context>(1);
    before_loop();
    Fd dns4 = std::move(listeners.dns_ipv4), dns6 = std::move(listeners.dns_ipv6);
    run::BridgeListeners mcp;  // the MCP listener's, on a Bridge of its own
    mcp.ipv4 = std::move(listeners.mcp_ipv4);
    mcp.ipv6 = std::move(listeners.mcp_ipv6);
    bridge_ = std::make_unique<run::Bridge>(*ioc_, std::move(listeners), noted(connection_handler()));
    bridge_->start();
    if (serves_mcp()) {
        mcp_bridge_ = std::make_unique<run::Bridge>(*ioc_, std::move(mcp), noted(mcp_handler()));
        mcp_bridge_->start();
    }
    if (capture) {
        capture_ = std::make_unique<CaptureService>(*ioc_, noted(capture_endpoint()), identity(), box.spec().hostname,
                                                    std::move(netns), std::move(dns4), std::move(dns6), roles_);
        capture_->start();
    }
    // The guard lives as long as the thread holds it; stop() ends the loop explicitly.
    auto guard = std::make_shared<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(
        ioc_->get_executor());
    threads_.emplace_back([this, guard] { run_loop(); });
    if (live_refusals_) refusal_watcher_ = std::thread([this] { watch_refusals(); });
}

void Egress::stop() {
    if (stopped_) return;
    stopped_ = true;
    if (refusal_watcher_.joinable()) {
        {
            std::lock_guard lock(watch_mutex_);
            watch_stop_ = true;
        }
        watch_wake_.notify_all();
        refusal_watcher_.join();
    }
    if (bridge_) bridge_->stop();
    if (mcp_bridge_) mcp_bridge_->stop();
    if (capture_) capture_->stop();
    if (ioc_) drain();
    if (ioc_) ioc_->stop();
    for (auto& t : threads_)
        if (t.joinable()) t.join();
    threads_.clear();
    bridge_.reset();
    mcp_bridge_.reset();
    capture_.reset();  // its sockets and listeners, with the loop gone (before after_loop's closes)
    after_loop();
    if (started_) report_refusals();  // what the last moments refused
}

std::unique_ptr<Egress> make_egress(const RunPlan& plan) {
    if (plan.daemon_socket)
        return std::make_unique<DaemonEgress>(*plan.daemon_socket, plan.gateway.gateway.state_dir,
                                              plan.identity, !plan.gateway.tools.empty());
    return std::make_unique<EmbeddedEgress>(plan.gateway, plan.intercepts, plan.builtin_tools, plan.identity,
                                            approval::run_control_socket(plan.state_dir, plan.identity.run_id));
}

json unstarted_gateway_record(const RunRequest& r) {
    return {{"mode", r.gateway ? "unix:" + *r.gateway : std::string("embedded")},
            {"ledger", nullptr},
            {"requests", nullptr},
            {"refusals", nullptr},
            {"secrets_reflected", nullptr},
            {"ledger_failure", nullptr},
            {"model", nullptr},
            {"approvals", nullptr}};
}

}  // namespace corral::run
