// gateway/approval_notifier.hpp — the notifier hook ([gateway]
// approval_command, docs/approvals.md "The notifier"): for each new approval
// request the operator's program is started as approval_command_user, with
// the request as one JSON line (approval/protocol.hpp entry_json) on its
// stdin, so that a phone or a chat can be told.
//
// It only tells. The decision still comes back through `corral approve` /
// `corral deny` on the host; whatever the hook does (fails, hangs, writes)
// changes nothing about the request. Its end is logged, with what it wrote
// when it failed. It gets no environment of the gateway's (the gateway's
// environment may hold the real credentials): PATH, LANG, HOME=/ and
// CORRAL_APPROVAL_ID, CORRAL_APPROVAL_KIND; no fd but its stdin, stdout and
// stderr; no capability; no_new_privs; and it is killed after kHookTimeout.
#pragma once

#include <sys/types.h>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "approval/queue.hpp"

namespace corral::gateway {

struct HookUser {
    uid_t uid = 0;
    gid_t gid = 0;
    std::string name;
};

// approval_command_user looked up on the host (getpwnam_r): UsageError for
// an unknown user or one whose uid or gid is 0.
HookUser resolve_hook_user(const std::string& name);

class ApprovalNotifier {
public:
    static constexpr std::chrono::seconds kHookTimeout{30};

    // `command`: approval_command (an absolute path first). The hooks' I/O
    // runs on `ex`.
    ApprovalNotifier(boost::asio::any_io_executor ex, std::vector<std::string> command, HookUser user);
    ApprovalNotifier(const ApprovalNotifier&) = delete;
    ApprovalNotifier& operator=(const ApprovalNotifier&) = delete;
    ~ApprovalNotifier();

    // Starts the hook for `e` on the executor: never blocks, never throws
    // (a failure to start is logged). Thread-safe (ApprovalDesk::on_asked).
    void notify(const approval::Entry& e);
    // Kills every hook still running (the gateway stops).
    void stop();

    struct Shared;

private:
    std::shared_ptr<Shared> shared_;
};

}  // namespace corral::gateway
