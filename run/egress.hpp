// run/egress.hpp — the box's way out: the bridge's listeners in the box's
// netns, served by the gateway embedded in this process or handed to a
// `corral gateway` daemon. Two small objects behind one interface; the run
// (tools/cmd_run.cpp) calls in at three places:
//
//   auto egress = make_egress(plan);
//   std::string ca = egress->prepare();  // before launch_sandbox: everything that can
//                                        // refuse the run; the CA the box must trust
//   launch_sandbox(spec, [&](const Sandbox& b) { egress->start(b); });  // hook point
//   supervise(...);
//   egress->stop();                      // after the command: drain, stop threads, counts
//
// Threads are started only in start(), after the clone (DESIGN: never clone
// from a multi-threaded process).
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <nlohmann/json.hpp>

#include "approval/attested.hpp"
#include "base/checked.hpp"
#include "gateway/metering/totals.hpp"
#include "gateway/ledger.hpp"
#include "run/refusal_report.hpp"
#include "run/resolve.hpp"
#include "run/bridge.hpp"
#include "run/capture_service.hpp"
#include "run/mcp_servers.hpp"
#include "supervisor/sandbox.hpp"

namespace boost::asio { class io_context; }

namespace corral::run {

// A session's box holds three roles' UIDs (supervisor/invocation.hpp). Its
// connections are told apart by who owns the connecting socket, as the
// kernel answers over sock_diag in the box's namespace, never by anything the
// box sends. The owner is the UID that made the socket: a socket one role
// hands to another still speaks for its maker.
class ConnectionRoles {
public:
    ConnectionRoles(Fd sock_diag, std::vector<std::pair<uid_t, std::string>> roles)
        : sock_diag_(std::move(sock_diag)), roles_(std::move(roles)) {}
    // The role of the UID owning the peer's socket; the problem when the
    // owner cannot be read or is no role's UID (the connection is then
    // refused: fail closed). Thread-safe.
    Checked<std::string> role_of(const boost::asio::ip::tcp::socket& s) const;

private:
    mutable std::mutex mutex_;  // one question at a time on the one sock_diag socket
    Fd sock_diag_;
    std::vector<std::pair<uid_t, std::string>> roles_;
};

class Egress {
public:
    virtual ~Egress();
    Egress(const Egress&) = delete;
    Egress& operator=(const Egress&) = delete;

    // Single-threaded, before launch_sandbox. Checks what the box's traffic
    // needs (fails before anything starts) and returns the CA (PEM) the box
    // must trust, "" when the box keeps its own trust store.
    // Throws UsageError / ConfigError / SysError.
    virtual std::string prepare() = 0;

    // After prepare(), before start(): the gateway's decisions (its ledger
    // lines) also go to `mirror`, the run's journal. False when this egress
    // keeps no ledger of its own (a daemon's decisions are in its journal).
    virtual bool journal_decisions(gateway::LedgerMirror mirror) = 0;

    // At the hook point: opens the bridge's listeners in the box's netns and
    // starts the event-loop thread.
    void start(const supervisor::Sandbox& box);

    // Refusal lines only at stop(), none while the box runs: with --tty the
    // box's program owns the terminal, and a line in the middle of its screen
    // would garble it. Call before start().
    void hold_refusal_lines_until_stop() { live_refusals_ = false; }

    // --tty: the requests that wait for a person are asked at the run's own
    // terminal too (run/terminal_approvals.hpp), and not announced in the
    // log, whose lines would land in the box's screen. Call before start().
    void ask_approvals_at_terminal() { approvals_at_terminal_ = true; }
    // What the relay asks at the run's terminal, once start() ran; null when
    // nothing is (no grant or tool rule asks a person, or --gateway: the
    // daemon's requests are decided with `corral approve` alone).
    virtual supervisor::QuestionSource* terminal_questions() { return nullptr; }

    // Where the refusal lines go (from the watcher's thread, and at stop()):
    // the run's own words, with its prefix ("corral run", "corral session").
    // Call before start(). Without one they are dropped.
    void tell_refusals_to(std::function<void(const std::string&)> sink) { refusal_sink_ = std::move(sink); }
    // A session's: every poll's notices are delivered to `listeners` too (its
    // live execs' callers hear of their refusals). Call before start().
    void deliver_refusals_to(RefusalListeners* listeners) { refusal_listeners_ = listeners; }

    // After supervise(): closes the listeners, lets open exchanges finish
    // (bounded), stops the thread, takes the counts. Idempotent.
    void stop();

    // The worker's stdio MCP servers, served through `servers` (their boxes,
    // launched before the agent's: run/mcp_servers.hpp). After prepare(),
    // before start(). Throws UsageError where this egress cannot serve them.
    virtual void serve_stdio_servers(std::shared_ptr<StdioServerBoxes> servers) = 0;

