// journal/shared_journal.hpp — one journal written by several threads: the
// run's (or the daemon's) own records and the gateway's decisions.
//
// One JournalWriter behind one lock. Decisions (journal.hpp kTypeDecision:
// one record per batch the ledger's journal thread hands over, at most
// kDecisionLinesPerRecord lines each) are group-committed by a thread of its own,
// started with the first decision: one kGroupCommitTick after a record
// comes it fdatasyncs what waits, outside the lock, so a decision is durable
// at most one tick plus one fdatasync after it was written and no gateway
// thread waits for the disk; with nothing to sync it sleeps. A writer that failed (write, fdatasync, bound) fails every later
// append with the same error: the ledger then refuses every request.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/background_fdatasync.hpp"
#include "journal/journal.hpp"

namespace corral::journal {

inline constexpr std::chrono::milliseconds kGroupCommitTick{50};
inline constexpr std::size_t kDecisionLinesPerRecord = 256;

// Receives whole '\n'-terminated ledger lines, in the ledger's order; throws
// when they cannot be journalled (gateway::LedgerMirror has this shape).
using LineSink = std::function<void(std::string_view lines)>;

class SharedJournal {
public:
    // Called under the lock before each batch of decisions, with the current
    // writer: returns the writer to go on with when the journal is to be
    // continued in another file (the hook ends the current one itself), or
    // nothing. For DayJournal's rotation.
    using Rotation = std::function<std::optional<JournalWriter>(JournalWriter& current)>;

    explicit SharedJournal(JournalWriter writer, Rotation rotation = {});
    ~SharedJournal();
    SharedJournal(const SharedJournal&) = delete;
    SharedJournal& operator=(const SharedJournal&) = delete;

    std::string append(std::string_view type, const nlohmann::json& payload, Commit commit);
    // Writes a record at once and starts its fdatasync in the background
    // with no thread of this process (base/background_fdatasync.hpp): for
    // the admission, written before the sandbox is built (launch_sandbox
    // needs a single-threaded process) and durable before its command
    // starts. wait_durable() must come before what the record authorises.
    std::string append_syncing_in_background(std::string_view type, const nlohmann::json& payload);
    // Waits for that fdatasync (no-op without one). Throws the writer's
    // SysError("fdatasync", path, errno) if it failed; the writer then
    // refuses every later record (fail closed).
    void wait_durable();
    bool terminated() const;
    std::string path() const;
    // Records written that no fdatasync has covered yet (tests).
    std::size_t records_waiting_for_sync() const;
    // Each batch becomes a decision record {"ledger_lines": [LINE, ...]}
    // (at most kDecisionLinesPerRecord lines each).
    LineSink decision_sink();
    // Ends the group-commit thread (once nothing journals decisions any
    // more; the terminal record's fdatasync covers what it had not synced).
    void stop_group_commits();

private:
    void group_commit_loop();
    void start_group_commits_locked();
    // A group record was written: the group-commit thread, if asleep, wakes.
    void wake_group_commits_locked();

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    JournalWriter writer_;
    Rotation rotation_;
    std::uint64_t generation_ = 0;  // bumped when rotation replaces writer_
    std::thread group_commits_;
    bool stopping_ = false;
    bool unsynced_ = false;            // a group record waits for the group-commit thread
    bool group_commits_idle_ = false;  // that thread sleeps until one does
    struct BackgroundSync {
        JournalWriter::SyncTicket ticket;
        BackgroundFdatasync sync;
    };
    std::optional<BackgroundSync> background_;
};

// WriterOptions for a SharedJournal's writer: its thread syncs group records.
WriterOptions shared_writer_options();

}  // namespace corral::journal
