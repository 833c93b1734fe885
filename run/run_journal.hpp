// run/run_journal.hpp — a run's journal.jsonl (journal/journal.hpp): which
// facts of the run go in its admission and terminal records, its gateway's
// decisions, and the recovered record for runs whose supervisor was lost
// (docs/journal.md).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "journal/journal.hpp"
#include "journal/shared_journal.hpp"
#include "supervisor/run_record.hpp"
#include "supervisor/sandbox.hpp"

namespace corral::run {

inline constexpr const char* kJournalFile = "journal.jsonl";

// The admission payload: what was asked and resolved, from the run's record
// so far and the box's spec. Env NAMES only: values may be credentials.
// Integers only (journal/canonical.hpp): --cpus as thousandths.
nlohmann::json admission_payload(const supervisor::RunRecord& record, const supervisor::SandboxSpec& spec);

// The terminal payload: how the run ended, its output (byte counts, and each
// log file of run_dir by name and SHA-256: journal::file_sha256, which
// `corral journal verify` compares), teardown steps and verdict, counts.
nlohmann::json terminal_payload(const supervisor::RunRecord& record, const std::string& run_dir,
                                const std::string& stdout_log_name);

// RUN_DIR/journal.jsonl, created 0600, signed with the state dir's key
// (created on first use like the CA's), written by the run's thread
// (admission, terminal) and the embedded gateway's (decisions: its
// decision_sink() is the ledger's mirror). Throws SysError/UsageError.
std::unique_ptr<journal::SharedJournal> open_run_journal(const std::string& state_dir, const std::string& run_dir);

// Every lost run of the state dir (run.json "running", supervisor gone) whose
// journal has no terminal record gets a signed "recovered" record
// ("supervisor lost"; never a success). Returns one line per run recovered
// or that could not be (never throws for one run's problem).
std::vector<std::string> recover_lost_runs(const std::string& state_dir);

}  // namespace corral::run
