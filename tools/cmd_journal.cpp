// tools/cmd_journal.cpp — `corral journal verify FILE|DIR [--key PUBKEY] [--run-json FILE] [--ledger FILE]`.
//
// Exit status (docs/journal.md "Verification"): 0 valid, 1 incomplete (every
// record good, no terminal record), 3 invalid (a bad record; run.json or the
// ledger disagrees; a log is not what its record says; the journal sits in
// another run's dir), 2 bad usage or a file that cannot be read.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
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

// The key a journal is checked with, where it was read and why that one.
struct ChosenKey {
    journal::PublicKey key;
    std::string path;
    std::string why;
    std::string named() const { return "key " + key.fingerprint() + " (" + path + ", " + why + ")"; }
};

ChosenKey read_key(const std::string& path, const std::string& why) {
    return ChosenKey{journal::PublicKey::from_file(path), path, why};
}

// The state dir a journal's path lies in, when that dir has a journal key:
// STATE/runs/ID/journal.jsonl (a run's; as given, so a --run-dir elsewhere
// named through its STATE/runs/ID link counts, or as its real path),
// STATE/journal/gateway and its files (a daemon's). nullopt for any other
// place (a --run-dir named by its own path, a copy).
std::optional<std::string> state_dir_of_journal(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path given = fs::absolute(path, ec).lexically_normal();
    const fs::path real = fs::canonical(path, ec);
    if (ec) return std::nullopt;
    for (fs::path at : {given, real}) {
        if (!fs::is_directory(at, ec)) at = at.parent_path();
        if (at.filename().empty()) at = at.parent_path();  // "DIR/" as given
        std::optional<fs::path> state;
        if (at.parent_path().filename() == "runs") state = at.parent_path().parent_path();
        if (at.filename() == "gateway" && at.parent_path().filename() == "journal") state = at.parent_path().parent_path();
        if (state && ::access(journal::key_files(state->string()).pub_path.c_str(), F_OK) == 0) return state->string();
    }
    return std::nullopt;
}

// Whose key checks the journal: --key; else the state dir's, which is
// --state-dir, or the one the journal lies in, or the default. *state is set
// to that state dir (where the journal's run dir is looked up).
ChosenKey choose_key(const JournalArgs& args, const std::string& journal_path, std::string* state) {
    if (args.state_dir) {
        *state = run::require_private_state_dir("--state-dir", *args.state_dir);
    } else if (auto own = state_dir_of_journal(journal_path)) {
        *state = run::require_private_state_dir("the journal's state dir", *own);
        if (!args.key) return read_key(journal::key_files(*state).pub_path, "the state dir the journal is in");
    } else {
        *state = run::default_state_dir();
    }
    if (args.key) return read_key(*args.key, "--key");
    if (args.state_dir) return read_key(journal::key_files(*state).pub_path, "--state-dir");
    *state = run::require_private_state_dir("--state-dir", *state);
    return read_key(journal::key_files(*state).pub_path, std::getenv("CORRAL_STATE_DIR")
                                                             ? "$CORRAL_STATE_DIR's; the journal is in no state dir"
                                                             : "the default state dir's; the journal is in no state dir");
}

