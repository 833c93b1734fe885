// run/terminal_approvals.hpp — `corral run --tty`: the embedded gateway's
// approval requests asked at the run's own terminal (docs/approvals.md, "At
// the run's terminal (--tty)"). Where supervisor/ (the relay's dialog,
// supervisor/terminal_prompt.hpp) meets gateway/ (the ApprovalDesk): the
// desk tells of new and ended entries on its threads, this keeps them in
// order and wakes the relay through an eventfd; the relay's answer is a
// decision at the desk like `corral approve`'s, by the run's own user.
#pragma once

#include <sys/types.h>

#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "approval/queue.hpp"
#include "base/fd.hpp"
#include "supervisor/terminal_prompt.hpp"

namespace corral::gateway { class ApprovalDesk; }

namespace corral::run {

// Who answers at the terminal, as the ledger records it:
// "root (uid 0) at the run's terminal".
std::string terminal_decider(uid_t uid);

// The reason a no at the terminal records.
inline constexpr const char* kDeniedAtTerminal = "denied at the run's terminal";

// The question for one entry, as of `now`: what the box asks (egress:
// method host:port path; a tool call: server/tool and the arguments'
// digest, with the start of the arguments), its id and identity, when it
// expires. Pure; the dialog escapes every line.
supervisor::Question approval_question(const approval::Entry& e, approval::Clock::time_point now);

// How an entry ended, in words: "ap-..: approved by WHO", "ap-..: denied by
// WHO (REASON)", "ap-..: timed out ...", "ap-..: cancelled (REASON)". Pure.
std::string ended_sentence(const approval::Entry& e);

class TerminalApprovals final : public supervisor::QuestionSource {
public:
    // Listens to `desk` (call before the gateway serves: the desk's
    // listeners are set then); `decider` as terminal_decider(). The desk
    // must outlive every call; this must outlive the desk's serving.
    TerminalApprovals(gateway::ApprovalDesk& desk, std::string decider);

    int changes_fd() const override { return changes_.get(); }
    void changes_seen() override;
    std::optional<supervisor::Question> next() override;
    std::optional<std::string> ended(const std::string& id) override;
    std::string answer(const std::string& id, bool yes) override;

private:
    void asked(const approval::Entry& e);        // a gateway thread
    void ended_entry(const approval::Entry& e);  // any thread
    void wake() noexcept;

    gateway::ApprovalDesk& desk_;
    std::string decider_;
    Fd changes_;  // eventfd, non-blocking
    std::mutex mutex_;
    std::deque<approval::Entry> waiting_;             // asked, not handed out yet, oldest first
    std::map<std::string, approval::Entry> ended_;    // ended, not yet seen ended by the relay
};

}  // namespace corral::run
