// The gateway daemon's journal (journal/day_journal.hpp): one file per UTC
// day and per start, each verifying on its own, chained to the one before
// by its admission; a day change rotates at the next decision; a file a
// killed daemon left open is ended "recovered" by the next start. The clock
// is the test's: no waiting for midnight.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/sha256.hpp"
#include "base/sys_error.hpp"
#include "journal/day_journal.hpp"
#include "journal/verify.hpp"
#include "tests/journal/journal_files.hpp"

using namespace corral::journal;
using nlohmann::json;
using corral::journal::test::read_file;
using corral::journal::test::TempDir;

namespace {

std::vector<json> records(const std::string& path) {
    std::vector<json> out;
    std::istringstream in(read_file(path));
    std::string line;
    while (std::getline(in, line)) out.push_back(json::parse(line));
    return out;
}

std::string last_line(const std::string& path) {
    std::istringstream in(read_file(path));
    std::string line, last;
    while (std::getline(in, line)) last = line;
    return last;
}

// 2026-12-03T23:59:59Z and one second later.
const auto kBeforeMidnight = std::chrono::system_clock::time_point(std::chrono::seconds(1796342399));
const auto kAfterMidnight = kBeforeMidnight + std::chrono::seconds(1);

}  // namespace

TEST_CASE("the daemon's journal: per day and per start, chained, rotated at a day change, recovered after a kill") {
    TempDir tmp;
    const std::string dir = tmp.path() + "/gateway";
    SigningKey key = SigningKey::generate();
    auto now = kBeforeMidnight;
    auto clock = [&] { return now; };
    std::vector<std::string> notes;

    // First start: one file, its admission durable before anything else.
    auto j = DayJournal::open(dir, key, {{"kind", "gateway_daemon"}}, notes, shared_writer_options(), clock);
    CHECK(notes.empty());
    CHECK(j->path() == dir + "/2026-12-03.1.jsonl");
    struct stat st {};
    REQUIRE(::stat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    auto sink = j->decision_sink();
    sink("{\"n\":1}\n{\"n\":2}\n");
    now = kAfterMidnight;  // the next decision lands in the next day's file
    sink("{\"n\":3}\n");
    CHECK(j->path() == dir + "/2026-12-04.1.jsonl");
    j->end("stopped", {{"exit_status", 0}});
    j.reset();

    auto day1 = records(dir + "/2026-12-03.1.jsonl");
    REQUIRE(day1.size() == 3);  // admission, one decision record for the batch of two, rotated
    CHECK(day1[0]["payload"]["journal"]["previous"].is_null());
    CHECK(day1[1]["payload"]["ledger_lines"] == json::array({"{\"n\":1}", "{\"n\":2}"}));
    CHECK(day1[2]["type"] == "terminal");
    CHECK(day1[2]["payload"]["outcome"] == "rotated");
    CHECK(day1[2]["payload"]["next"] == "2026-12-04.1.jsonl");
    auto day2 = records(dir + "/2026-12-04.1.jsonl");
    REQUIRE(day2.size() == 3);  // admission, decision 3, stopped
    CHECK(day2[0]["payload"]["kind"] == "gateway_daemon");
    CHECK(day2[0]["payload"]["journal"]["previous"] == "2026-12-03.1.jsonl");
    CHECK(day2[0]["payload"]["journal"]["previous_last_sha256"] ==
          corral::sha256_hex(last_line(dir + "/2026-12-03.1.jsonl")));
    CHECK(day2[2]["payload"]["outcome"] == "stopped");
    for (const char* f : {"/2026-12-03.1.jsonl", "/2026-12-04.1.jsonl"}) {
        Verdict v = verify_journal(read_file(dir + f), key.public_key());
        CHECK_MESSAGE(v.status == Status::valid, f << ": " << v.reason);
    }

    // Second start the same day, then "killed": no terminal record.
    auto k = DayJournal::open(dir, key, {{"kind", "gateway_daemon"}}, notes, shared_writer_options(), clock);
    CHECK(k->path() == dir + "/2026-12-04.2.jsonl");
    k->decision_sink()("{\"n\":4}\n");
    k.reset();  // the destructor writes no terminal record: as good as SIGKILL for the file
    CHECK(verify_journal(read_file(dir + "/2026-12-04.2.jsonl"), key.public_key()).status == Status::incomplete);

    // The next start ends it as lost, says so, and chains to it.
    auto l = DayJournal::open(dir, key, {{"kind", "gateway_daemon"}}, notes, shared_writer_options(), clock);
    REQUIRE(notes.size() == 1);
    CHECK(notes[0].find("2026-12-04.2.jsonl had no terminal record") != std::string::npos);
    Verdict lost = verify_journal(read_file(dir + "/2026-12-04.2.jsonl"), key.public_key());
    CHECK(lost.status == Status::valid);
    CHECK(lost.terminal["type"] == "recovered");
    CHECK(lost.terminal["payload"]["outcome"] == "lost");
    CHECK(lost.decisions.size() == 1);
    CHECK(l->path() == dir + "/2026-12-04.3.jsonl");
    CHECK(records(l->path())[0]["payload"]["journal"]["previous"] == "2026-12-04.2.jsonl");
    l->end("stopped");

    // The four files are one chain; each tampering with it is named.
    auto load = [&] {
        std::vector<ChainFile> files;
        for (const auto& name : day_journal_files(dir))
            files.push_back({name, verify_journal(read_file(dir + "/" + name), key.public_key()), last_line(dir + "/" + name)});
        return files;
    };
    auto files = load();
    REQUIRE(files.size() == 4);
    CHECK(files[0].name == "2026-12-03.1.jsonl");
    CHECK(files[3].name == "2026-12-04.3.jsonl");
    std::string note;
    CHECK(check_day_chain(files, &note) == std::nullopt);
    CHECK(note.empty());
    // The oldest file removed (retention): still one chain, with a note.
    auto without_oldest = std::vector<ChainFile>(files.begin() + 1, files.end());
    CHECK(check_day_chain(without_oldest, &note) == std::nullopt);
    CHECK(note == "2026-12-04.1.jsonl follows \"2026-12-03.1.jsonl\", which is not here (removed or archived)");
    // A file in the middle removed.
    auto gap = files;
    gap.erase(gap.begin() + 2);
    auto broken = check_day_chain(gap, &note);
    REQUIRE(broken.has_value());
    CHECK(*broken == "2026-12-04.3.jsonl: its admission names \"2026-12-04.2.jsonl\" as the file before it, not "
                     "\"2026-12-04.1.jsonl\" (a file was removed, added or renamed between them)");
    // A file whose last line is not the one its successor saw (replaced by
    // another file that verifies on its own).
    auto swapped = files;
    swapped[1].last_line += " ";
    broken = check_day_chain(swapped, &note);
    REQUIRE(broken.has_value());
    CHECK(broken->find("2026-12-04.2.jsonl: its admission's previous_last_sha256") == 0);
    CHECK(broken->find("2026-12-04.1.jsonl was changed or cut after 2026-12-04.2.jsonl began") != std::string::npos);
    // A file without its terminal record followed by another one.
    auto open_middle = files;
    open_middle[1].verdict.status = Status::incomplete;
    broken = check_day_chain(open_middle, &note);
    REQUIRE(broken.has_value());
    CHECK(broken->find("2026-12-04.1.jsonl: has no terminal record, yet 2026-12-04.2.jsonl follows it") == 0);
    // An invalid file is named with its line.
    { std::ofstream(dir + "/2026-12-04.1.jsonl", std::ios::app) << "{}\n"; }
    broken = check_day_chain(load(), &note);
    REQUIRE(broken.has_value());
    CHECK(broken->find("2026-12-04.1.jsonl: invalid: line 4") == 0);
}

TEST_CASE("the daemon's journal directory must be the daemon's own, 0700") {
    TempDir tmp;
    const std::string dir = tmp.path() + "/open";
    REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
    std::vector<std::string> notes;
    CHECK_THROWS_WITH(DayJournal::open(dir, SigningKey::generate(), json::object(), notes),
                      doctest::Contains("must be a directory of the effective user, mode 0700"));
}

TEST_CASE("a shared journal past its bound refuses the next batch of decisions (the ledger then refuses requests)") {
    TempDir tmp;
    SigningKey key = SigningKey::generate();
    WriterOptions opts = shared_writer_options();
    opts.max_bytes = 4096;
    opts.terminal_reserve = 1024;
    SharedJournal j(JournalWriter::create(tmp.path() + "/j", key, opts));
    j.append(kTypeAdmission, {{"id", "r"}}, Commit::durable);
    auto sink = j.decision_sink();
    bool refused = false;
    for (int i = 0; i < 100 && !refused; ++i) {
        try {
            sink("{\"n\":" + std::to_string(i) + "}\n");
        } catch (const corral::UsageError& e) {
            refused = true;
            CHECK(std::string(e.what()).find("journal full") != std::string::npos);
        }
    }
    CHECK(refused);
    // Closed for good: every later batch is refused the same way.
    CHECK_THROWS_WITH(sink("{\"n\":-1}\n"), doctest::Contains("journal full"));
    j.stop_group_commits();
    Verdict v = verify_journal(read_file(tmp.path() + "/j"), key.public_key());
    CHECK(v.status == Status::incomplete);  // every record written is good; none after the refusal
}

namespace {

// Whether `done` held within `bound` (checked every 5 ms): a liveness
// check with a generous bound, not a measurement.
template <class Done>
bool within(std::chrono::milliseconds bound, Done done) {
    const auto end = std::chrono::steady_clock::now() + bound;
    while (!done()) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
}

}  // namespace

TEST_CASE("a shared journal's group commit syncs what comes, also after it slept with nothing to sync") {
    TempDir tmp;
    SigningKey key = SigningKey::generate();
    SharedJournal j(JournalWriter::create(tmp.path() + "/j", key, shared_writer_options()));
    j.append(kTypeAdmission, {{"id", "r"}}, Commit::durable);
    j.append(kTypeStarted, {{"uid", 1}}, Commit::group);  // starts the group-commit thread
    CHECK(within(std::chrono::seconds(5), [&] { return j.records_waiting_for_sync() == 0; }));
    // Idle: the thread sleeps; a decision wakes it, and is synced.
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
    auto sink = j.decision_sink();
    sink("{\"n\":1}\n{\"n\":2}\n");
    CHECK(j.records_waiting_for_sync() == 1);
    CHECK(within(std::chrono::seconds(5), [&] { return j.records_waiting_for_sync() == 0; }));
    sink("{\"n\":3}\n");
    j.stop_group_commits();  // syncs what waits as it ends
    CHECK(j.records_waiting_for_sync() == 0);
    CHECK(verify_journal(read_file(tmp.path() + "/j"), key.public_key()).status == Status::incomplete);
}
