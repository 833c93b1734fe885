// gateway/ledger.hpp — one JSON line per request and per refusal.
//
// The ledger is the gateway's record of what every sandbox tried. If it cannot
// be written the gateway must stop serving new requests (fail closed): append()
// never throws on I/O failure, it marks the ledger unhealthy, and the serving
// side checks healthy() before accepting each request (503 "ledger_unwritable").
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <string_view>
#include <thread>
#include <vector>

#include "base/fd.hpp"
#include "gateway/refusal.hpp"

namespace corral::gateway {

enum class Decision { allow, refuse };

// On the line of a metered model request (one per HTTP request, one per
// response on a WebSocket): what it asked for, what it used and cost, and
// what its budgets have left. Names and numbers only, never a body.
struct MeteredLine {
    std::string api;           // metering::model_api_name
    std::string model;         // the model that answered, else the one asked for ("" = neither said)
    std::string usage_state;   // reported | unavailable | not_metered | provider_error
    std::string usage_reason;  // why unavailable, or the provider's error
    std::vector<std::pair<std::string, std::uint64_t>> usage;  // the categories reported, provider's names
    std::string cost_state;    // computed | unavailable ("" on a refusal: nothing was spent)
    std::uint64_t usd_micros = 0;
    std::string cost_reason;   // why unavailable
    std::string price_source, price_date;
    // Per limit set: what is left for new requests on the run's budget and,
    // with one, the worker's across runs.
    std::vector<std::pair<std::string, std::uint64_t>> remaining;
    std::vector<std::pair<std::string, std::uint64_t>> worker_remaining;
    // A response that used more than its reserved worst case, and by how
    // much each limit it went past was overspent (run's, worker's).
    bool over_reservation = false;
    std::vector<std::pair<std::string, std::uint64_t>> overspent;
    std::vector<std::pair<std::string, std::uint64_t>> worker_overspent;
    std::string limit;         // a refusal: the budget limit or policy rule that refused
};

// On the lines of the MCP endpoint (mode "mcp", gateway/mcp_endpoint.hpp):
// one `decision` line per message before anything is forwarded, one
// `outcome` line per message after the server answered; a `first_sight`
// line when a tools/list shows a tool for the first time (its digest now
// trusted), a `quarantine` line when a tool's digest first differs from the
// trusted one. Names and digests only; the arguments and the result too,
// scrubbed and capped, only with [mcp] log_arguments.
struct ToolLine {
    std::string phase;             // "decision" | "outcome" | "first_sight" | "quarantine"
    std::string server;            // [mcp.servers.NAME]
    std::string method;            // the JSON-RPC method ("tools/call", "tools/list", ...)
    std::string tool;              // tools/call: the tool's name; "" otherwise
    std::string arguments_digest;  // tools/call: "sha256:<hex>" of the canonical arguments
    std::string rule;              // the deciding rule's name; "" for the default deny or a non-call
    std::string error;             // outcome: the JSON-RPC error's code and message, or what corral withheld
    std::uint64_t result_bytes = 0;  // outcome: bytes of the answer's result as the box got it
    std::string result_digest;     // outcome: "sha256:<hex>" of those bytes
    std::string digest;            // first_sight, quarantine: the tool's digest as the server now lists it
    std::string trusted_digest;    // quarantine: the digest trusted before
    std::string arguments;         // log_arguments, tools/call decision: canonical JSON, scrubbed, capped
    std::string result;            // log_arguments, outcome: the answer as the box got it, capped
};

// An approval's record (docs/approvals.md "Evidence"): the entry asked for
// (phase "requested") and how it ended ("decided": approved or denied by a
// person, timed_out, cancelled). Records, not requests: counted apart.
struct ApprovalLine {
    std::string phase;       // "requested" | "decided"
    std::string id;          // the queue's entry id
    std::string digest;      // "sha256:<hex>" the entry is bound to
    std::string state;       // decided: approved | denied | timed_out | cancelled
    std::string decided_by;  // decided by a person: their Unix user ("root (uid 0)")
    std::string reason;      // a deny's reason, a cancel's cause
    std::string deadline;    // requested: UTC, milliseconds
    bool always = false;     // approved with --always: a grant for the rest of the run
};

struct LedgerEntry {
    std::chrono::system_clock::time_point time = std::chrono::system_clock::now();
    std::string identity;        // "worker/run"
    std::string role;            // a session's role whose UID sent it (Identity::role); "" for a run
    std::string mode;            // "tunnel" | "inject" | "" (refused before a grant was found)
    std::string method;          // "CONNECT", "GET", ...
    std::string host;            // as normalised (or as sent, if it could not be normalised)
    std::uint16_t port = 0;
    std::string path;            // request target path ("" for CONNECT)
    Decision decision = Decision::allow;
    std::string reason;          // a reason:: code; "" when allowed
    int status = 0;              // HTTP status sent to the client (0 = none, e.g. tunnel cut)
    std::uint64_t bytes_up = 0;  // client → upstream payload bytes
    std::uint64_t bytes_down = 0;// upstream → client payload bytes
    std::uint64_t duration_ms = 0;
    std::string credential;      // credential NAME injected ("" = none); never its value
    // Transparent capture: the box's program did not use the proxy; its
    // connection to a synthetic address (or its DNS query) was captured
    // (docs/capture.md). Written as "captured":true, after credential.
    bool captured = false;
    // Only on the ledger's refusal-cap lines: the identity's refusals counted
    // so far, written lines and suppressed ones together (0 = no such key).
    std::uint64_t refusals = 0;
    // Only on secret_reflected lines: the forms found ("literal,base64", see
    // scrub_form_names) and how many occurrences were masked (0 = no such keys).
    std::string form;
    std::uint64_t matches = 0;
    std::optional<MeteredLine> metered;  // a model request's line (see MeteredLine)
    std::optional<ToolLine> tool;        // an MCP endpoint's line (see ToolLine)
    std::optional<ApprovalLine> approval;  // an approval's record (see ApprovalLine)
};

// An identity's first refusal of one host:port, and how many followed:
// what `corral run` tells the operator live (run/refusal_report.hpp).
struct RefusalNotice {
    std::string host;
    std::uint16_t port = 0;
    std::string method;
    std::string mode;
    std::string reason;
    int status = 0;
    std::uint64_t count = 0;   // refusals of this host:port so far
    std::string role;          // a session's: the role of the latest refused connection ("" otherwise)
};
// Host:ports kept per identity; refusals of others are only counted.
inline constexpr std::size_t kRefusalNoticesPerIdentity = 32;

// One JSON object on one line, terminated by '\n'. Keys, in this order:
// time (RFC 3339 UTC with milliseconds, "2026-11-30T05:29:39.123Z"), identity,
// role (a session's lines only: e.role non-empty), mode, method, host, port, path, decision ("allow"|"refuse"), reason, status,
// bytes_up, bytes_down, duration_ms, credential, and `refusals` last on the
// ledger's refusal-cap lines only (e.refusals != 0), `form` and `matches` last
// on secret_reflected lines only (e.matches != 0), and `metering` last on a
// metered model request's line: {api, model, usage: {state, reason, the
// reported categories}, cost: {state, usd, usd_micros, source, date, reason},
// remaining: {limit: left}, worker_remaining, limit}, empty members left
// out, and `tool` last on an MCP endpoint's line: {phase, server, method,
// tool, arguments_digest, rule, error, result_bytes, result_digest, digest,
// trusted_digest, arguments, result}, empty members left out. Every string field has each
// occurrence of every non-empty string in `secrets` replaced by "[redacted]"
// before encoding; invalid UTF-8 is replaced (U+FFFD), never thrown on.
std::string format_ledger_line(const LedgerEntry& e, const std::vector<std::string>& secrets = {});

// A refused DNS query's line, one spelling whoever writes it (the run's embedded
// stub or the gateway daemon for a run's CORRAL-DNS line): mode "dns", the
// query type as method ("-" when it had none), the name as host ("." when the
// query had none, DNS's root, cut to 256 bytes), port 53, status 0 (answered
// in DNS or not at all, never in HTTP), captured.
LedgerEntry dns_refusal_entry(std::string identity, std::string_view qtype, std::string_view name,
                              std::string_view reason);

// Thread-safe appender. The file is opened O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC,
// mode 0600. Lines are formatted outside the lock; under it they join a
// pending batch that goes out in one write(2), so lines never interleave.
// append() writes its line at once; the serving side uses append_batched()
// and flushes from its event loop once the loop has run what was ready, so
// lines produced together (several connections answered in one loop turn)
// share one write(2). fsync policy: no fsync per line (it would cap the
// gateway at the disk's sync rate); sync() flushes and fdatasyncs, and the
// daemon calls it periodically and at shutdown — a process crash loses at
// most the lines of the loop turn in progress, a host crash may lose the
// last lines in the page cache.
//
// Refusal lines are bounded per identity (a box looping on a refused CONNECT
// would otherwise fill the disk): with refusal_lines_per_identity = N > 0, an
// identity's first N refusals are written line by line; the next one writes
// one `ledger_refusal_cap_reached` line instead of its own, and later ones
// only a `ledger_refusals_suppressed` line when the identity's refusal count
// reaches 2N, 4N, 8N, … (each with that count), so an identity writes at most
// N + 1 + ~64 refusal lines ever. Every refusal is still counted (refusals(),
// requests() stay exact) and still refused by the caller; allowed entries are
// always written.
// The signed journal the ledger file is derived from (a run's, or the
// daemon's: docs/journal.md "Gateway decisions"). With a mirror, no line
// reaches the file before the mirror has it: flush() only queues the batch,
// and the ledger's journal thread (started with the first batch, so a
// supervisor stays single-threaded until its clone) hands what queued to
// the mirror at most kJournalBatchDelay later, then writes those lines to
// the file. The signature is off the request path, and lines that come
// together share a record. A mirror that throws makes the ledger unhealthy
// with "journal: <what>" (fail closed: every later request is refused 503
// ledger_unwritable, at most one batch delay after the failure); the lines
// it held are counted in lines_lost().
using LedgerMirror = std::function<void(std::string_view lines)>;
inline constexpr std::chrono::milliseconds kJournalBatchDelay{10};

// The one error line for a ledger that has just become unhealthy (logged
// once, by the thread whose write or journal failed).
void log_ledger_unwritable(std::string_view failure);

class Ledger {
public:
    // Never throws for I/O: an unopenable path leaves the ledger unhealthy
    // with failure() = "open(PATH): <errno text>". refusal_lines_per_identity
    // 0 = write every refusal.
    explicit Ledger(const std::string& path, std::uint64_t refusal_lines_per_identity = 0);
    ~Ledger();  // flushes what is pending
    Ledger(const Ledger&) = delete;
    Ledger& operator=(const Ledger&) = delete;

