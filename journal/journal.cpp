// journal/journal.cpp — the writer (see journal.hpp for the format).
#include "journal/journal.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <stdexcept>

#include "base/bounded_lock.hpp"
#include "base/sha256.hpp"
#include "base/sys_error.hpp"
#include "journal/canonical.hpp"
#include "journal/verify.hpp"

namespace corral::journal {

bool is_terminal_type(std::string_view type) { return type == kTypeTerminal || type == kTypeRecovered; }

bool may_follow_terminal(std::string_view type) {
    return type == kTypeWorkspaceApply || type == kTypeWorkspaceDiscard;
}

std::optional<std::string> last_whole_line(const std::string& path) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid()) return std::nullopt;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || st.st_size < 2) return std::nullopt;
    const off_t tail = std::min<off_t>(st.st_size, 64 * 1024);
    std::string buf(static_cast<std::size_t>(tail), '\0');
    ssize_t n = ::pread(fd.get(), buf.data(), buf.size(), st.st_size - tail);
    if (n != tail || buf.back() != '\n') return std::nullopt;
    buf.pop_back();
    auto nl = buf.rfind('\n');
    if (nl == std::string::npos && tail < st.st_size) return std::nullopt;  // a line longer than the tail read
    return nl == std::string::npos ? buf : buf.substr(nl + 1);
}

bool ends_with_terminal_record(const std::string& path) {
    auto line = last_whole_line(path);
    if (!line) return false;
    auto last = nlohmann::json::parse(*line, nullptr, false);
    return last.is_object() && last.contains("type") && last["type"].is_string() &&
           is_terminal_type(last["type"].get<std::string>());
}

std::string utc_time(std::chrono::system_clock::time_point t) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm {};
    ::gmtime_r(&secs, &tm);
    char buf[96];  // room for any int the compiler can imagine, not only four-digit years
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
    return buf;
}

JournalWriter::JournalWriter(Fd fd, std::string path, SigningKey key, JournalPosition at, WriterOptions options)
    : fd_(std::move(fd)), path_(std::move(path)), key_(std::move(key)), at_(std::move(at)), options_(options) {}

JournalWriter JournalWriter::create(const std::string& path, const SigningKey& key, WriterOptions options) {
    Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) throw SysError("open", path, errno);
    check_sys(::fchmod(fd.get(), 0600), "fchmod", path);  // the umask must not change it
    return JournalWriter(std::move(fd), path, key, JournalPosition{}, options);
}

JournalWriter JournalWriter::reopen(const std::string& path, const SigningKey& key, WriterOptions options) {
    Fd fd(::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid()) throw SysError("open", path, errno);
    Verdict v = verify_journal(read_to_end(fd.get(), path), key.public_key());
    if (v.status == Status::invalid)
        throw UsageError(path + ": line " + std::to_string(v.line.value_or(0)) + " is bad (" + v.reason +
                         "); not appending to an invalid journal");
    if (v.status == Status::valid) throw UsageError(path + ": the journal already has its terminal record");
    return JournalWriter(std::move(fd), path, key, v.end, options);
}

JournalWriter JournalWriter::reopen_ended(const std::string& path, const SigningKey& key) {
    Fd fd(::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid()) throw SysError("open", path, errno);
    lock_within(fd.get(), path, LockKind::exclusive);
    Verdict v = verify_journal(read_to_end(fd.get(), path), key.public_key());
    if (v.status == Status::invalid)
        throw UsageError(path + ": line " + std::to_string(v.line.value_or(0)) + " is bad (" + v.reason +
                         "); not appending to an invalid journal");
    if (v.status == Status::incomplete)
        throw UsageError(path + ": the journal has no terminal record yet (the run is still ending, or its "
                         "supervisor was lost and no corral run has started since to end it)");
    JournalWriter writer(std::move(fd), path, key, v.end, WriterOptions{});
    writer.terminated_ = true;
    return writer;
}

namespace {

// The record's line: its signed bytes with "sig" in its sorted place, after
// "seq" and before "time" (payload < prev < seq < sig < time < type), so
// the payload is serialized once, not twice. The same bytes as
// canonical_json of the record with its "sig": a verifier checks exactly
// that (verify.cpp, parse_canonical), and the journal tests verify every
// journal they write.
std::string with_signature(std::string_view signed_bytes, const nlohmann::json& record, std::string_view sig) {
    const std::string tail =
        ",\"time\":" + canonical_json(record.at("time")) + ",\"type\":" + canonical_json(record.at("type")) + "}";
    if (signed_bytes.size() < tail.size() || signed_bytes.substr(signed_bytes.size() - tail.size()) != tail)
        throw std::logic_error("journal record: its canonical bytes do not end with time and type");
    std::string line;
    line.reserve(signed_bytes.size() + sig.size() + 16);
    line.append(signed_bytes.substr(0, signed_bytes.size() - tail.size()));
    line.append(",\"sig\":\"").append(sig).append("\"");  // base64: nothing to escape
    line.append(tail);
    return line;
}

}  // namespace

void JournalWriter::check_usable(std::string_view type) const {
    if (failed_) std::rethrow_exception(failed_);
    // Full: only the terminal record may still come, into the reserve.
    if (full_ && !is_terminal_type(type)) std::rethrow_exception(full_);
    if (terminated_ && !may_follow_terminal(type))
        throw UsageError(path_ + ": the journal has its terminal record; no " + std::string(type) + " record may follow it");
}

void JournalWriter::fail(const std::exception_ptr& error) {
    failed_ = error;
    std::rethrow_exception(error);
}

