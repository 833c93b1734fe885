// tools/cmd_workspace.cpp — `corral diff`, `corral apply`, `corral discard`:
// a reviewed workspace's changes shown, written into DIR, or dropped
// (workspace/, docs/workspace.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/remove_tree.hpp"
#include "base/sys_error.hpp"
#include "base/terminal_text.hpp"
#include "cli/workspace_args.hpp"
#include "journal/journal.hpp"
#include "run/outcome.hpp"
#include "run/run_index.hpp"
#include "run/run_journal.hpp"
#include "run/exec_wire.hpp"
#include "run/session_server.hpp"
#include "run/workspace_review.hpp"
#include "tools/commands.hpp"
#include "workspace/apply.hpp"
#include "workspace/collect.hpp"
#include "workspace/git_ignored.hpp"
#include "workspace/report.hpp"
#include "workspace/review_journal.hpp"
#include "workspace/review_record.hpp"

namespace corral::cli {

namespace {

// The run dir RUN names: a path (with a '/', or a directory here holding a
// review) as is, else a run of the state dir.
std::string run_dir_of(const WorkspaceArgs& a) {
    struct stat st {};
    const bool review_here = stat((a.run + "/" + workspace::kReviewDirName).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    if (a.run.find('/') != std::string::npos || review_here) return a.run;
    return run::find_run(a.state_dir, a.run).run_dir;
}

// Box-made bytes (paths, file contents) reach a terminal escaped, line by
// line; a pipe or file gets them as they are (a patch stays a patch).
void print(const std::string& text) {
    if (!isatty(STDOUT_FILENO)) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        return;
    }
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t eol = std::min(text.find('\n', at), text.size());
        std::printf("%s\n", terminal_text(std::string_view(text).substr(at, eol - at)).c_str());
        at = eol + 1;
    }
}

constexpr const char* kNotCopiedOut =
    ": its changes are not ready: the run has not ended (or was killed before they were copied out)";

// The review's record, refusing one whose changes cannot be read. A
// running one's only by `diff`, from its live layer, and by `apply
// --while-running`; `apply` and `discard` wait for the end (the agent may
// still be writing).
workspace::ReviewRecord ready_review(const std::string& run_dir, std::string_view cmd, bool while_running) {
    if (geteuid() != 0) throw UsageError("must run as root (a run dir is root's alone)");
    workspace::ReviewRecord r = workspace::read_review_record(run_dir);
    if (r.state == "running" && r.live_pid == 0) throw UsageError(run_dir + kNotCopiedOut);
    if (r.state == "running" && cmd != "diff") {
        if (!run::open_live_upper(r)) throw UsageError(run_dir + kNotCopiedOut);  // its supervisor is gone
        if (!(cmd == "apply" && while_running))
            throw UsageError(run_dir + ": the run is still going and its agent may still be writing: " + std::string(cmd) +
                             " its changes once it has ended (corral session stop, corral stop), or a session's now"
                             " with `corral apply --while-running`; `corral diff` shows them so far");
    }
    if (r.state == "failed") throw UsageError(run_dir + ": its changes could not be kept: " + r.error);
    if (r.state == "discarded") throw UsageError(run_dir + ": its changes were discarded");
    return r;
}

// One command's start: its command line read and the review RUN names
// found ready. nullopt when it ends there: `status` is --help's 0 or a usage
// error's 2 (said on stderr).
struct Start {
    WorkspaceArgs args;
    std::string run_dir;
    workspace::ReviewRecord record;
};
std::optional<Start> start(const char* cmd, int argc, char** argv, int& status) {
    Start s;
    try {
        s.args = parse_workspace_args(cmd, argc, argv);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "corral %s: %s\n", cmd, terminal_text(e.what()).c_str());
        status = run::kExitUsage;
        return std::nullopt;
    }
    if (s.args.help) {
        std::fputs(workspace_help(cmd).c_str(), stdout);
        status = 0;
        return std::nullopt;
    }
    s.run_dir = run_dir_of(s.args);
    s.record = ready_review(s.run_dir, cmd, s.args.while_running);
    return s;
}

// The run's journal, ended and locked, for the record of what is done with
// its changes: opened before anything is done, so an apply or discard that
// could not be journalled never starts (docs/journal.md "After the run").
journal::JournalWriter ended_journal(const Start& s) {
    const journal::SigningKey key = journal::SigningKey::load_or_create(s.args.state_dir);
    try {
        return journal::JournalWriter::reopen_ended(s.run_dir + "/" + run::kJournalFile, key);
    } catch (const UsageError& e) {
        // A run dir named by its path may be another state dir's run.
        throw UsageError(std::string(e.what()) + "; nothing done (checked with state dir " + s.args.state_dir +
                         "'s key: a run of another state dir needs its --state-dir)");
    }
}

