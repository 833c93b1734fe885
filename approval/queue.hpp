// approval/queue.hpp — the queue of actions waiting for a person (issue 30,
// docs/approvals.md), kept by whoever decides (a run's embedded gateway or
// the daemon), never by the box.
//
// Each entry is bound to the exact request: the digest of what would be
// forwarded (request_digest), so an approval never covers a request that
// changed; a changed request is a new entry. An entry is single-use: the
// exchange that asked takes an approval once (take), and it is spent. It
// expires at its deadline: no decision by then is `timed_out`, which is
// never a person's deny and never an approval, and a decision after it is
// refused and said so. Pure: time is given (`now`), nothing blocks; the
// gateway waits on its own executor and is told of each decision by the
// listener.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/checked.hpp"

namespace corral::approval {

using Clock = std::chrono::system_clock;

// What is asked, rendered for a person and hashed for the binding.
struct Request {
    enum class Kind { egress, tool };
    Kind kind = Kind::egress;
    std::string identity;          // worker/run-id (with a session's role)
    // egress: the request that would be forwarded
    std::string method, host, path;
    std::uint16_t port = 0;
    // tool: the call that would be forwarded
    std::string server, tool;
    std::string arguments;         // the arguments' canonical JSON, for a person
    std::string arguments_digest;  // "sha256:<hex>" of it
};

// The request in words, as the box's refusal and the --tty question say it:
// "GET host:port/path", "the call of tool T of MCP server S".
std::string what_of(const Request& r);

// "sha256:<hex>" of the request's canonical form: every field above that
// reaches the upstream (kind, identity, method, host, port, path; server,
// tool, arguments digest). Two requests differing in any of them differ.
std::string request_digest(const Request& r);

enum class State { pending, approved, denied, timed_out, cancelled, spent };
// "pending", "approved", "denied", "timed_out", "cancelled", "spent".
const char* state_name(State s);

struct Entry {
    std::string id;                 // "ap-<n>-<8 hex>"
    Request request;
    std::string digest;             // request_digest(request)
    Clock::time_point asked_at, deadline;
    State state = State::pending;
    // A decision's: who (the Unix user of the deciding process), when, why,
    // and, for an egress approval, whether it became a grant for the run.
    std::string decided_by, reason;
    std::optional<Clock::time_point> decided_at;
    bool always = false;
};

// The most an approval may wait (approval_timeout's bound) and its default.
inline constexpr std::chrono::seconds kDefaultApprovalTimeout{300};
inline constexpr std::chrono::seconds kMaxApprovalTimeout{3600};

class Queue {
public:
    // Called (outside the queue's lock) with the id of each entry that was
    // decided or cancelled, so that its waiter can look again.
    void on_decided(std::function<void(const std::string& id)> listener);

    // Asks: a new pending entry, or the pending one for the same digest
    // (one entry per exact request, however many exchanges wait on it).
    // `timeout` is bounded to (0, kMaxApprovalTimeout].
    Entry ask(const Request& request, Clock::time_point now, std::chrono::seconds timeout);

    // The entry as of `now` (a pending one past its deadline is timed_out
    // from then on); nullopt for an unknown id.
    std::optional<Entry> look(const std::string& id, Clock::time_point now);

    // Takes an approval for the exchange that asked: true once for an
    // approved entry (it is spent), false for any other state.
    bool take(const std::string& id, Clock::time_point now);

    // A person's decision. Refused (the sentence says why and what to do):
    // an unknown id, an entry no longer pending (decided, spent, timed out
    // or cancelled: its client was answered already), `always` on a tool
    // call (only an egress approval may become a grant, and never a wildcard).
    Checked<Entry> decide(const std::string& id, bool approve, const std::string& by, const std::string& reason,
                          bool always, Clock::time_point now);

    // Every entry still pending at `now`, oldest first.
    std::vector<Entry> pending(Clock::time_point now);

    // Ends every pending entry as cancelled (the gateway stops): returns them.
    std::vector<Entry> cancel_all(const std::string& reason, Clock::time_point now);

    // Forgets entries that ended before `before` (bounded memory).
    void forget_ended(Clock::time_point before);

private:
    void expire(Entry& e, Clock::time_point now);
    void tell(const std::vector<std::string>& ids);

    std::mutex mutex_;
    std::map<std::string, Entry> entries_;
    std::uint64_t next_ = 1;
    std::function<void(const std::string&)> listener_;
};

// The sentence the box gets for an action that was not approved, by state:
// timed_out says no consent was given and not to try another way; denied
// names who denied and why; cancelled says the approver went away.
std::string refusal_sentence(const Entry& e);

}  // namespace corral::approval
