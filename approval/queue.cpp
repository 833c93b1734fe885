// approval/queue.cpp — see queue.hpp.
#include "approval/queue.hpp"

#include <algorithm>
#include <random>

#include <nlohmann/json.hpp>

#include "base/sha256.hpp"

namespace corral::approval {

namespace {

std::string random_hex8() {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    static const char* digits = "0123456789abcdef";
    std::string out(8, '0');
    std::uint64_t v = rng();
    for (auto& c : out) {
        c = digits[v & 0xf];
        v >>= 4;
    }
    return out;
}

bool ended(State s) { return s != State::pending && s != State::approved; }

}  // namespace

std::string what_of(const Request& r) {
    if (r.kind == Request::Kind::tool) return "the call of tool " + r.tool + " of MCP server " + r.server;
    return r.method + " " + r.host + ":" + std::to_string(r.port) + r.path;
}

std::string request_digest(const Request& r) {
    // nlohmann's dump of an object sorts its keys: one canonical text.
    const nlohmann::json canonical = {
        {"kind", r.kind == Request::Kind::tool ? "tool" : "egress"},
        {"identity", r.identity},
        {"method", r.method},
        {"host", r.host},
        {"port", r.port},
        {"path", r.path},
        {"server", r.server},
        {"tool", r.tool},
        {"arguments_digest", r.arguments_digest}};
    return "sha256:" + sha256_hex(canonical.dump());
}

const char* state_name(State s) {
    switch (s) {
        case State::pending: return "pending";
        case State::approved: return "approved";
        case State::denied: return "denied";
        case State::timed_out: return "timed_out";
        case State::cancelled: return "cancelled";
        case State::spent: return "spent";
    }
    return "pending";
}

void Queue::on_decided(std::function<void(const std::string& id)> listener) {
    std::lock_guard lock(mutex_);
    listener_ = std::move(listener);
}

void Queue::expire(Entry& e, Clock::time_point now) {
    // An approval not taken by its deadline lapses too: it covered that moment only.
    if ((e.state == State::pending || e.state == State::approved) && now >= e.deadline) {
        e.state = State::timed_out;
        e.decided_at = e.deadline;
    }
}

void Queue::tell(const std::vector<std::string>& ids) {
    std::function<void(const std::string&)> listener;
    {
        std::lock_guard lock(mutex_);
        listener = listener_;
    }
    if (listener)
        for (const auto& id : ids) listener(id);
}

Entry Queue::ask(const Request& request, Clock::time_point now, std::chrono::seconds timeout) {
    timeout = std::clamp(timeout, std::chrono::seconds(1), kMaxApprovalTimeout);
    const std::string digest = request_digest(request);
    std::lock_guard lock(mutex_);
    for (auto& [id, e] : entries_) {
        expire(e, now);
        if (e.digest == digest && e.state == State::pending) return e;
    }
    Entry e;
    e.id = "ap-" + std::to_string(next_++) + "-" + random_hex8();
    e.request = request;
    e.digest = digest;
    e.asked_at = now;
    e.deadline = now + timeout;
    entries_.emplace(e.id, e);
    return e;
}

std::optional<Entry> Queue::look(const std::string& id, Clock::time_point now) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return std::nullopt;
    expire(it->second, now);
    return it->second;
}

bool Queue::take(const std::string& id, Clock::time_point now) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return false;
    expire(it->second, now);
    if (it->second.state != State::approved) return false;
    it->second.state = State::spent;
    return true;
}

Checked<Entry> Queue::decide(const std::string& id, bool approve, const std::string& by, const std::string& reason,
                             bool always, Clock::time_point now) {
    Entry decided;
    {
        std::lock_guard lock(mutex_);
        auto it = entries_.find(id);
        if (it == entries_.end())
            return Failed{"no approval request " + id + " (`corral approvals` lists the pending ones)"};
        Entry& e = it->second;
        expire(e, now);
        if (e.state == State::timed_out)
            return Failed{"approval request " + id + " expired: no decision came within its timeout, and its client "
                          "was told that no consent was given; it must ask again"};
        if (e.state != State::pending)
            return Failed{"approval request " + id + " is " + state_name(e.state) +
                          (e.decided_by.empty() ? std::string() : " (by " + e.decided_by + ")") +
                          " already; a decision is made once"};
        if (always && e.request.kind == Request::Kind::tool)
            return Failed{"--always is for egress approvals (it makes the host a grant for the rest of the run); "
                          "a tool call is approved one call at a time"};
        e.state = approve ? State::approved : State::denied;
        e.decided_by = by;
        e.reason = reason;
        e.decided_at = now;
        e.always = approve && always;
        decided = e;
    }
    tell({id});
    return decided;
}

std::vector<Entry> Queue::pending(Clock::time_point now) {
    std::vector<Entry> out;
    std::lock_guard lock(mutex_);
    for (auto& [id, e] : entries_) {
        expire(e, now);
        if (e.state == State::pending) out.push_back(e);
    }
    std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.asked_at < b.asked_at; });
    return out;
}

std::vector<Entry> Queue::cancel_all(const std::string& reason, Clock::time_point now) {
    std::vector<Entry> out;
    std::vector<std::string> ids;
    {
        std::lock_guard lock(mutex_);
        for (auto& [id, e] : entries_) {
            expire(e, now);
            if (e.state != State::pending && e.state != State::approved) continue;
            e.state = State::cancelled;
            e.reason = reason;
            e.decided_at = now;
            out.push_back(e);
            ids.push_back(id);
        }
    }
    tell(ids);
    return out;
}

void Queue::forget_ended(Clock::time_point before) {
    std::lock_guard lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end();) {
        const Entry& e = it->second;
        if ((ended(e.state) || e.deadline < before) && e.decided_at.value_or(e.deadline) < before)
            it = entries_.erase(it);
        else
            ++it;
    }
}

std::string refusal_sentence(const Entry& e) {
    const std::string what = what_of(e.request);
    switch (e.state) {
        case State::timed_out:
            return "refused by corral: " + what + " needs a person's approval, and none was given in time: no consent "
                   "was given; do not try to reach the same result another way";
        case State::denied:
            return "refused by corral: " + what + " was denied by " + (e.decided_by.empty() ? "the operator" : e.decided_by) +
                   (e.reason.empty() ? std::string() : " (" + e.reason + ")") + "; do not retry it by other means";
        case State::cancelled:
            return "refused by corral: " + what + " was waiting for approval when its approver stopped (" + e.reason +
                   "): no consent was given; do not try another way";
        default:
            return "refused by corral: " + what + " is not approved; do not try another way";
    }
}

}  // namespace corral::approval