// Appends the record of what was done; false (said on stderr) when it
// could not be written: what it records has happened, unrecorded.
bool journalled(journal::JournalWriter& journal, std::string_view type, const nlohmann::json& payload,
                const char* cmd) {
    try {
        journal.append(type, payload, journal::Commit::durable);
        return true;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "corral %s: done, but the journal record was not written: %s\n", cmd,
                     terminal_text(e.what()).c_str());
        return false;
    }
}

// The changes in `upper` against DIR now, a file an earlier apply of this
// review wrote taken as the review's own (workspace::accept_own_applies).
std::vector<workspace::Change> changes_of(const std::string& upper, const workspace::ReviewRecord& record,
                                          const workspace::IdTranslation* live_ids = nullptr) {
    auto changes = workspace::collect_changes(upper, record.workspace, record.fence_ns, live_ids);
    workspace::accept_own_applies(changes, record);
    return changes;
}

// --expect against the diff's digest now; false (said) when it is stale.
bool expected(const WorkspaceArgs& a, const std::string& digest) {
    if (!a.expect || *a.expect == digest) return true;
    std::fprintf(stderr, "corral apply: the diff is %s now, not %s: review it again (corral diff %s); nothing applied\n",
                 digest.c_str(), terminal_text(*a.expect).c_str(), terminal_text(a.run).c_str());
    return false;
}

void print_outcome(const workspace::ApplyOutcome& outcome) {
    std::string text;
    for (const auto& p : outcome.applied) text += "applied " + p + "\n";
    for (const auto& [p, why] : outcome.refused) text += "refused " + p + ": " + why + "\n";
    print(text);
}

std::string summary(const std::vector<workspace::Change>& changes) {
    std::size_t n[4] = {}, conflicts = 0;
    for (const auto& c : changes) {
        ++n[static_cast<int>(c.kind)];
        conflicts += c.host_changed ? 1 : 0;
    }
    return std::to_string(changes.size()) + " changes: " + std::to_string(n[0]) + " added, " + std::to_string(n[1]) +
           " modified, " + std::to_string(n[2]) + " deleted, " + std::to_string(n[3]) + " type-changed; " +
           std::to_string(conflicts) + " changed on the host since the run started\n";
}

}  // namespace

int cmd_diff(int argc, char** argv) {
    int status = 0;
    auto s = start("diff", argc, argv, status);
    if (!s) return status;
    const WorkspaceArgs& a = s->args;
    const std::string& run_dir = s->run_dir;
    const auto& record = s->record;
    // While the box runs: its layer as it is now, read through the supervisor's fd.
    std::optional<run::LiveLayer> live;
    if (record.state == "running" && !(live = run::open_live_upper(record))) throw UsageError(run_dir + kNotCopiedOut);
    const std::string upper = live ? live->dir : workspace::upper_dir(run_dir);
    auto changes = changes_of(upper, record, live ? &live->ids : nullptr);
    std::string note = workspace::mark_ignored(changes, record);
    if (live)
        note += std::string(note.empty() ? "" : "; ") +
                "the run is still going: these are its changes so far (its agent may still be writing)";
    const std::string digest = workspace::diff_digest(changes);
    const workspace::ReportSides sides{upper, record.workspace};
    if (a.json_out) {
        nlohmann::json out = {{"workspace", record.workspace}, {"digest", digest}, {"running", live.has_value()},
                              {"changes", nlohmann::json::array()}};
        for (const auto& c : changes)
            if (workspace::selected(c.path, a.paths)) out["changes"].push_back(workspace::change_json(c, sides, !a.stat));
        if (!note.empty()) out["note"] = note;
        // A path or a text file need not be UTF-8: replaced, never a failed dump.
        std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return 0;
    }
    std::string text;
    for (const auto& c : changes)
        if (workspace::selected(c.path, a.paths))
            text += a.stat ? workspace::change_stat_line(c) : workspace::change_text(c, sides);
    print(text);
    if (!note.empty()) std::printf("note: %s\n", note.c_str());
    std::printf("%sdigest: %s\n", summary(changes).c_str(), digest.c_str());
    return 0;
}

