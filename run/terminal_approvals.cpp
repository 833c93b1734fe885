// run/terminal_approvals.cpp — see terminal_approvals.hpp.
#include "run/terminal_approvals.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <ctime>

#include "base/sys_error.hpp"
#include "gateway/approval_desk.hpp"

namespace corral::run {

namespace {

// The arguments of a tool call as the question starts to show them (the
// digest binds all of them; `corral approvals --json` shows them whole).
constexpr std::size_t kArgumentsShown = 160;

std::string what_is_asked(const approval::Request& r) {
    if (r.kind != approval::Request::Kind::tool) return approval::what_of(r);
    std::string args = r.arguments.substr(0, kArgumentsShown);
    if (r.arguments.size() > kArgumentsShown) args += "...";
    return approval::what_of(r) + " (arguments " + r.arguments_digest + ": " + args + ")";
}

std::string utc_clock(approval::Clock::time_point t) {
    const std::time_t s = approval::Clock::to_time_t(t);
    std::tm tm{};
    gmtime_r(&s, &tm);
    char buf[16];
    std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
    return buf;
}

}  // namespace

std::string terminal_decider(uid_t uid) { return gateway::user_of(uid) + " at the run's terminal"; }

supervisor::Question approval_question(const approval::Entry& e, approval::Clock::time_point now) {
    const auto left = std::chrono::duration_cast<std::chrono::seconds>(e.deadline - now).count();
    supervisor::Question q;
    q.id = e.id;
    q.lines.push_back("the box asks for a person's approval: " + what_is_asked(e.request));
    q.lines.push_back("approval " + e.id + " for " + e.request.identity + ", expires in " +
                      std::to_string(left < 0 ? 0 : left) + " s (" + utc_clock(e.deadline) + " UTC)");
    q.lines.push_back(e.request.kind == approval::Request::Kind::tool ? "approve this one call?"
                                                                      : "approve this one request?");
    return q;
}

std::string ended_sentence(const approval::Entry& e) {
    const std::string why = e.reason.empty() ? "" : " (" + e.reason + ")";
    switch (e.state) {
        case approval::State::approved:
        case approval::State::spent: return e.id + ": approved by " + e.decided_by;
        case approval::State::denied: return e.id + ": denied by " + e.decided_by + why;
        case approval::State::timed_out:
            return e.id + ": timed out: no decision came in time, and the box was told that no consent was given";
        case approval::State::cancelled: return e.id + ": cancelled" + why;
        case approval::State::pending: break;
    }
    return e.id + ": still waiting";
}

TerminalApprovals::TerminalApprovals(gateway::ApprovalDesk& desk, std::string decider)
    : desk_(desk), decider_(std::move(decider)), changes_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (!changes_.valid()) throw SysError("eventfd", "the run's terminal approvals", errno);
    desk_.on_asked([this](const approval::Entry& e) { asked(e); });
    desk_.on_ended([this](const approval::Entry& e) { ended_entry(e); });
}

void TerminalApprovals::wake() noexcept {
    const std::uint64_t one = 1;
    // EAGAIN: the counter is full, the relay is woken anyway.
    (void)!::write(changes_.get(), &one, sizeof one);
}

void TerminalApprovals::asked(const approval::Entry& e) {
    {
        std::lock_guard lock(mutex_);
        waiting_.push_back(e);
    }
    wake();
}

void TerminalApprovals::ended_entry(const approval::Entry& e) {
    {
        std::lock_guard lock(mutex_);
        ended_[e.id] = e;
    }
    wake();
}

void TerminalApprovals::changes_seen() {
    std::uint64_t count = 0;
    (void)!::read(changes_.get(), &count, sizeof count);
}

std::optional<supervisor::Question> TerminalApprovals::next() {
    std::lock_guard lock(mutex_);
    while (!waiting_.empty()) {
        approval::Entry e = std::move(waiting_.front());
        waiting_.pop_front();
        // Decided elsewhere or timed out before its turn: nothing to ask.
        if (ended_.erase(e.id) != 0) continue;
        return approval_question(e, approval::Clock::now());
    }
    return std::nullopt;
}

std::optional<std::string> TerminalApprovals::ended(const std::string& id) {
    std::lock_guard lock(mutex_);
    auto it = ended_.find(id);
    if (it == ended_.end()) return std::nullopt;
    std::string how = ended_sentence(it->second);
    ended_.erase(it);
    return how;
}

std::string TerminalApprovals::answer(const std::string& id, bool yes) {
    // Not under mutex_: the desk tells ended_entry() from inside decide().
    auto decided = desk_.decide(id, yes, decider_, yes ? "" : kDeniedAtTerminal, false);
    std::lock_guard lock(mutex_);
    ended_.erase(id);
    if (!decided) return id + ": not decided here: " + decided.problem();
    return ended_sentence(*decided);
}

}  // namespace corral::run
