// gateway/ledger.cpp — the ledger file (docs/gateway.md, "Ledger"): lines
// batched and written once per batch, synced when asked, mirrored to the
// journal in order; a file that cannot be written makes every new request
// refused. The line itself is ledger_line.cpp's.
#include "gateway/ledger.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "base/log.hpp"
#include "base/sys_error.hpp"

namespace corral::gateway {

namespace {

// The ledger file at `path`, opened for appending without following a link,
// or "" with the reason in *problem: a file someone else owns (planted first)
// or one with a second hard link would write the ledger where they choose.
// (A character device of our own, such as /dev/full in tests, is fine.)
Fd open_ledger_file(const std::string& path, std::string* problem) {
    Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    struct stat st {};
    if (!fd.valid()) {
        *problem = "open(" + path + "): " + errno_text(errno);
    } else if (::fstat(fd.get(), &st) != 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)) ||
               st.st_uid != ::geteuid() || (S_ISREG(st.st_mode) && st.st_nlink != 1)) {
        *problem = "open(" + path + "): not a file of our own with one link; refusing to append to it";
        return Fd();
    }
    return fd;
}

}  // namespace

void log_ledger_unwritable(std::string_view failure) {
    log::error("ledger unwritable, refusing every new request: " + std::string(failure));
}

Ledger::Ledger(const std::string& path, std::uint64_t refusal_lines_per_identity)
    : path_(path),
      refusal_lines_per_identity_(refusal_lines_per_identity),
      secrets_(std::make_shared<const std::vector<std::string>>()) {
    std::string problem;
    Fd fd = open_ledger_file(path, &problem);
    if (!fd.valid()) fail_locked(std::move(problem));
    else fd_ = std::make_shared<const Fd>(std::move(fd));
}

std::string Ledger::reopen() {
    std::lock_guard lock(mutex_);
    flush_locked();
    // The lines written to the old file reach its disk before it is let go
    // (rare: the lock may be held for one fdatasync).
    if (fd_ && unsynced_ != 0 && ::fdatasync(fd_->get()) < 0) fail_locked("fdatasync(" + path_ + "): " + errno_text(errno));
    std::string problem;
    Fd fd = open_ledger_file(path_, &problem);
    if (!fd.valid()) {
        if (failure_.empty()) {
            fail_locked(std::move(problem));
            return "ledger " + path_ + " cannot be reopened, refusing every request: " + failure_;
        }
        return "ledger " + path_ + " still unusable (" + problem + "), refusing every request";
    }
    fd_ = std::make_shared<const Fd>(std::move(fd));
    unsynced_ = 0;
    if (failure_.empty()) return "ledger " + path_ + " reopened";
    std::string line = "ledger " + path_ + " reopened and writable again; it had failed (" + failure_ + ") and " +
                       std::to_string(lines_lost_) + " lines were lost since";
    failure_.clear();
    lines_lost_ = 0;
    healthy_.store(true, std::memory_order_release);
    return line;
}

std::uint64_t Ledger::lines_lost() const {
    std::lock_guard lock(mutex_);
    return lines_lost_;
}

Ledger::~Ledger() {
    flush();
    {
        std::lock_guard lock(mutex_);
        journal_stopping_ = true;
    }
    journal_wake_.notify_all();
    if (journal_thread_.joinable()) journal_thread_.join();  // it mirrors and writes what queued first
}

std::string Ledger::failure() const {
    std::lock_guard lock(mutex_);
    return failure_;
}

void Ledger::register_secret(const std::string& secret) {
    if (secret.empty()) return;
    std::lock_guard lock(mutex_);
    auto next = std::make_shared<std::vector<std::string>>(*secrets_.load());
    next->push_back(secret);
    secrets_.store(std::move(next));
}

void Ledger::fail_locked(std::string what) {
    if (!failure_.empty()) return;
    failure_ = std::move(what);
    healthy_.store(false, std::memory_order_release);
    lines_lost_ += static_cast<std::uint64_t>(std::count(pending_.begin(), pending_.end(), '\n'));
    pending_.clear();
}

