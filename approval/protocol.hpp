// approval/protocol.hpp — the approvals control socket's protocol (issue 30,
// docs/approvals.md "The control socket"): what `corral approvals`,
// `approve` and `deny` send to a decider (a run's embedded gateway, or the
// `corral gateway` daemon) and what it answers. One JSON line each way, then
// the decider closes. Pure: the sockets are the gateway's and the CLI's.
//
//   {"op":"list"}
//     -> {"decider":"run ID"|"daemon","pending":[ENTRY, ...]}
//   {"op":"decide","id":"ap-..","approve":true|false,"reason":"..","always":false}
//     -> {"ok":true,"entry":ENTRY} | {"ok":false,"error":"<sentence>"}
//
// ENTRY is entry_json. Who decides is never sent: the decider reads the
// deciding process's Unix user from the socket (SO_PEERCRED).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "approval/queue.hpp"
#include "base/checked.hpp"

namespace corral::approval {

// Where deciders listen: STATE_DIR/approvals/ (0700, root's), one socket
// each: RUN_ID.sock for a run's embedded gateway, gateway.sock for the
// `corral gateway` daemon whose [gateway] state_dir it is. `corral
// approvals --state-dir` asks every socket there.
std::string control_dir(const std::string& state_dir);
std::string run_control_socket(const std::string& state_dir, const std::string& run_id);
std::string daemon_control_socket(const std::string& state_dir);

// The longest request line a decider reads (a reason of a few lines fits).
inline constexpr std::size_t kMaxControlLine = 8 * 1024;

struct ControlRequest {
    enum class Op { list, decide };
    Op op = Op::list;
    std::string id;
    bool approve = false;
    std::string reason;
    bool always = false;
};

// The line a client sends, with its '\n'.
std::string list_request();
std::string decide_request(const std::string& id, bool approve, const std::string& reason, bool always);

// A request line (without its '\n'); the problem names what was wrong.
Checked<ControlRequest> parse_control_request(std::string_view line);

// An entry as the protocol and `corral approvals --json` show it: id, kind,
// identity, what is asked (egress: method, host, port, path; tool: server,
// tool, arguments, arguments_digest), digest, asked_at, deadline (UTC,
// milliseconds), state, and once decided decided_by, decided_at, reason, always.
nlohmann::json entry_json(const Entry& e);

// The answers, each with its '\n'.
std::string list_answer(const std::string& decider, const std::vector<Entry>& pending);
std::string decide_answer(const Checked<Entry>& decided);
std::string error_answer(const std::string& sentence);

// How an identity's approvals ended (run.json's gateway.approvals; a daemon
// sends a run's in its counts answer, gateway/daemon_protocol.hpp).
struct ApprovalCounts {
    std::uint64_t requested = 0, approved = 0, denied = 0, timed_out = 0, cancelled = 0;
};
nlohmann::json approval_counts_json(const ApprovalCounts& c);
// The same object read back: each of the five an unsigned integer.
Checked<ApprovalCounts> approval_counts_from_json(const nlohmann::json& j);

}  // namespace corral::approval
