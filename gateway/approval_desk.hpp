// gateway/approval_desk.hpp — the gateway's side of approvals (issue 30,
// docs/approvals.md): a box's request held while a person decides, and the
// control socket through which `corral approvals|approve|deny` see and decide
// what waits.
//
// The queue (approval/queue.hpp) binds each entry to the exact request; the
// desk adds what needs the gateway: the exchanges waiting on an entry (woken
// on its executor when it is decided), the run's --always grants (exact
// identity, host and port: never a wildcard), the counts run.json shows, and
// the ledger's approval records (requested, decided: who, when, the digest).
#pragma once

#include <sys/types.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "approval/protocol.hpp"
#include "approval/queue.hpp"
#include "gateway/ledger.hpp"
#include "gateway/refusal.hpp"

namespace corral::gateway {

struct Conn;
struct Target;

using approval::ApprovalCounts;
using approval::approval_counts_json;

class ApprovalDesk {
public:
    explicit ApprovalDesk(Ledger& ledger);
    ApprovalDesk(const ApprovalDesk&) = delete;
    ApprovalDesk& operator=(const ApprovalDesk&) = delete;

    // The answer line to one control request from a process of Unix user
    // `peer_uid` (SO_PEERCRED): only root decides (the socket is root-only
    // already; this is the second lock). `decider` names this gateway in a
    // list answer ("run ID", "daemon").
    std::string control_answer(std::string_view line, uid_t peer_uid, const std::string& decider);

    // A person's decision on `id`, by `by` ("root (uid 0)", "root (uid 0) at
    // the run's terminal"): recorded and counted, its waiters woken. Refused
    // as approval::Queue::decide refuses. Thread-safe.
    Checked<approval::Entry> decide(const std::string& id, bool approve, const std::string& by,
                                    const std::string& reason, bool always);

    // `listener` is told of each new entry (not of a request that joins an
    // entry already pending), after it is recorded, on the asking exchange's
    // thread: it must not block (the notifier hook and the --tty prompt
    // hand it on). Set before the gateway serves.
    void on_asked(std::function<void(const approval::Entry&)> listener);

    // `listener` is told of each entry that ended (approved or denied by a
    // person, timed out, cancelled), once, as it is counted, on the thread
    // that ended it (a decider's, or the asking exchange's for a timeout):
    // it must not block (the --tty prompt takes a question down). Set
    // before the gateway serves.
    void on_ended(std::function<void(const approval::Entry&)> listener);

    // Whether each request asked and decided is also a log line (stderr):
    // on by default (a run's operator learns the id to approve); off when a
    // --tty run asks at its terminal instead, where a line would land in the
    // middle of the box's screen. Set before the gateway serves.
    void announce_in_log(bool on) { announce_ = on; }

    // Every pending entry ends `cancelled` (the run ended, the daemon
    // stops): recorded, and every held exchange is woken to refuse.
    void cancel_all(const std::string& why);

    ApprovalCounts counts(const std::string& identity) const;

    // --always: `identity` may reach host:port for the rest of its run.
    bool always_granted(const std::string& identity, const std::string& host, std::uint16_t port) const;
    // The ports `identity` may reach on `host` by --always, ascending.
    std::vector<std::uint16_t> always_ports(const std::string& identity, const std::string& host) const;

    // For hold_for_approval: ask (a "requested" record for a new entry), and
    // wake `timer` when `id` is decided. Thread-safe.
    approval::Entry ask(const approval::Request& r, std::chrono::seconds timeout);
    void wake_on_decision(const std::string& id, const std::shared_ptr<boost::asio::steady_timer>& timer);
    // The exchange's end: an approval taken (single-use; --always recorded
    // as a grant), or the entry as it ended. Counts and records a timeout
    // the first time one is seen.
    struct Outcome {
        bool approved = false;
        std::optional<approval::Entry> entry;
    };
    Outcome settle(const std::string& id);

private:
    void record(const approval::Entry& e, const char* phase);
    // An entry's end, once, whoever sees it first (the decider, the exchange
    // that finds it approved or timed out, cancel_all): counted, its
    // "decided" record written, the ended listeners told.
    void end_once(const approval::Entry& e);
    void wake(const std::string& id);

    Ledger& ledger_;
    approval::Queue queue_;
    // Held by whoever records an end until its line is written, so that no
    // other thread sees the end go by unrecorded: an approved exchange goes
    // on only after its decision is in the ledger (and so the journal),
    // whichever thread decided (the control socket's, the --tty prompt's).
    std::mutex end_mutex_;
    mutable std::mutex mutex_;
    std::multimap<std::string, std::weak_ptr<boost::asio::steady_timer>> waiters_;
    std::set<std::string> always_;          // "identity|host|port"
    std::set<std::string> ended_recorded_;  // ids whose end is in the ledger already
    std::map<std::string, ApprovalCounts> counts_;
    std::vector<std::function<void(const approval::Entry&)>> asked_listeners_;
    std::vector<std::function<void(const approval::Entry&)>> ended_listeners_;
    bool announce_ = true;
};

// "alice (uid 1000)": who decided, as the kernel vouches for the socket's peer.
std::string user_of(uid_t uid);

// Holds the connection's exchange until a person decides on `r` (asked for
// c's identity), at most `timeout`: nullopt once approved (the approval
// taken: single-use), else the entry as it ended (denied, timed_out,
// cancelled). The watchdog is armed for the deadline meanwhile, so the
// client sees a slow answer, not an error.
boost::asio::awaitable<std::optional<approval::Entry>> await_person(Conn& c, approval::Request r,
                                                                   std::chrono::seconds timeout);

// The reason code of an approval that ended without one: approval_denied,
// approval_timeout, approval_cancelled.
std::string_view approval_reason(approval::State s);

// await_person for egress: holds the connection's exchange until a person decides on `method host:port
// path` (the grant asked for approval), unless an approval with --always
// granted host:port: nullopt once approved, else the refusal whose text
// tells the box what happened (approval/queue.hpp refusal_sentence).
boost::asio::awaitable<std::optional<Refusal>> hold_for_approval(Conn& c, const Target& t, const std::string& method,
                                                                 const std::string& path);

// Serves the control socket: one request line per connection from a root
// process, one answer, close. Runs until the acceptor is closed.
boost::asio::awaitable<void> serve_approval_control(boost::asio::local::stream_protocol::acceptor& acceptor,
                                                    ApprovalDesk& desk, std::string decider);

// Binds the control socket at `path` (approval/protocol.hpp's names), after
// making its directory (0700, root's) or finding it so: a directory anyone
// else owns or can write, or a symlink, is refused. Throws UsageError / SysError.
void listen_for_approvals(boost::asio::local::stream_protocol::acceptor& acceptor, const std::string& path);

// Binds a Unix socket at `path` with mode 0600 from the start (the umask),
// replacing a stale socket but never any other kind of file (`what` names
// the path in that refusal: "listen_unix"). The daemon's listener and the
// approvals control socket. Throws UsageError / SysError.
void bind_root_only_socket(boost::asio::local::stream_protocol::acceptor& acceptor, const std::string& path,
                           std::string_view what);

}  // namespace corral::gateway