std::string Ledger::format(const LedgerEntry& e) const {
    auto secrets = secrets_.load();
    return format_ledger_line(e, *secrets);
}

bool Ledger::append_batched(const LedgerEntry& e) {
    // Formatting is most of the work: done before taking the lock, so the
    // event-loop threads do not queue behind each other's JSON.
    std::string line;
    std::string format_error;
    try {
        line = format(e);
    } catch (const std::exception& ex) {
        format_error = std::string("format ledger line: ") + ex.what();
    }
    std::lock_guard lock(mutex_);
    const bool reflected = e.reason == reason::secret_reflected;
    // A tool's first sight or quarantine is a record, not a request.
    // So is an approval's record.
    const bool record_only =
        (e.tool && (e.tool->phase == "first_sight" || e.tool->phase == "quarantine")) || e.approval.has_value();
    if (reflected) ++reflected_[e.identity];
    else if (!record_only) ++requests_[e.identity];
    std::uint64_t refused = e.decision == Decision::refuse && !reflected && !record_only ? ++refusals_[e.identity] : 0;
    if (refused && e.mode != "mcp") ++egress_refusals_[e.identity];
    if (refused) note_refusal_locked(e);
    if (!failure_.empty()) {
        ++lines_lost_;
        return false;
    }
    if (auto cap_code = refusal_cap_line(refused); !cap_code.empty()) {
        // Past the cap this refusal's own line is dropped; at most a summary
        // line takes its place. Rare, so formatted under the lock.
        LedgerEntry summary;
        summary.time = e.time;
        summary.identity = e.identity;
        summary.decision = Decision::refuse;
        summary.reason = std::string(cap_code);
        summary.refusals = refused;
        try {
            line = format(summary);
            format_error.clear();
        } catch (const std::exception& ex) {
            format_error = std::string("format ledger line: ") + ex.what();
        }
    } else if (refused > refusal_lines_per_identity_ && refusal_lines_per_identity_ != 0) {
        return false;
    }
    if (!format_error.empty()) {
        fail_locked(std::move(format_error));
        return false;
    }
    bool first = pending_.empty();
    pending_ += line;
    return first;
}

void Ledger::note_refusal_locked(const LedgerEntry& e) {
    auto& notices = notices_[e.identity];
    for (auto& n : notices)
        if (n.port == e.port && n.host == e.host) {
            ++n.count;
            n.role = e.role;
            return;
        }
    if (notices.size() < kRefusalNoticesPerIdentity)
        notices.push_back(RefusalNotice{e.host, e.port, e.method, e.mode, e.reason, e.status, 1, e.role});
}

std::vector<RefusalNotice> Ledger::refusal_notices(const std::string& identity) const {
    std::lock_guard lock(mutex_);
    auto it = notices_.find(identity);
    return it == notices_.end() ? std::vector<RefusalNotice>{} : it->second;
}

std::string_view Ledger::refusal_cap_line(std::uint64_t refused) const {
    const std::uint64_t cap = refusal_lines_per_identity_;
    if (cap == 0 || refused <= cap) return {};
    if (refused == cap + 1) return reason::ledger_refusal_cap_reached;
    if (refused % cap == 0 && std::has_single_bit(refused / cap)) return reason::ledger_refusals_suppressed;
    return {};
}

void Ledger::append(const LedgerEntry& e) {
    append_batched(e);
    flush();
}

bool Ledger::flush() {
    std::lock_guard lock(mutex_);
    return flush_locked();
}

void Ledger::mirror_to(LedgerMirror mirror) {
    std::lock_guard lock(mutex_);
    mirror_ = std::move(mirror);
}

bool Ledger::flush_locked() {
    if (pending_.empty() || !failure_.empty()) return false;
    if (!mirror_) return write_locked(std::exchange(pending_, {}));
    // The journal first: the batch waits for the journal thread, which
    // writes it to the file once the mirror has it. Started here, on a
    // gateway thread: a supervisor is single-threaded until its sandbox's
    // clone, which is over before any request.
    if (!journal_thread_.joinable()) journal_thread_ = std::thread([this] { journal_loop(); });
    journalling_ += pending_;
    pending_.clear();
    journal_wake_.notify_one();
    return false;
}

