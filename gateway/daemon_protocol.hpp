// gateway/daemon_protocol.hpp — the lines a run's supervisor and a
// `corral gateway` daemon exchange on the daemon's Unix socket, both sides in
// one place (the daemon: gateway/daemon.cpp; the run: run/bridge.cpp).
//
// A connection starts with one line (at most kMaxFirstLine bytes, '\n'-ended):
//   CORRAL-IDENTITY worker/run   a connection of that run follows: the box's
//                                bytes come right after the line
//   CORRAL-IDENTITY worker/run role=ROLE
//                                the same for a session's connection, from
//                                the UID of ROLE (Identity::role; ROLE has
//                                an identity part's characters)
//   CORRAL-MCP worker/run[ role=ROLE]
//                                a connection of the box's MCP listener
//                                (run::mcp_bridge_port) follows: the daemon
//                                serves it as the worker's MCP endpoint
//                                (Gateway::serve_mcp), not as its proxy
//   CORRAL-COUNTS worker/run     the daemon answers one JSON line (below)
//                                and closes
//   CORRAL-GRANTED worker/run HOST
//                                the daemon answers {"ports":[443,...]}: the
//                                ports the identity's grants give HOST
//                                (granted_ports; [] for none), and closes:
//                                the question a run's capture stub asks
//                                before it hands out a synthetic address
//   CORRAL-CAPTURED worker/run HOST:PORT[ role=ROLE]
//                                a connection the box made to HOST:PORT's
//                                synthetic address follows (its bytes right
//                                after the line): the daemon serves it as
//                                captured (Gateway::serve_captured), as the
//                                embedded gateway does (docs/capture.md)
//   CORRAL-DNS worker/run QTYPE NAME REASON
//                                the run's stub refused a query (QTYPE "A",
//                                "AAAA", "TYPE65"...; NAME as asked, REASON a
//                                refusal code): the daemon writes the ledger
//                                line the embedded gateway would have, answers
//                                "ok" and closes
// The counts answer:
//   {"requests":N,"refusals":M,"secrets_reflected":K,"instance":"<hex>","ledger":"ok"|"<failure>",
//    "model":{...metering::totals_json...},
//    "refused":[{"host","port","method","mode","reason","status","count"}, ...],
//    "tools":{...tool_counts_json...},   (only for a worker the daemon serves MCP servers of)
//    "approvals":{...approval_counts_json...}}
// `instance` is drawn at the daemon's start: the same daemon answered at the
// run's start and at its end only if it is unchanged (counts live in the
// daemon's memory; a restarted daemon knows nothing of the run's earlier
// requests). `ledger` is "ok", or the failure that made the daemon refuse
// every request since (e.g. "write(/var/log/corral/ledger.jsonl): No space
// left on device").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <vector>

#include "approval/protocol.hpp"
#include "base/checked.hpp"
#include "gateway/identity.hpp"
#include "gateway/ledger.hpp"
#include "gateway/mcp_budget.hpp"
#include "gateway/metering/totals.hpp"
#include "names/host.hpp"

namespace corral::gateway {

// A first line at most (CORRAL-CAPTURED and CORRAL-DNS carry a host name of up to 253 bytes).
inline constexpr std::size_t kMaxFirstLine = 640;

// The line the bridge sends before a box connection's bytes, with its '\n':
// for the proxy listener's connections, and for the MCP listener's.
std::string identity_announcement(const Identity& id);
std::string mcp_announcement(const Identity& id);
// The line a run's supervisor sends to ask for its counts, with its '\n'.
std::string counts_request(const Identity& id);
// A capture stub's question and a captured connection's line, with '\n'.
std::string granted_request(const Identity& id, const names::HostName& host);
std::string captured_announcement(const Identity& id, const names::Authority& target);
// A refused query's line; nullopt when NAME cannot travel in it (a space, a
// control character, over 256 bytes): such a refusal is not sent.
std::optional<std::string> dns_refusal_line(const Identity& id, std::string_view qtype, std::string_view name,
                                            std::string_view reason);
// The granted question's answer: the ports, or what is wrong with it.
std::string granted_answer(const std::vector<std::uint16_t>& ports);
Checked<std::vector<std::uint16_t>> parse_granted_answer(std::string_view answer);

// A first line without its '\n'; nullopt for anything else (the daemon then
// closes the connection without an answer).
//   CORRAL-BUDGET worker         the daemon answers the worker's budget across
//   CORRAL-BUDGET-RESET worker   its runs (stored_budget_json, or {"worker":..,
//                                "budget":null} without one; with a
//                                tool_calls_per_worker also "tool_calls":
//                                WorkerCalls::state_json) and closes; the
//                                second resets them first (`corral budget`)
struct DaemonFirstLine {
    bool counts = false;
    bool mcp = false;          // CORRAL-MCP
    Identity id;               // CORRAL-IDENTITY / CORRAL-MCP / CORRAL-COUNTS
    bool budget = false;       // CORRAL-BUDGET / CORRAL-BUDGET-RESET
    bool budget_reset = false;
    std::string worker;        // the budget lines' worker
    bool granted = false;      // CORRAL-GRANTED: target->host the name asked about
    bool captured = false;     // CORRAL-CAPTURED: target the connection's
    std::optional<names::Authority> target;
    bool dns = false;          // CORRAL-DNS: the refused query's type, name and reason
    std::string qtype, name, reason;
};
std::string budget_request(const std::string& worker, bool reset);
std::optional<DaemonFirstLine> parse_daemon_first_line(std::string_view line);

// What a daemon counted for one identity, and who it is.
struct DaemonCounts {
    std::uint64_t requests = 0;
    std::uint64_t refusals = 0;
    std::uint64_t secrets_reflected = 0;  // 0 from a daemon older than this field
    std::string instance;                 // "" from a daemon older than this field
    std::string ledger_failure;           // "" while its ledger is healthy
    std::optional<metering::MeterTotals> model;  // model traffic; nullopt from a daemon older than this field
    std::vector<RefusalNotice> refused;   // the refused host:ports (Ledger::refusal_notices); [] from an older daemon
    std::optional<ToolCallCounts> tools;  // the run's MCP tool calls; nullopt when the daemon serves the worker no MCP
    std::optional<approval::ApprovalCounts> approvals;  // how its approvals ended; nullopt from an older daemon
};

// The answer line, with its '\n'.
std::string counts_answer(const DaemonCounts& c);

// An answer as received (its first line is the JSON object): the counts, or
// what is wrong with it. Counts must be unsigned integers: a
// negative or fractional number made into one would be a made-up count.
Checked<DaemonCounts> parse_counts_answer(std::string_view answer);

}  // namespace corral::gateway