// For a journal signed with another key: the other keys at hand (the state
// dirs the journal lies in, given and by default) that verify it, named.
std::string other_keys_that_verify(const ChosenKey& used, const std::string& journal_path,
                                   const std::function<bool(const journal::PublicKey&)>& verifies) {
    std::vector<std::pair<std::string, std::string>> candidates;  // path, why
    if (auto own = state_dir_of_journal(journal_path))
        candidates.push_back({journal::key_files(*own).pub_path, "the state dir the journal is in"});
    try {
        candidates.push_back({journal::key_files(run::default_state_dir()).pub_path, "the default state dir"});
    } catch (const std::exception&) {
    }
    std::string out;
    for (const auto& c : candidates) {
        try {
            ChosenKey other = read_key(c.first, c.second);
            if (other.key.fingerprint() != used.key.fingerprint() && verifies(other.key))
                return "; it verifies with " + other.named();
        } catch (const std::exception&) {
            // A key that cannot be read is no candidate.
        }
    }
    return "; no other key at hand verifies it (give the one it was signed with: --key)";
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

// The sentence an invalid verdict ends with: which key, and for a journal
// signed with another one, the key at hand that verifies it, if any.
std::string key_said(const journal::Verdict& v, const ChosenKey& used, const std::string& path,
                     const std::function<bool(const journal::PublicKey&)>& verifies) {
    return "; checked with " + used.named() + (v.other_key ? other_keys_that_verify(used, path, verifies) : "");
}

int verify(const std::string& file, const ChosenKey& chosen, std::optional<std::string> run_json_path,
           std::optional<std::string> ledger_path, const std::string& state_dir) {
    const journal::PublicKey& key = chosen.key;
    auto text = read_file("journal", file);
    if (!text) return journal_bad_usage(file + ": no such file");
    journal::Verdict v = journal::verify_journal(*text, key);
    std::string at = file + ": ";
    if (v.status == journal::Status::invalid) {
        auto verifies = [&](const journal::PublicKey& other) {
            return journal::verify_journal(*text, other).status != journal::Status::invalid;
        };
        std::printf("%sinvalid: line %llu: %s (%llu good records before it)%s\n", at.c_str(),
                    static_cast<unsigned long long>(v.line.value_or(0)), terminal_text(v.reason).c_str(),
                    static_cast<unsigned long long>(v.good_records),
                    terminal_text(key_said(v, chosen, file, verifies)).c_str());
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
        std::printf("%sincomplete: %llu good records, %s; %s%s\n%s", at.c_str(),
                    static_cast<unsigned long long>(v.good_records), terminal_text(chosen.named()).c_str(), terminal_text(v.reason).c_str(),
                    checked.c_str(), which.c_str());
        return kIncomplete;
    }
    // What was done with the run's results after it (a workspace's apply, discard).
    const std::string after = v.after_end == 0 ? "" : ", then " + std::to_string(v.after_end) + " record" +
                                                          (v.after_end == 1 ? "" : "s") + " of its workspace's review";
    std::printf("%svalid: %llu records, %s, ended by %s (outcome %s)%s%s\n%s", at.c_str(),
                static_cast<unsigned long long>(v.good_records), terminal_text(chosen.named()).c_str(),
                v.terminal["type"].get<std::string>().c_str(), v.terminal["payload"].value("outcome", "?").c_str(),
                after.c_str(), checked.c_str(), which.c_str());
    return kValid;
}

// A daemon's journal directory: every file verified, and the files one chain.
int verify_directory(const std::string& dir, const ChosenKey& chosen) {
    const journal::PublicKey& key = chosen.key;
    std::vector<journal::ChainFile> files;
    for (const auto& name : journal::day_journal_files(dir)) {
        const std::string path = dir + "/" + name;
        auto text = read_file("journal", path);
        if (!text) return journal_bad_usage(path + ": no such file");
        journal::ChainFile f{name, journal::verify_journal(*text, key), journal::last_whole_line(path).value_or("")};
        if (f.verdict.status == journal::Status::invalid) {
            auto verifies = [&](const journal::PublicKey& other) {
                return journal::verify_journal(*text, other).status != journal::Status::invalid;
            };
            f.verdict.reason += key_said(f.verdict, chosen, path, verifies);
        }
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
    std::printf("%s%s: %zu files (%s .. %s) in one chain, %llu records, %llu decisions, %s%s%s\n", at.c_str(),
                running ? "incomplete" : "valid", files.size(), files.front().name.c_str(), files.back().name.c_str(),
                static_cast<unsigned long long>(records), static_cast<unsigned long long>(decisions),
                terminal_text(chosen.named()).c_str(), running ? "; the newest has no terminal record yet (the daemon is running, or was lost)" : "",
                note.empty() ? "" : ("; " + note).c_str());
    return running ? kIncomplete : kValid;
}

// What FILE names: a journal file or a daemon's journal dir as given; a run
// dir, its journal.jsonl; a run's handle (no such path, no slash), that run's
// journal in the state dir.
std::string journal_of(const JournalArgs& args) {
    const std::string& given = *args.file;
    struct stat st {};
    if (::stat(given.c_str(), &st) == 0)
        return S_ISDIR(st.st_mode) && ::access((given + "/journal.jsonl").c_str(), F_OK) == 0 ? given + "/journal.jsonl"
                                                                                                 : given;
    if (given.find('/') != std::string::npos) return given;
    const std::string state = run::require_private_state_dir("--state-dir", args.state_dir.value_or(run::default_state_dir()));
    return run::find_run(state, given).run_dir + "/journal.jsonl";
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
    const auto& run_json = args.run_json;
    const auto& ledger = args.ledger;
    try {
        std::string file = journal_of(args);
        std::string state;
        const ChosenKey key = choose_key(args, file, &state);
        struct stat st {};
        if (::stat(file.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
            if (run_json || ledger) return journal_bad_usage("--run-json and --ledger are for one run's journal, not a directory");
            return verify_directory(file, key);
        }
        return verify(file, key, run_json, ledger, state);
    } catch (const std::exception& e) {
        // An unreadable key or file: not a verdict on the journal.
        return journal_bad_usage(e.what());
    }
}

}  // namespace corral::cli