    // Lock-free: checked before every request.
    bool healthy() const { return healthy_.load(std::memory_order_acquire); }
    std::string failure() const;   // "" while healthy; else the first failure, e.g. "write(PATH): No space left on device"
    const std::string& path() const { return path_; }

    // Secrets scrubbed from every later line (defence in depth: callers should
    // never pass them, but a secret echoed into a path or reason still never lands).
    void register_secret(const std::string& secret);

    // Every later batch goes to `mirror` first, from the ledger's journal
    // thread (see LedgerMirror). Set it before the first request; the
    // mirror must outlive the ledger, or its last sync().
    void mirror_to(LedgerMirror mirror);

    // Counts the entry (requests/refusals per identity, even when unhealthy),
    // then writes its line; a failed or short write marks the ledger unhealthy
    // until reopen() succeeds. Never throws on I/O failure.
    void append(const LedgerEntry& e);

    // Counts the entry and adds its line to the pending batch without writing.
    // True when the batch was empty before: the caller must then make sure
    // flush() runs soon (the gateway posts it to the connection's event loop).
    bool append_batched(const LedgerEntry& e);

    // Writes the pending batch in one write(2) (with a mirror: queues it for
    // the journal thread). True if this call is the one that made the ledger
    // unhealthy (so the caller can log the failure once).
    bool flush();