void Ledger::journal_loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
        journal_wake_.wait(lock, [&] { return journal_stopping_ || !journalling_.empty(); });
        if (journalling_.empty()) return;
        // Lines of the next few milliseconds share the batch (and so the
        // journal's records): one signature for many requests.
        if (!journal_stopping_ && journal_waiters_ == 0)
            journal_wake_.wait_for(lock, kJournalBatchDelay, [&] { return journal_stopping_ || journal_waiters_ != 0; });
        std::string batch = std::exchange(journalling_, {});
        journal_busy_ = true;
        lock.unlock();
        std::string error;
        try {
            mirror_(batch);
        } catch (const std::exception& e) {
            error = std::string("journal: ") + e.what();
        }
        lock.lock();
        journal_busy_ = false;
        const auto lines = static_cast<std::uint64_t>(std::count(batch.begin(), batch.end(), '\n'));
        const bool was_healthy = failure_.empty();
        if (!error.empty()) {
            fail_locked(std::move(error));
            lines_lost_ += lines;
        } else if (!was_healthy) {
            lines_lost_ += lines;  // journalled, but the file failed meanwhile
        } else {
            write_locked(batch);
        }
        journal_idle_.notify_all();
        if (was_healthy && !failure_.empty()) {
            const std::string failure = failure_;
            lock.unlock();
            log_ledger_unwritable(failure);
            lock.lock();
        }
    }
}

bool Ledger::write_locked(std::string_view lines) {
    const auto count = static_cast<std::uint64_t>(std::count(lines.begin(), lines.end(), '\n'));
    ssize_t n;
    do {
        n = ::write(fd_->get(), lines.data(), lines.size());
    } while (n < 0 && errno == EINTR);
    if (n > 0) unsynced_ += count;
    if (n < 0) {
        const int err = errno;
        lines_lost_ += count;
        fail_locked("write(" + path_ + "): " + errno_text(err));
        return true;
    }
    if (static_cast<std::size_t>(n) != lines.size()) {
        lines_lost_ += count;
        fail_locked("write(" + path_ + "): short write (" + std::to_string(n) + " of " +
                    std::to_string(lines.size()) + " bytes)");
        return true;
    }
    return false;
}

void Ledger::sync() {
    // fdatasync can take milliseconds; appends must not wait behind it. The
    // shared descriptor stays open while this call holds it, even if reopen()
    // replaces it meanwhile.
    std::shared_ptr<const Fd> fd;
    {
        std::unique_lock lock(mutex_);
        flush_locked();
        if (journal_thread_.joinable()) {
            ++journal_waiters_;
            journal_wake_.notify_all();
            journal_idle_.wait(lock, [&] { return journalling_.empty() && !journal_busy_; });
            --journal_waiters_;
        }
        fd = fd_;
        if (unsynced_ == 0) return;
        unsynced_ = 0;
    }
    if (!fd) return;
    if (::fdatasync(fd->get()) < 0) {
        int err = errno;
        std::lock_guard lock(mutex_);
        fail_locked("fdatasync(" + path_ + "): " + errno_text(err));
    }
}

std::uint64_t Ledger::egress_refusals(const std::string& identity) const {
    std::lock_guard lock(mutex_);
    auto it = egress_refusals_.find(identity);
    return it == egress_refusals_.end() ? 0 : it->second;
}

std::uint64_t Ledger::refusals(const std::string& identity) const {
    std::lock_guard lock(mutex_);
    auto it = refusals_.find(identity);
    return it == refusals_.end() ? 0 : it->second;
}

std::uint64_t Ledger::requests(const std::string& identity) const {
    std::lock_guard lock(mutex_);
    auto it = requests_.find(identity);
    return it == requests_.end() ? 0 : it->second;
}

std::uint64_t Ledger::secrets_reflected(const std::string& identity) const {
    std::lock_guard lock(mutex_);
    auto it = reflected_.find(identity);
    return it == reflected_.end() ? 0 : it->second;
}

}  // namespace corral::gateway
