// tools/cmd_journal.cpp — `corral journal verify FILE|DIR [--key PUBKEY] [--run-json FILE] [--ledger FILE]`.
//
// Exit status (docs/journal.md "Verification"): 0 valid, 1 incomplete (every
// record good, no terminal record), 3 invalid (a bad record; run.json or the
// ledger disagrees; a log is not what its record says; the journal sits in
// another run's dir), 2 bad usage or a file that cannot be read.
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/regular_file.hpp"
#include "base/sys_error.hpp"
#include "base/terminal_text.hpp"
#include "journal/day_journal.hpp"
#include "journal/key.hpp"
#include "journal/verify.hpp"
#include "run/request.hpp"
#include "run/run_index.hpp"
#include "run/state_dir.hpp"
#include "cli/action_front.hpp"
#include "cli/admin_args.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

namespace {

constexpr int kValid = 0, kIncomplete = 1, kUsage = 2, kInvalid = 3;

int journal_bad_usage(const std::string& problem) {
    std::fprintf(stderr, "corral journal: %s (see corral journal --help)\n", problem.c_str());
    return kUsage;
}

std::optional<std::string> read_file(const std::string& what, const std::string& path) {
    // The bound is the journal's own, with room for a terminal record's line.
    return read_regular_file(RegularFileRead{.what = what, .path = path, .max_bytes = journal::kDefaultMaxBytes + 4096});
}

// "DIR/" of "DIR/FILE", "" for a bare FILE.
std::string dir_of(const std::string& file) {
    auto slash = file.rfind('/');
    return slash == std::string::npos ? std::string() : file.substr(0, slash + 1);
}

// Where the journal sits, held against the run it names: the state dir
// gives its dir to that run (*where says so), to another run (the refusal,
// returned: a journal copied or moved there, with its run.json and ledger,
// agrees with itself, not with the place), or to none (a copy kept elsewhere:
// said in *where, not refused).
std::optional<std::string> check_place(const journal::RunIdentity& who, const std::string& file,
                                       const std::string& state_dir, std::string* where) {
    std::string dir = dir_of(file).empty() ? "." : dir_of(file);
    if (dir.size() > 1) dir.pop_back();  // "DIR/" -> "DIR", "/" stays
    const std::string runs = state_dir + "/runs";
    std::optional<std::string> owner;
    try {
        owner = run::run_id_of_dir(state_dir, dir, who.id);
    } catch (const std::exception& e) {
        *where = "; where it is was not checked: " + std::string(e.what());
        return std::nullopt;
    }
    if (!owner) {
        *where = "; " + dir + " is no run's dir in " + runs + ", so where it is was not checked";
        return std::nullopt;
    }
    if (*owner == who.id) {
        *where = ", in its run dir (" + runs + "/" + who.id + ")";
        return std::nullopt;
    }
    return "the journal is run " + who.id + "'s (admitted " + who.admitted.value_or("never") + "), but " + dir +
           " is the run dir of run " + *owner + " (" + runs + "/" + *owner +
           "): the journal was copied or moved from another run's dir";
}

// run.json (beside the journal unless given) against the admission and
// terminal records; -1 when it agrees or is not there, else the exit status.
int check_run_json(const journal::Verdict& v, const std::string& file, std::optional<std::string> run_json_path,
                   std::string* checked) {
    const std::string at = file + ": ";
    bool explicit_run_json = run_json_path.has_value();
    if (!run_json_path) run_json_path = dir_of(file) + "run.json";
    auto run_text = read_file("run.json", *run_json_path);
    if (!run_text && explicit_run_json) return journal_bad_usage(*run_json_path + ": no such file");
    if (!run_text) return -1;
    nlohmann::json run;
    try {
        run = nlohmann::json::parse(*run_text);
    } catch (const nlohmann::json::exception& e) {
        std::printf("%sinvalid: %s is not JSON (%s)\n", at.c_str(), run_json_path->c_str(), e.what());
        return kInvalid;
    }
    auto diff = journal::compare_run_json(v, run);
    if (!diff.empty()) {
        for (const auto& d : diff) std::printf("%sinvalid: %s: %s\n", at.c_str(), run_json_path->c_str(), terminal_text(d).c_str());
        return kInvalid;
    }
    *checked += ", " + *run_json_path + " agrees";
    return -1;
}

// The ledger (beside the journal when the run's gateway journalled its
// decisions there, or given): the decision records' lines, line for line.
// -1 when it agrees or need not be there, else the exit status.
int check_ledger(const journal::Verdict& v, const std::string& file, std::optional<std::string> ledger_path,
                 std::string* checked) {
    const std::string at = file + ": ";
    const bool decisions_here = v.first.is_object() && v.first["payload"].value("decisions", "") == "this_journal";
    if (!ledger_path && !decisions_here) return -1;
    bool explicit_ledger = ledger_path.has_value();
    if (!ledger_path) ledger_path = dir_of(file) + "ledger.jsonl";
    auto ledger_text = read_file("ledger", *ledger_path);
    if (!ledger_text && explicit_ledger) return journal_bad_usage(*ledger_path + ": no such file");
    if (!ledger_text && !v.decisions.empty()) {
        std::printf("%sinvalid: %s: missing, and the journal has %zu decisions\n", at.c_str(), ledger_path->c_str(),
                    v.decisions.size());
        return kInvalid;
    }
    if (!ledger_text) return -1;
    if (auto diff = journal::compare_ledger(v, *ledger_text)) {
        std::printf("%sinvalid: %s: %s\n", at.c_str(), ledger_path->c_str(), terminal_text(diff->problem).c_str());
        return kInvalid;
    }
    *checked += ", " + *ledger_path + " agrees (" + std::to_string(v.decisions.size()) + " decisions)";
    return -1;
}

int verify(const std::string& file, const std::string& key_path, std::optional<std::string> run_json_path,
           std::optional<std::string> ledger_path, const std::string& state_dir) {
    journal::PublicKey key = journal::PublicKey::from_file(key_path);
    auto text = read_file("journal", file);
    if (!text) return journal_bad_usage(file + ": no such file");
    journal::Verdict v = journal::verify_journal(*text, key);
    std::string at = file + ": ";
    if (v.status == journal::Status::invalid) {
        std::printf("%sinvalid: line %llu: %s (%llu good records before it)\n", at.c_str(),
                    static_cast<unsigned long long>(v.line.value_or(0)), terminal_text(v.reason).c_str(),
                    static_cast<unsigned long long>(v.good_records));
        return kInvalid;
    }
    // Which run first: a journal in another run's dir is refused as that,
    // not by whichever of its files happens to differ.
    const std::optional<journal::RunIdentity> who = journal::run_identity(v);
    std::string where;
    if (who) {
        if (auto wrong = check_place(*who, file, state_dir, &where)) {
            std::printf("%sinvalid: %s\n", at.c_str(), wrong->c_str());
            return kInvalid;
        }
    }
    std::string checked;
    if (int rc = check_run_json(v, file, run_json_path, &checked); rc >= 0) return rc;
    if (int rc = check_ledger(v, file, ledger_path, &checked); rc >= 0) return rc;
    // Every file whose SHA-256 a record holds (the logs) must still be it.
    std::size_t files = 0;
    if (auto diff = journal::check_covered_files(v.files, dir_of(file), &files)) {
        std::printf("%sinvalid: %s\n", at.c_str(), terminal_text(*diff).c_str());
        return kInvalid;
    }
    const std::string which = !who ? ""
        : at + "run " + who->id + ", " + (who->admitted ? "admitted " + *who->admitted : std::string("not admitted (refused before its box)")) +
          where + (files ? "; " + std::to_string(files) + " logs as their records say" : "") + "\n";
    if (v.status == journal::Status::incomplete) {
        std::printf("%sincomplete: %llu good records, key %s; %s%s\n%s", at.c_str(),
                    static_cast<unsigned long long>(v.good_records), key.fingerprint().c_str(), terminal_text(v.reason).c_str(),
                    checked.c_str(), which.c_str());
        return kIncomplete;
    }
    std::printf("%svalid: %llu records, key %s, ended by %s (outcome %s)%s\n%s", at.c_str(),
                static_cast<unsigned long long>(v.good_records), key.fingerprint().c_str(),
                v.terminal["type"].get<std::string>().c_str(), v.terminal["payload"].value("outcome", "?").c_str(),
                checked.c_str(), which.c_str());
    return kValid;
}

// A daemon's journal directory: every file verified, and the files one chain.
int verify_directory(const std::string& dir, const std::string& key_path) {
    journal::PublicKey key = journal::PublicKey::from_file(key_path);
    std::vector<journal::ChainFile> files;
    for (const auto& name : journal::day_journal_files(dir)) {
        const std::string path = dir + "/" + name;
        auto text = read_file("journal", path);
        if (!text) return journal_bad_usage(path + ": no such file");
        journal::ChainFile f{name, journal::verify_journal(*text, key), journal::last_whole_line(path).value_or("")};
        files.push_back(std::move(f));
    }
    const std::string at = dir + ": ";
    if (files.empty()) {
        std::printf("%sincomplete: no YYYY-MM-DD.N.jsonl files\n", at.c_str());
        return kIncomplete;
    }
    std::string note;
    if (auto broken = journal::check_day_chain(files, &note)) {
        std::printf("%sinvalid: %s\n", at.c_str(), broken->c_str());
        return kInvalid;
    }
    std::uint64_t records = 0, decisions = 0;
    for (const auto& f : files) {
        records += f.verdict.good_records;
        decisions += f.verdict.decisions.size();
    }
    const bool running = files.back().verdict.status == journal::Status::incomplete;
    std::printf("%s%s: %zu files (%s .. %s) in one chain, %llu records, %llu decisions, key %s%s%s\n", at.c_str(),
                running ? "incomplete" : "valid", files.size(), files.front().name.c_str(), files.back().name.c_str(),
                static_cast<unsigned long long>(records), static_cast<unsigned long long>(decisions),
                key.fingerprint().c_str(), running ? "; the newest has no terminal record yet (the daemon is running, or was lost)" : "",
                note.empty() ? "" : ("; " + note).c_str());
    return running ? kIncomplete : kValid;
}

}  // namespace

int cmd_journal(int argc, char** argv) {
    ActionFront front("journal", journal_help());
    if (auto exit = front.take_action(argc, argv, {"verify"})) return *exit;
    JournalArgs args;
    try {
        args = parse_journal_args(argc - 1, argv + 1);
    } catch (const UsageError& e) {
        return front.bad_usage(e.what());
    }
    if (args.help) return front.help();
    const auto& file = args.file;
    const auto& key = args.key;
    const auto& run_json = args.run_json;
    const auto& ledger = args.ledger;
    const auto& state_dir = args.state_dir;
    const std::string state = state_dir ? *state_dir : run::default_state_dir();
    std::string key_path;
    try {
        key_path = key ? *key : journal::key_files(run::require_private_state_dir("--state-dir", state)).pub_path;
        struct stat st {};
        if (::stat(file->c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
            if (run_json || ledger) return journal_bad_usage("--run-json and --ledger are for one run's journal, not a directory");
            return verify_directory(*file, key_path);
        }
        return verify(*file, key_path, run_json, ledger, state);
    } catch (const std::exception& e) {
        // An unreadable key or file: not a verdict on the journal.
        return journal_bad_usage(e.what());
    }
}

}  // namespace corral::cli