    // Flushes, waits until the journal thread has mirrored and written
    // everything queued (with a mirror), then fdatasync(2) without holding
    // the append lock; a failure marks the ledger unhealthy. No fdatasync
    // when nothing was written since the last sync (a run without requests
    // must not pay a journal commit for an empty file).
    void sync();

    // Writes what is pending to the file open now, then opens the path again
    // (the daemon's SIGHUP, after logrotate moved the file away). When the new
    // file opens, the ledger is healthy again (an operator who freed the disk
    // after ENOSPC can resume without a restart); when it does not, the
    // ledger is unhealthy with that failure and every request is refused.
    // Returns one line for the daemon's log: what was reopened, and how many
    // lines the failure before it had cost.
    std::string reopen();

    // Lines not written since the ledger became unhealthy: the batch the
    // failing write held, and every entry after it (their requests were
    // refused, but their lines are gone). 0 while healthy.
    std::uint64_t lines_lost() const;

    // Entries appended (written or not: see the refusal cap above); the
    // ledger's own cap lines are not entries and are not counted.
    std::uint64_t refusals(const std::string& identity) const;  // entries with decision refuse
    // Of those, the box's egress (not the MCP endpoint's, whose refusals are
    // tool calls or the MCP client's own probes): the attested outcome's.
    std::uint64_t egress_refusals(const std::string& identity) const;
    std::uint64_t requests(const std::string& identity) const;  // all entries but a tool's first_sight/quarantine records
    // secret_reflected lines: counted here only, not as requests (the
    // request they belong to has its own line).
    std::uint64_t secrets_reflected(const std::string& identity) const;
    // The identity's refused host:ports in the order first refused (at most
    // kRefusalNoticesPerIdentity).
    std::vector<RefusalNotice> refusal_notices(const std::string& identity) const;

private:
    // The cap line the identity's `refused`-th refusal writes instead of its
    // own: a reason:: code, or "" (its own line, or none once past the cap).
    std::string_view refusal_cap_line(std::uint64_t refused) const;
    void fail_locked(std::string what);
    void note_refusal_locked(const LedgerEntry& e);
    std::string format(const LedgerEntry& e) const;
    bool flush_locked();
    bool write_locked(std::string_view lines);
    void journal_loop();