// `corral apply --while-running` of a session that still runs: from its
// live layer (root opens each reviewed copy: they are the agent's UID's),
// recorded by the session's supervisor, which owns review.json and the
// journal until the end (docs/workspace.md "While it runs").
int apply_while_running(const Start& s) {
    const WorkspaceArgs& a = s.args;
    const workspace::ReviewRecord& record = s.record;
    const std::string socket = run::session_socket_path(s.run_dir);
    struct stat st {};
    if (lstat(socket.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode))
        throw UsageError(s.run_dir + ": not a session: a run's changes are applied once it has ended (--while-running"
                                     " is for a session's workspace)");
    auto live = run::open_live_upper(record);
    if (!live) throw UsageError(s.run_dir + kNotCopiedOut);
    const auto changes = changes_of(live->dir, record, &live->ids);
    const std::string digest = workspace::diff_digest(changes);
    if (!expected(a, digest)) return 1;
    const auto chosen = workspace::changes_to_apply(changes, a.paths);
    if (!a.paths.empty() && chosen.empty()) throw UsageError("--only: no change at " + a.paths.front());
    const auto outcome = workspace::apply_changes(chosen, live->dir, record, workspace::ReviewedCopies::live);
    print_outcome(outcome);
    const workspace::ApplyFacts facts{digest, a.expect, a.paths, outcome.applied, outcome.refused};
    nlohmann::json payload = workspace::apply_payload(record, facts);
    payload["while_running"] = true;
    nlohmann::json stamps = nlohmann::json::object();
    for (const auto& [path, stamp] : outcome.stamps) stamps[path] = {stamp.ctime_sec, stamp.ctime_nsec};
    const nlohmann::json request = {{"payload", payload}, {"applied", outcome.applied}, {"stamps", stamps}, {"digest", digest}};
    std::optional<run::ExecAnswer> answer;
    std::string why;
    try {
        answer = run::ask_session(socket, run::workspace_applied_line(request));
        if (!answer) why = "the session ended meanwhile";
        else if (answer->status != 0) why = answer->messages.empty() ? "refused" : answer->messages.front();
    } catch (const std::exception& e) {
        why = e.what();
    }
    std::printf("%zu applied, %zu refused (diff %s) while the session runs\n", outcome.applied.size(),
                outcome.refused.size(), digest.c_str());
    if (!why.empty()) {
        std::fprintf(stderr, "corral apply: done, but the session did not record it (%s): a later apply may call "
                             "these files conflicts\n", terminal_text(why).c_str());
        return run::kExitSetup;
    }
    return outcome.refused.empty() ? 0 : 1;
}

int cmd_apply(int argc, char** argv) {
    int status = 0;
    auto s = start("apply", argc, argv, status);
    if (!s) return status;
    if (s->record.state == "running") return apply_while_running(*s);
    const WorkspaceArgs& a = s->args;
    const std::string& run_dir = s->run_dir;
    auto& record = s->record;
    auto journal = ended_journal(*s);
    const auto changes = changes_of(workspace::upper_dir(run_dir), record);
    const std::string digest = workspace::diff_digest(changes);
    if (!expected(a, digest)) return 1;
    const auto chosen = workspace::changes_to_apply(changes, a.paths);
    if (!a.paths.empty() && chosen.empty()) throw UsageError("--only: no change at " + a.paths.front());
    const auto outcome = workspace::apply_changes(chosen, workspace::upper_dir(run_dir), record);
    print_outcome(outcome);
    record.applied.insert(record.applied.end(), outcome.applied.begin(), outcome.applied.end());
    for (const auto& [path, stamp] : outcome.stamps) record.applied_stamps[path] = stamp;
    record.applied_digest = digest;
    record.state = "applied";
    workspace::write_review_record(run_dir, record);
    std::printf("%zu applied, %zu refused (diff %s)\n", outcome.applied.size(), outcome.refused.size(), digest.c_str());
    const workspace::ApplyFacts facts{digest, a.expect, a.paths, outcome.applied, outcome.refused};
    if (!journalled(journal, journal::kTypeWorkspaceApply, workspace::apply_payload(record, facts), "apply"))
        return run::kExitSetup;
    return outcome.refused.empty() ? 0 : 1;
}

int cmd_discard(int argc, char** argv) {
    int status = 0;
    auto s = start("discard", argc, argv, status);
    if (!s) return status;
    const std::string& run_dir = s->run_dir;
    auto& record = s->record;
    auto journal = ended_journal(*s);
    // What was dropped, by the digest a diff of it showed (a DIR gone since
    // cannot be compared: the discard goes on, and the record says why).
    std::optional<std::string> digest;
    std::size_t count = 0;
    std::string diff_error;
    try {
        const auto changes = changes_of(workspace::upper_dir(run_dir), record);
        digest = workspace::diff_digest(changes);
        count = changes.size();
    } catch (const std::exception& e) {
        diff_error = e.what();
    }
    remove_tree_at(AT_FDCWD, workspace::upper_dir(run_dir));
    record.state = "discarded";
    workspace::write_review_record(run_dir, record);
    std::printf("discarded the changes of %s; %s untouched\n", terminal_text(run_dir).c_str(),
                terminal_text(record.workspace).c_str());
    const auto payload = workspace::discard_payload(record, digest, count, diff_error);
    return journalled(journal, journal::kTypeWorkspaceDiscard, payload, "discard") ? 0 : run::kExitSetup;
}

}  // namespace corral::cli
