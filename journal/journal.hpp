// journal/journal.hpp — a signed, hash-chained, append-only journal of JSON lines.
//
// Each line is the canonical JSON (journal/canonical.hpp) of
//   {"payload":{...},"prev":"<64 hex>","seq":N,"sig":"<base64>","time":"...","type":"..."}
// where
//   seq      1, 2, 3, ... with no gap
//   prev     SHA-256 (hex) of the previous line's exact bytes, newline
//            excluded; 64 zeros for seq 1
//   time     the writer's UTC wall clock, "YYYY-MM-DDTHH:MM:SS.mmmZ"
//   type     what happened ("admission", "terminal", "recovered", ...)
//   sig      Ed25519 signature of the canonical JSON of the same object
//            without "sig" (these five keys, those bytes exactly)
// Every record is signed (not only checkpoints): tools/bench/journal-sign.cpp
// measured a signature at 40-70 microseconds against milliseconds for the
// fdatasync every authorising record needs anyway (docs/journal.md "Cost").
// A record of a terminal type ends the journal: nothing may follow it but
// the records of what was done with the run's results after it ended
// (may_follow_terminal).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/fd.hpp"
#include "journal/key.hpp"

namespace corral::journal {

inline constexpr std::string_view kTypeAdmission = "admission";
// The box exists and its command starts now: {"uid", "gid"} (a run's, after
// its admission; group-committed: it authorises nothing).
inline constexpr std::string_view kTypeStarted = "started";
// A session's exec (run/session_server.hpp), at its start and at its end.
inline constexpr std::string_view kTypeExec = "exec";
inline constexpr std::string_view kTypeExecEnd = "exec_end";
inline constexpr std::string_view kTypeTerminal = "terminal";    // corral saw the run end
inline constexpr std::string_view kTypeRecovered = "recovered";  // a later corral found it lost
// Gateway decisions, one batch of the ledger: {"ledger_lines": ["<a ledger
// line, its newline excluded>", ...]}, in the ledger's order (the ledger is
// derived from these: docs/journal.md "Gateway decisions").
inline constexpr std::string_view kTypeDecision = "decision";
// A reviewed workspace's changes written into DIR or dropped
// (docs/workspace.md): acts on what the run left, after it ended, so the
// only types that may follow a terminal record. {"workspace", "diff_digest",
// "by", ...}: docs/journal.md "After the run".
inline constexpr std::string_view kTypeWorkspaceApply = "workspace_apply";
inline constexpr std::string_view kTypeWorkspaceDiscard = "workspace_discard";
// Whether `type` ends a journal.
bool is_terminal_type(std::string_view type);
// Whether a record of `type` may follow the terminal record.
bool may_follow_terminal(std::string_view type);
// Whether the journal at `path` ends in a whole line of a terminal type,
// read from its tail only (no verification: a cheap test of which journals
// a start must look at). False if it cannot be read.
bool ends_with_terminal_record(const std::string& path);
// The journal's last line if it ends in a newline (without it), from its
// 64 KiB tail; nothing if it cannot be read, is empty or ends torn.
std::optional<std::string> last_whole_line(const std::string& path);

inline constexpr std::uint64_t kDefaultMaxBytes = 64ull << 20;
// Held back from every record but a terminal one, so a journal that reached
// its bound can still say how the run ended.
inline constexpr std::uint64_t kTerminalReserveBytes = 1ull << 20;

struct WriterOptions {
    std::uint64_t max_bytes = kDefaultMaxBytes;
    std::uint64_t terminal_reserve = kTerminalReserveBytes;
    // Group commit (Commit::group): a record is written (visible to readers,
    // kept across a crash of corral) at once and made durable by the first
    // fdatasync after it; that comes at the latest when `group_records`
    // records wait, when an append or sync_if_due() finds the oldest waiting
    // longer than `group_delay`, or at flush()/a durable record.
    std::chrono::milliseconds group_delay{100};
    std::size_t group_records = 64;
    // false: append() never fdatasyncs for group records; an owner's thread
    // does, with begin_sync()/end_sync(), outside the owner's lock (so the
    // threads that append never wait for the disk).
    bool sync_group_in_append = true;
};

enum class Commit {
    durable,  // fdatasync before append returns: for records that authorise what comes next
    group,    // bounded-delay group commit (WriterOptions)
};

// Where the next record goes.
struct JournalPosition {
    std::uint64_t next_seq = 1;
    std::string prev_hash = std::string(64, '0');
    std::uint64_t size = 0;
};

// The journal's writer. Fails closed: after any write or fdatasync failure
// every later append throws the same error, so no record is ever silently
// dropped or written after a gap. Past its bound it refuses every record but
// the terminal one, which the reserve keeps room for.
class JournalWriter {
public:
    // A new journal at `path`: O_CREAT|O_EXCL, mode 0600, O_APPEND. Throws SysError.
    static JournalWriter create(const std::string& path, const SigningKey& key, WriterOptions options = {});
    // An existing journal, checked with the key's public key first; refuses
    // (UsageError) one that is invalid or already has its terminal record.
    static JournalWriter reopen(const std::string& path, const SigningKey& key, WriterOptions options = {});
    // An ended journal (valid: its terminal record written), checked with the
    // key's public key and locked (flock, held while the writer lives: two
    // commands acting on one run's results append one after the other), for
    // the records that may follow its end (may_follow_terminal) and no other.
    // Refuses (UsageError) one that is invalid or has not ended.
    static JournalWriter reopen_ended(const std::string& path, const SigningKey& key);
    // An fd already open for appending at `at` (tests use /dev/full).
    JournalWriter(Fd fd, std::string path, SigningKey key, JournalPosition at, WriterOptions options);

