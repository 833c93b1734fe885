// journal/day_journal.hpp — the `corral gateway` daemon's journal: one file
// per UTC day and per daemon start, DIR/YYYY-MM-DD.N.jsonl (N = 1, 2, ...
// within the day), each a journal of journal.hpp's format:
//
//   admission   what the daemon serves (the caller's payload) and where this
//               file stands in the daemon's trail: {"journal": {"day", "n",
//               "previous": the file before it (or null), "previous_last_sha256":
//               SHA-256 of that file's last line}}, so a removed file breaks
//               the trail visibly
//   decision    one per ledger line (SharedJournal::decision_sink)
//   terminal    {"outcome": "stopped"} at a clean stop, {"outcome": "rotated",
//               "next": FILE} when the UTC day changes or the file nears its
//               bound (the next file's admission follows at once), or
//               {"outcome": "failed_to_start", "error": ...}
//   recovered   added by the next start to a file a killed daemon left
//               without a terminal record (never a clean stop)
//
// Why per day and per start, not per worker: the daemon serves many workers
// through one ledger, so one trail keeps their order; a file per start makes
// every restart (and every killed daemon) a visible ending, as a run's is.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "journal/key.hpp"
#include "journal/shared_journal.hpp"

namespace corral::journal {

class DayJournal {
public:
    using Clock = std::function<std::chrono::system_clock::time_point()>;

    // Ends (recovered) every file in `dir` a killed daemon left open, one
    // line in `notes` each, then starts the next file with `admission`
    // (durable). `dir` is made 0700 if missing. Throws SysError/UsageError.
    static std::unique_ptr<DayJournal> open(const std::string& dir, const SigningKey& key, nlohmann::json admission,
                                            std::vector<std::string>& notes, WriterOptions options = shared_writer_options(),
                                            Clock clock = std::chrono::system_clock::now);

    LineSink decision_sink() { return shared_->decision_sink(); }
    // The terminal record {"outcome": outcome, ...details} (durable), after
    // the last decision.
    void end(const std::string& outcome, nlohmann::json details = nlohmann::json::object());
    std::string path() const { return shared_->path(); }

private:
    DayJournal() = default;
    // The file after `current`: its terminal "rotated" record written, the
    // next file created with its admission. Called under SharedJournal's lock.
    std::optional<JournalWriter> rotate_if_due(JournalWriter& current);
    JournalWriter start_file(const std::string& day, unsigned n, const std::string& previous,
                             const std::string& previous_last_line);

    std::string dir_;
    std::optional<SigningKey> key_;
    nlohmann::json admission_;
    WriterOptions options_;
    Clock clock_;
    std::string day_;
    unsigned n_ = 0;
    std::unique_ptr<SharedJournal> shared_;
};

// The names of the day journals in `dir` (YYYY-MM-DD.N.jsonl), oldest
// first: by day, then N ("10" after "9"). Throws SysError.
std::vector<std::string> day_journal_files(const std::string& dir);

// "YYYY-MM-DD" (UTC) of `t`.
std::string utc_day(std::chrono::system_clock::time_point t);

}  // namespace corral::journal