    // run.json's "gateway": {mode, ledger, requests, refusals, secrets_reflected,
    // ledger_failure, model}.
    virtual nlohmann::json record_fields() const = 0;
    // run.json's "tools": the run's tool calls through the MCP endpoint
    // (gateway::tool_counts_json), null when this egress serves no MCP.
    virtual nlohmann::json tools_record() const { return nullptr; }
    // What the agent reported through report_outcome (gateway/mcp_builtin.hpp),
    // once stop() has taken it; nullopt when it did not (or this egress does
    // not serve corral's built-in server).
    virtual std::optional<approval::AgentReport> agent_report() const { return std::nullopt; }
    // The run's model traffic, once stop() has taken the counts (nullopt
    // before, or when they could not be had).
    virtual std::optional<gateway::metering::MeterTotals> model_totals() const = 0;

    // What stop() has to tell (e.g. the daemon's counts could not be had),
    // handed over once: the run prints each and puts it into run.json's messages.
    std::vector<std::string> take_stop_messages() { return std::exchange(stop_messages_, {}); }

protected:
    Egress() = default;
    // What serves each connection the bridge accepts (on the loop's thread).
    virtual run::ConnectionHandler connection_handler() = 0;
    // Whether the box gets the MCP listener (run::mcp_bridge_port): the
    // worker has MCP servers and this egress serves them. Known after prepare().
    virtual bool serves_mcp() const { return false; }
    // What serves each connection on the MCP listener (after roles_ is set).
    virtual run::ConnectionHandler mcp_handler() { return {}; }
    // Before the loop starts (after the clone: the secrets may be loaded now).
    virtual void before_loop() {}
    // Transparent capture (a box whose spec has `capture`): where the DNS
    // stub's questions and the captured connections go, the embedded gateway
    // or the daemon (run/capture_service.hpp), and whose they are.
    virtual CaptureEndpoint capture_endpoint() = 0;
    virtual const gateway::Identity& identity() const = 0;
    // The listeners are closed: wait (bounded) for the open exchanges to end.
    virtual void drain() = 0;
    // The loop and its thread are gone: close what needed the loop, take the counts.
    virtual void after_loop() {}
    // The bridge's event loop, run by the one thread (a gateway to report its
    // failure to, or none).
    virtual void run_loop() = 0;
    // The host:ports the gateway refused for this run so far (polled while
    // the box runs, once more at the end; [] when they cannot be had).
    virtual std::vector<gateway::RefusalNotice> refusals_so_far() = 0;
    // Where the run's grants come from, for the refusal lines' advice.
    virtual gateway::GrantsFrom grants_from() const = 0;
    // Whether a connection of the box's is being served now (the refusal
    // watcher polls while one is).
    virtual bool traffic_open() const = 0;

    bool started_ = false;
    bool approvals_at_terminal_ = false;
    // A session's: which role a connection comes from (null for a run).
    std::shared_ptr<const ConnectionRoles> roles_;
    std::unique_ptr<boost::asio::io_context> ioc_;
    std::vector<std::string> stop_messages_;

private:
    // Prints the first refusal of each host:port on stderr as it happens.
    void report_refusals();
    void watch_refusals();
    // The box did something through corral (a connection began or ended, a
    // DNS question was refused): the refusal watcher polls again.
    void note_activity();
    // `handler`, and `serve` of a capture endpoint, with the activity noted
    // as each connection begins and ends; `record` too.
    run::ConnectionHandler noted(run::ConnectionHandler handler);
    CaptureEndpoint noted(CaptureEndpoint endpoint);

    std::unique_ptr<run::Bridge> bridge_;
    std::unique_ptr<run::Bridge> mcp_bridge_;  // only when serves_mcp()
    std::unique_ptr<CaptureService> capture_;  // with capture: the DNS stub and captured listeners
    std::vector<std::thread> threads_;
    bool stopped_ = false;
    RefusalReport refusal_report_;
    std::thread refusal_watcher_;
    std::mutex watch_mutex_;
    std::condition_variable watch_wake_;
    bool watch_stop_ = false;
    int polls_left_ = 0;  // the watcher's rounds still due since the last activity
    int rounds_per_poll_ = 1;       // 250 ms rounds between two polls: 1, doubling to 8 while nothing begins or ends
    int rounds_since_poll_ = 0;
    bool activity_since_poll_ = false;
    bool live_refusals_ = true;
    std::function<void(const std::string&)> refusal_sink_;
    RefusalListeners* refusal_listeners_ = nullptr;
};

// The embedded gateway (plan.gateway) or, with --gateway, the daemon.
std::unique_ptr<Egress> make_egress(const RunPlan& plan);

// run.json's "gateway" for a run refused before its egress existed: the mode
// asked for, no ledger, no counts.
nlohmann::json unstarted_gateway_record(const RunRequest& request);

}  // namespace corral::run