    // Signs and writes one record; returns its line (no newline). Throws
    // SysError("write"/"fdatasync", path, errno) or UsageError for the bound,
    // a float in `payload`, or a record after the terminal one.
    std::string append(std::string_view type, const nlohmann::json& payload, Commit commit);
    // fdatasync if any record waits for one.
    void flush();
    // flush() if the oldest waiting record is older than group_delay; for an
    // owner's timer. Returns true if it synced.
    bool sync_if_due();

    // Group commit by an owner's thread: begin_sync() (under the owner's
    // lock) names the records written so far; the owner fdatasyncs
    // ticket.fd with its lock released, then calls end_sync() under it with
    // 0 or the fdatasync's errno (a failure fails the writer closed and
    // throws). records == 0: nothing waits.
    struct SyncTicket {
        std::uint64_t upto = 0;  // records appended when the sync began
        std::uint64_t records = 0;
        int fd = -1;
        std::chrono::steady_clock::time_point began{};
    };
    SyncTicket begin_sync() const;
    void end_sync(const SyncTicket& ticket, int error);

    const std::string& path() const { return path_; }
    std::uint64_t size() const { return at_.size; }
    std::uint64_t next_seq() const { return at_.next_seq; }
    bool terminated() const { return terminated_; }
    // Records written that no fdatasync has covered yet.
    std::size_t records_waiting_for_sync() const { return waiting(); }

private:
    [[noreturn]] void fail(const std::exception_ptr& error);
    void check_usable(std::string_view type) const;
    void sync();

    Fd fd_;
    std::string path_;
    SigningKey key_;
    JournalPosition at_;
    WriterOptions options_;
    std::size_t waiting() const { return static_cast<std::size_t>(appended_ - synced_); }

    bool terminated_ = false;
    std::uint64_t appended_ = 0;  // records this writer wrote
    std::uint64_t synced_ = 0;    // of those, the ones an fdatasync covered
    std::chrono::steady_clock::time_point oldest_waiting_{};
    std::exception_ptr failed_;
    std::exception_ptr full_;  // past the bound: set, every later record but a terminal one is refused
};

// "YYYY-MM-DDTHH:MM:SS.mmmZ" of `t`.
std::string utc_time(std::chrono::system_clock::time_point t);

// Appends the "recovered" terminal record to the journal at `path` (if it has
// no terminal record yet): {"outcome":"lost","reason":reason,...}. Returns
// false if the journal already ended. A torn last line (no newline, after
// good records: a writer killed inside its write) is cut, its size and
// SHA-256 kept in the record as "torn_tail". Throws for an otherwise
// invalid journal.
bool append_recovered(const std::string& path, const SigningKey& key, const std::string& reason,
                      const nlohmann::json& details = nlohmann::json::object());

}  // namespace corral::journal