    std::string path_;
    std::uint64_t refusal_lines_per_identity_;
    mutable std::mutex mutex_;
    // Shared so that sync() can fdatasync without the lock while reopen()
    // replaces the file: the old descriptor lives until the last user lets go.
    std::shared_ptr<const Fd> fd_;
    std::uint64_t lines_lost_ = 0;
    std::string failure_;
    std::atomic<bool> healthy_{true};
    std::string pending_;          // formatted lines not yet written
    LedgerMirror mirror_;
    // With a mirror: lines flushed, waiting for the journal thread, which
    // alone writes the file then.
    std::string journalling_;
    bool journal_busy_ = false;         // the thread holds a batch outside the lock
    unsigned journal_waiters_ = 0;      // sync() calls waiting: no batch delay then
    bool journal_stopping_ = false;
    std::condition_variable journal_wake_;
    std::condition_variable journal_idle_;
    std::thread journal_thread_;
    std::uint64_t unsynced_ = 0;   // lines written since the last sync()
    // Read by format() without the lock: replaced (never changed in place) under it.
    std::atomic<std::shared_ptr<const std::vector<std::string>>> secrets_;
    std::map<std::string, std::uint64_t, std::less<>> refusals_;
    std::map<std::string, std::uint64_t, std::less<>> egress_refusals_;
    std::map<std::string, std::uint64_t, std::less<>> requests_;
    std::map<std::string, std::uint64_t, std::less<>> reflected_;
    std::map<std::string, std::vector<RefusalNotice>, std::less<>> notices_;
};

}  // namespace corral::gateway
