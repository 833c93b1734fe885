// journal/shared_journal.cpp — see shared_journal.hpp.
#include "journal/shared_journal.hpp"

#include <unistd.h>

#include <cerrno>
#include <stdexcept>

namespace corral::journal {

WriterOptions shared_writer_options() {
    WriterOptions options;
    options.sync_group_in_append = false;
    return options;
}

SharedJournal::SharedJournal(JournalWriter writer, Rotation rotation)
    : writer_(std::move(writer)), rotation_(std::move(rotation)) {}

SharedJournal::~SharedJournal() { stop_group_commits(); }

std::string SharedJournal::append(std::string_view type, const nlohmann::json& payload, Commit commit) {
    std::lock_guard lock(mutex_);
    // A group record (a run's "started", a session's execs) is synced by the
    // group-commit thread, started here if no decision started it yet:
    // these come after the sandbox's clone, when threads are allowed.
    if (commit == Commit::group) start_group_commits_locked();
    std::string line = writer_.append(type, payload, commit);
    if (commit == Commit::group) wake_group_commits_locked();
    return line;
}

void SharedJournal::wake_group_commits_locked() {
    unsynced_ = true;
    if (group_commits_idle_) wake_.notify_one();
}

void SharedJournal::start_group_commits_locked() {
    if (!group_commits_.joinable() && !stopping_) group_commits_ = std::thread([this] { group_commit_loop(); });
}

std::string SharedJournal::append_syncing_in_background(std::string_view type, const nlohmann::json& payload) {
    std::lock_guard lock(mutex_);
    if (background_) throw std::logic_error("append_syncing_in_background: the previous one was not waited for");
    std::string line = writer_.append(type, payload, Commit::group);
    auto ticket = writer_.begin_sync();
    background_.emplace(BackgroundSync{ticket, BackgroundFdatasync::start(ticket.fd)});
    return line;
}

void SharedJournal::wait_durable() {
    std::unique_lock lock(mutex_);
    if (!background_) return;
    BackgroundSync pending = std::move(*background_);
    background_.reset();
    lock.unlock();
    const int error = pending.sync.wait();
    lock.lock();
    writer_.end_sync(pending.ticket, error);
}

bool SharedJournal::terminated() const {
    std::lock_guard lock(mutex_);
    return writer_.terminated();
}

std::size_t SharedJournal::records_waiting_for_sync() const {
    std::lock_guard lock(mutex_);
    return writer_.records_waiting_for_sync();
}

std::string SharedJournal::path() const {
    std::lock_guard lock(mutex_);
    return writer_.path();
}

LineSink SharedJournal::decision_sink() {
    return [this](std::string_view lines) {
        std::lock_guard lock(mutex_);
        // Started here, on the ledger's journal thread: a supervisor is
        // single-threaded until its sandbox's clone, which is over before
        // any request.
        start_group_commits_locked();
        if (rotation_) {
            if (auto next = rotation_(writer_)) {
                writer_ = std::move(*next);
                ++generation_;
            }
        }
        // One signed record per batch (at most kDecisionLinesPerRecord
        // lines): the signature is most of a record's cost, and the ledger
        // gathers kJournalBatchDelay of lines into one batch.
        while (!lines.empty()) {
            nlohmann::json batch = nlohmann::json::array();
            while (!lines.empty() && batch.size() < kDecisionLinesPerRecord) {
                const auto nl = lines.find('\n');
                batch.push_back(std::string(lines.substr(0, nl)));
                lines.remove_prefix(nl == std::string_view::npos ? lines.size() : nl + 1);
            }
            writer_.append(kTypeDecision, nlohmann::json{{"ledger_lines", std::move(batch)}}, Commit::group);
        }
        wake_group_commits_locked();
    };
}

void SharedJournal::group_commit_loop() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        // Asleep while no group record waits for its fdatasync: an idle run
        // or daemon wakes no thread (it woke every tick, ~20 times a second
        // per supervisor). The first record wakes it; what comes within one
        // tick after it is synced with it.
        group_commits_idle_ = true;
        wake_.wait(lock, [this] { return stopping_ || unsynced_; });
        group_commits_idle_ = false;
        wake_.wait_for(lock, kGroupCommitTick, [this] { return stopping_; });
        unsynced_ = false;
        try {
            auto ticket = writer_.begin_sync();
            if (ticket.records == 0) continue;
            const auto generation = generation_;
            // The disk's wait without the lock: the gateway's threads keep
            // appending decisions meanwhile. The writer (and so the fd) stays
            // alive: only rotation replaces it, and it ends the old one with
            // a durable record first.
            lock.unlock();
            int error = 0;
            while (::fdatasync(ticket.fd) < 0 && (error = errno) == EINTR) error = 0;
            lock.lock();
            if (generation == generation_) writer_.end_sync(ticket, error);
        } catch (const std::exception&) {
            // Failed closed: the next append throws the same error, and the
            // ledger refuses every later request with it.
            return;
        }
    }
}

void SharedJournal::stop_group_commits() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (group_commits_.joinable()) group_commits_.join();
}

}  // namespace corral::journal
