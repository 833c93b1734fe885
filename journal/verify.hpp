// journal/verify.hpp — checking a journal: every line canonical, signed by
// the given key, chained to the one before, numbered without a gap, and
// ended by exactly one terminal record (followed only by the types that may
// follow it: a reviewed workspace's apply and discard); which run it is, and the files its
// records hold the SHA-256 of (journal/covered_files.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/checked.hpp"
#include "journal/covered_files.hpp"
#include "journal/journal.hpp"
#include "journal/key.hpp"

namespace corral::journal {

enum class Status {
    valid,       // every record good and the last one terminal
    incomplete,  // every record good, no terminal record: evidence up to a point, not of an ending
    invalid,     // a record is bad (named in the verdict)
};
std::string_view status_name(Status status);

struct Verdict {
    Status status = Status::invalid;
    std::uint64_t good_records = 0;     // records that passed every check, from the first
    std::optional<std::uint64_t> line;  // invalid: the 1-based line of the first bad record
    std::string reason;                 // invalid: why that line is bad; incomplete: what is missing
    // invalid because no record verifies with the key, though every one is
    // well-formed and chained: the journal was signed with another key (the
    // reason says so; a record changed after it was signed says "changed").
    bool other_key = false;
    nlohmann::json first;               // the first good record (null if none)
    nlohmann::json terminal;            // the terminal record (null if none)
    std::uint64_t after_end = 0;        // good records after it (journal::may_follow_terminal)
    JournalPosition end;                // after the last good record
    // The decision records' ledger lines, in order, each with its record's seq.
    struct Decision {
        std::uint64_t seq = 0;
        std::string ledger_line;
    };
    std::vector<Decision> decisions;
    // The files the good records hold the SHA-256 of (journal/covered_files.hpp).
    std::vector<CoveredFile> files;
};

// Verifies `text`, a whole journal file. Never throws for bad content.
Verdict verify_journal(std::string_view text, const PublicKey& key);

// Which run a journal is: the id its first record names (the admission's,
// or the terminal record's of a run refused before its box) and the
// admission's time (nullopt without one). nullopt for a journal that names no
// run (a gateway daemon's).
struct RunIdentity {
    std::string id;
    std::optional<std::string> admitted;
};
std::optional<RunIdentity> run_identity(const Verdict& verdict);

// Where run.json disagrees with the journal's admission and terminal records
// (run id, argv, exit code, signal, outcome, status, teardown verdict): one
// line each, empty when they agree. Fields the journal does not hold are not
// compared.
std::vector<std::string> compare_run_json(const Verdict& verdict, const nlohmann::json& run_json);

// Where a ledger file (one line per gateway decision) disagrees with the
// journal's decision records, the ledger being derived from them: line N of
// the ledger must be the journal's Nth ledger line, byte for byte. A journal that
// has ended has every ledger line; one still going (incomplete) may be ahead
// of its ledger, never behind it. The first disagreement, named; none when
// they agree.
Problem compare_ledger(const Verdict& verdict, std::string_view ledger_text);

// One file of a daemon's journal directory (journal/day_journal.hpp), as
// verified, and its last line (without the newline; "" if none).
struct ChainFile {
    std::string name;
    Verdict verdict;
    std::string last_line;
};
// Whether the files, oldest first, form one chain: each file's admission
// names the file before it ("previous") and the SHA-256 of that file's last
// line ("previous_last_sha256"), and every file but the newest has ended
// (a terminal record: rotated, stopped, failed_to_start or recovered). The
// first break, named; empty when they chain. The oldest file may follow one
// that is not there (removed or archived): that is said in *note.
std::optional<std::string> check_day_chain(const std::vector<ChainFile>& files, std::string* note);

}  // namespace corral::journal