std::string JournalWriter::append(std::string_view type, const nlohmann::json& payload, Commit commit) {
    check_usable(type);
    nlohmann::json record = {{"seq", at_.next_seq},
                             {"prev", at_.prev_hash},
                             {"time", utc_time(std::chrono::system_clock::now())},
                             {"type", std::string(type)},
                             {"payload", payload}};
    const std::string signed_bytes = canonical_json(record);  // a float in the payload is refused here, nothing written
    std::string line = with_signature(signed_bytes, record, base64_encode(key_.sign(signed_bytes)));
    bool terminal = is_terminal_type(type);
    std::uint64_t bound = terminal ? options_.max_bytes : options_.max_bytes - options_.terminal_reserve;
    if (at_.size + line.size() + 1 > bound) {
        // Fail closed: what this record would have authorised must not happen
        // unrecorded; the reserve keeps room for the terminal record.
        auto full = std::make_exception_ptr(UsageError(
            path_ + ": journal full: record " + std::to_string(at_.next_seq) + " (" + std::string(type) + ", " +
            std::to_string(line.size() + 1) + " bytes) would pass the bound of " + std::to_string(bound) +
            " bytes" + (terminal ? "" : " (" + std::to_string(options_.max_bytes) + " less the terminal record's reserve)") +
            "; stopping"));
        if (terminal) fail(full);
        full_ = full;  // sticks for every record but the terminal one
        std::rethrow_exception(full);
    }
    line.push_back('\n');
    // One write(2) with O_APPEND: the line lands whole after the last one or
    // (short write, error) the journal is cut back to its last whole line.
    ssize_t n;
    do n = ::write(fd_.get(), line.data(), line.size());
    while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(line.size())) {
        int err = n < 0 ? errno : ENOSPC;  // a short write on a regular file: the file system is full
        if (n > 0) (void)::ftruncate(fd_.get(), static_cast<off_t>(at_.size));
        fail(std::make_exception_ptr(SysError(
            "write", path_ + " (record " + std::to_string(at_.next_seq) + ", " + std::string(type) + ")", err)));
    }
    line.pop_back();
    at_.size += line.size() + 1;
    at_.prev_hash = sha256_hex(line);
    ++at_.next_seq;
    if (terminal) terminated_ = true;
    if (waiting() == 0) oldest_waiting_ = std::chrono::steady_clock::now();
    ++appended_;
    if (commit == Commit::durable || terminal ||
        (options_.sync_group_in_append &&
         (waiting() >= options_.group_records ||
          std::chrono::steady_clock::now() - oldest_waiting_ >= options_.group_delay)))
        sync();
    return line;
}

void JournalWriter::sync() {
    if (waiting() == 0) return;
    while (::fdatasync(fd_.get()) < 0) {
        if (errno == EINTR) continue;
        // After a failed fdatasync the kernel may have dropped the dirty
        // pages and cleared the error: a retry could "succeed" with the
        // records lost. Nothing more is written.
        fail(std::make_exception_ptr(SysError("fdatasync", path_, errno)));
    }
    synced_ = appended_;
}

JournalWriter::SyncTicket JournalWriter::begin_sync() const {
    if (failed_) std::rethrow_exception(failed_);
    return SyncTicket{.upto = appended_, .records = waiting(), .fd = fd_.get(), .began = std::chrono::steady_clock::now()};
}

void JournalWriter::end_sync(const SyncTicket& ticket, int error) {
    if (failed_) std::rethrow_exception(failed_);
    if (error != 0) fail(std::make_exception_ptr(SysError("fdatasync", path_, error)));
    if (ticket.upto > synced_) synced_ = ticket.upto;
    // Records written during the sync are younger than its start.
    if (waiting() > 0) oldest_waiting_ = ticket.began;
}

void JournalWriter::flush() {
    if (failed_) std::rethrow_exception(failed_);
    sync();
}

bool JournalWriter::sync_if_due() {
    if (failed_) std::rethrow_exception(failed_);
    if (waiting() == 0 || std::chrono::steady_clock::now() - oldest_waiting_ < options_.group_delay) return false;
    sync();
    return true;
}

bool append_recovered(const std::string& path, const SigningKey& key, const std::string& reason,
                      const nlohmann::json& details) {
    Fd fd(::open(path.c_str(), O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid()) throw SysError("open", path, errno);
    // Two corral starts may find the same lost run: one of them ends it.
    lock_within(fd.get(), path, LockKind::exclusive);
    const std::string text = read_to_end(fd.get(), path);
    Verdict v = verify_journal(text, key.public_key());
    if (v.status == Status::valid) return false;
    nlohmann::json payload = details;
    // A supervisor killed inside a write(2) can leave a torn last line: no
    // newline, after records that all verify. Nothing signed is lost by
    // cutting it (a record without its newline was never complete); its
    // bytes are kept as a digest in the signed recovered record instead.
    const bool torn_tail = v.status == Status::invalid && v.end.size < text.size() &&
                           text.find('\n', v.end.size) == std::string::npos;
    if (torn_tail) {
        const std::string_view tail = std::string_view(text).substr(v.end.size);
        payload["torn_tail"] = {{"bytes", tail.size()}, {"sha256", sha256_hex(tail)}};
        check_sys(::ftruncate(fd.get(), static_cast<off_t>(v.end.size)), "ftruncate", path);
        v.status = Status::incomplete;
    }
    if (v.status == Status::invalid)
        throw UsageError(path + ": line " + std::to_string(v.line.value_or(0)) + " is bad (" + v.reason +
                         "); not appending a recovered record to an invalid journal");
    JournalWriter writer(std::move(fd), path, key, v.end, WriterOptions{});
    // Never a success: corral did not see how the run ended.
    payload["outcome"] = "lost";
    payload["reason"] = reason;
    writer.append(kTypeRecovered, payload, Commit::durable);
    return true;
}

}  // namespace corral::journal
