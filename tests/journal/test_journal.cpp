// The writer and the verifier: a journal as corral run writes it verifies;
// each tampering of issue 16 is found with the bad record named; a journal
// without its terminal record is incomplete until a recovered record ends it;
// the writer fails closed at its bound and on a full disk (/dev/full).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/fd.hpp"
#include "base/sha256.hpp"
#include "base/sys_error.hpp"
#include "journal/journal.hpp"
#include "journal/verify.hpp"
#include "tests/journal/journal_files.hpp"

using namespace corral::journal;
using corral::Fd;
using nlohmann::json;
using corral::journal::test::read_file;
using corral::journal::test::TempDir;

namespace {
// compare_ledger's finding as text, "" when the ledger agrees.
std::string ledger_text_diff(const corral::journal::Verdict& v, std::string_view ledger) {
    auto diff = corral::journal::compare_ledger(v, ledger);
    return diff ? diff->problem : std::string();
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t eol = text.find('\n', pos);
        out.push_back(text.substr(pos, eol - pos));
        pos = eol + 1;
    }
    return out;
}

std::string join(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
}

// A decision record's payload of one ledger line.
json decision(const std::string& line) { return {{"ledger_lines", json::array({line})}}; }

// The two decisions' ledger lines of write_run_journal.
const std::vector<std::string> kLedgerLines = {
    R"({"time":"2026-12-03T12:00:00.000Z","identity":"w/r1","host":"example.com","port":443,"decision":"allow"})",
    R"({"time":"2026-12-03T12:00:01.000Z","identity":"w/r1","host":"evil.example","port":443,"decision":"refuse"})"};

// admission, two decisions, terminal: the shape of a run's journal.
std::string write_run_journal(const std::string& path, const SigningKey& key) {
    JournalWriter w = JournalWriter::create(path, key);
    w.append(kTypeAdmission,
             {{"id", "r1"},
              {"argv", {"/bin/true"}},
              {"grants", {{{"host", "example.com"}, {"port", 443}}}},
              {"limits", {{"memory_bytes", 268435456}}}},
             Commit::durable);
    w.append(kTypeDecision, decision(kLedgerLines[0]), Commit::group);
    w.append(kTypeDecision, decision(kLedgerLines[1]), Commit::group);
    w.append(kTypeTerminal, {{"id", "r1"}, {"exit_code", 0}, {"outcome", "ok"}, {"status", 0}, {"teardown", "clean"}},
             Commit::durable);
    return read_file(path);
}

}  // namespace

TEST_CASE("a journal as written verifies, is 0600, and each line is canonical and chained") {
    TempDir dir;
    SigningKey key = SigningKey::generate();
    std::string text = write_run_journal(dir.path() + "/journal.jsonl", key);
    struct stat st {};
    REQUIRE(::stat((dir.path() + "/journal.jsonl").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    Verdict v = verify_journal(text, key.public_key());
    CHECK(status_name(v.status) == "valid");
    CHECK(v.good_records == 4);
    CHECK(v.terminal["payload"]["outcome"] == "ok");
    CHECK(v.first["type"] == "admission");
    auto lines = lines_of(text);
    REQUIRE(lines.size() == 4);
    CHECK(lines[0].find("\"prev\":\"0000000000000000000000000000000000000000000000000000000000000000\"") !=
          std::string::npos);
    CHECK(lines[0].rfind("{\"payload\":", 0) == 0);  // keys in byte order: payload, prev, seq, sig, time, type
}

TEST_CASE("each tampering is invalid, with the first bad record named") {
    TempDir dir;
    SigningKey key = SigningKey::generate();
    auto lines = lines_of(write_run_journal(dir.path() + "/journal.jsonl", key));
    auto expect_invalid = [&](const std::string& text, std::uint64_t line, const char* why) {
        Verdict v = verify_journal(text, key.public_key());
        CHECK(v.status == Status::invalid);
        CHECK(v.line == line);
        CHECK_MESSAGE(v.reason.find(why) != std::string::npos, v.reason);
    };

    SUBCASE("a flipped byte in a payload") {
        auto t = lines;
        auto at = t[1].find("example.com");
        t[1][at] = 'E';
        expect_invalid(join(t), 2, "the signature does not verify");
        // Told apart from another key: the record before it verifies.
        expect_invalid(join(t), 2, "record 2 was changed after it was signed, or written without this key (records 1 to 1 verify");
        CHECK_FALSE(verify_journal(join(t), key.public_key()).other_key);
    }
    SUBCASE("a flipped byte in the first record: the later ones verify, so it was changed") {
        auto t = lines;
        auto at = t[0].find("/bin/true");
        t[0][at + 1] = 'B';
        expect_invalid(join(t), 1, "record 1 was changed after it was signed (3 later records verify with this key)");
        CHECK_FALSE(verify_journal(join(t), key.public_key()).other_key);
    }
    SUBCASE("a changed number formatting") {
        auto t = lines;
        auto at = t[0].find("\"port\":443");
        t[0].replace(at, 10, "\"port\":443.0");
        expect_invalid(join(t), 1, "is a floating-point number");
        t = lines;
        t[0].replace(at, 10, "\"port\":4.43e2");
        expect_invalid(join(t), 1, "is a floating-point number");
        t = lines;
        t[0].replace(at, 10, "\"port\":0443");
        expect_invalid(join(t), 1, "not JSON");
        t = lines;
        t[0].replace(at, 10, "\"port\": 443");
        expect_invalid(join(t), 1, "not in canonical form");
    }
    SUBCASE("a deleted line") {
        auto t = lines;
        t.erase(t.begin() + 1);
        expect_invalid(join(t), 2, "seq is 3, expected 2");
    }
    SUBCASE("a duplicated line") {
        auto t = lines;
        t.insert(t.begin() + 2, t[1]);
        expect_invalid(join(t), 3, "seq is 2, expected 3");
    }
    SUBCASE("reordered lines") {
        auto t = lines;
        std::swap(t[1], t[2]);
        expect_invalid(join(t), 2, "seq is 3, expected 2");
    }
    SUBCASE("a truncated tail: a torn last line") {
        std::string text = join(lines);
        expect_invalid(text.substr(0, text.size() - 20), 4, "no newline");
    }
    SUBCASE("a record appended after the terminal one, validly signed") {
        TempDir other;
        std::string path = other.path() + "/j";
        {
            std::ofstream(path) << join(lines);
        }
        // The writer refuses; a forger with the key writes it by hand.
        CHECK_THROWS_WITH(JournalWriter::reopen(path, key), doctest::Contains("already has its terminal record"));
        JournalPosition at{5, corral::sha256_hex(lines[3]), 0};
        Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND));
        JournalWriter forger(std::move(fd), path, key, at, WriterOptions{});
        forger.append(kTypeDecision, decision(kLedgerLines[0]), Commit::durable);
        expect_invalid(read_file(path), 5, "after the terminal record");
    }
    SUBCASE("an appended forged record, signed with another key and chained correctly") {
        auto t = lines;
        t.pop_back();  // in place of the terminal record
        TempDir other;
        std::string path = other.path() + "/j";
        {
            std::ofstream(path) << join(t);
        }
        JournalPosition at{4, corral::sha256_hex(t[2]), 0};
        Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND));
        JournalWriter forger(std::move(fd), path, SigningKey::generate(), at, WriterOptions{});
        forger.append(kTypeTerminal, {{"outcome", "ok"}}, Commit::durable);
        expect_invalid(read_file(path), 4, "the signature does not verify");
        expect_invalid(read_file(path), 4, "or written without this key (records 1 to 3 verify with it)");
    }
    SUBCASE("a whole journal signed with another key") {
        TempDir other;
        std::string text = write_run_journal(other.path() + "/j", SigningKey::generate());
        expect_invalid(text, 1, "the journal was signed with another key (none of its 4 records verifies with this one, "
                                "and they are well-formed and chained)");
        CHECK(verify_journal(text, key.public_key()).other_key);
        // Another key's journal changed too: changed is what is said.
        auto t = lines_of(text);
        t[2] = lines[2];
        expect_invalid(join(t), 1, "record 1 was changed after it was signed");
        t = lines_of(text);
        t.erase(t.begin() + 1);
        expect_invalid(join(t), 1, "the journal was changed (no record verifies with this key, and line 2 is bad apart "
                                   "from its signature: record 2: seq is 3, expected 2");
        CHECK_FALSE(verify_journal(join(t), key.public_key()).other_key);
    }
    SUBCASE("a changed prev") {
        auto t = lines;
        auto at = t[2].find("\"prev\":\"") + 8;
        t[2][at] = t[2][at] == 'a' ? 'b' : 'a';
        expect_invalid(join(t), 3, "the chain is broken");
    }
}

TEST_CASE("a truncated tail at a line boundary is incomplete, and a recovered record ends it as lost") {
    TempDir dir;
    SigningKey key = SigningKey::generate();
    auto lines = lines_of(write_run_journal(dir.path() + "/journal.jsonl", key));
    lines.pop_back();
    std::string path = dir.path() + "/cut.jsonl";
    {
        std::ofstream(path) << join(lines);
    }
    Verdict v = verify_journal(read_file(path), key.public_key());
    CHECK(v.status == Status::incomplete);
    CHECK(v.good_records == 3);
    CHECK(v.reason.find("no terminal record after record 3") != std::string::npos);

    CHECK(append_recovered(path, key, "supervisor lost"));
    v = verify_journal(read_file(path), key.public_key());
    CHECK(v.status == Status::valid);
    CHECK(v.terminal["type"] == "recovered");
    CHECK(v.terminal["payload"]["outcome"] == "lost");
    CHECK(v.terminal["payload"]["reason"] == "supervisor lost");
    CHECK_FALSE(append_recovered(path, key, "supervisor lost"));  // already ended: nothing added
    CHECK(verify_journal(read_file(path), key.public_key()).good_records == 4);
    // A lost run's run.json ("running", outcome null) agrees; one that claims success never does.
    CHECK(compare_run_json(v, json{{"id", "r1"}, {"argv", {"/bin/true"}}, {"outcome", nullptr}}).empty());
    // A recovered run never agrees with a run.json that claims success.
    auto diff = compare_run_json(v, json{{"id", "r1"}, {"argv", {"/bin/true"}}, {"outcome", "ok"}});
    REQUIRE(diff.size() == 1);
    CHECK(diff[0].find("lost") != std::string::npos);
}

TEST_CASE("after the terminal record: a workspace's apply and discard records, on an ended journal only, and nothing else") {
    TempDir dir;
    SigningKey key = SigningKey::generate();
    const std::string path = dir.path() + "/journal.jsonl";
    auto lines = lines_of(write_run_journal(path, key));
    {
        JournalWriter w = JournalWriter::reopen_ended(path, key);
        w.append(kTypeWorkspaceApply, {{"applied", {"a.txt"}}, {"diff_digest", "sha256:00"}, {"by", {{"uid", 0}}}},
                 Commit::durable);
        // The run has ended: the writer takes no other record, terminal or not.
        CHECK_THROWS_WITH(w.append(kTypeDecision, decision(kLedgerLines[0]), Commit::durable),
                          doctest::Contains("no decision record may follow it"));
        CHECK_THROWS_WITH(w.append(kTypeTerminal, {{"id", "r1"}}, Commit::durable),
                          doctest::Contains("no terminal record may follow it"));
        w.append(kTypeWorkspaceDiscard, {{"diff_digest", nullptr}, {"changes", 0}}, Commit::durable);
    }
    Verdict v = verify_journal(read_file(path), key.public_key());
    CHECK(v.status == Status::valid);
    CHECK(v.good_records == 6);
    CHECK(v.after_end == 2);
    CHECK(v.terminal["type"] == "terminal");  // what run.json is compared with stays the run's end
    CHECK(compare_run_json(v, json{{"id", "r1"}, {"argv", {"/bin/true"}}, {"exit_code", 0}, {"outcome", "ok"},
                                   {"status", 0}})
              .empty());
    // Any other type after the terminal record, validly signed and chained, is still invalid.
    {
        Verdict at = verify_journal(read_file(path), key.public_key());
        Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND));
        JournalWriter forger(std::move(fd), path, key, at.end, WriterOptions{});
        forger.append(kTypeDecision, decision(kLedgerLines[0]), Commit::durable);
    }
    v = verify_journal(read_file(path), key.public_key());
    CHECK(v.status == Status::invalid);
    CHECK(v.line == 7);
    CHECK(v.reason.find("after the terminal record") != std::string::npos);
    // Not on a journal that has not ended (a run still going), nor an invalid one.
    lines.pop_back();
    const std::string running = dir.path() + "/running.jsonl";
    {
        std::ofstream(running) << join(lines);
    }
    CHECK_THROWS_WITH(JournalWriter::reopen_ended(running, key), doctest::Contains("no terminal record yet"));
    CHECK_THROWS_WITH(JournalWriter::reopen_ended(path, key), doctest::Contains("not appending to an invalid journal"));
}

TEST_CASE("a torn last line (a writer killed inside its write): recovered cuts it and keeps its digest") {
    TempDir dir;
    SigningKey key = SigningKey::generate();
    const std::string path = dir.path() + "/journal.jsonl";
    auto lines = lines_of(write_run_journal(path, key));
    const std::string torn = lines[2].substr(0, 40);
    { std::ofstream(path, std::ios::binary | std::ios::trunc) << join({lines[0], lines[1]}) << torn; }
    CHECK(verify_journal(read_file(path), key.public_key()).status == Status::invalid);
    REQUIRE(append_recovered(path, key, "supervisor lost", {{"id", "r1"}}));
    Verdict v = verify_journal(read_file(path), key.public_key());
    REQUIRE(v.status == Status::valid);
    CHECK(v.good_records == 3);
    CHECK(v.terminal["type"] == "recovered");
    CHECK(v.terminal["payload"]["outcome"] == "lost");
    CHECK(v.terminal["payload"]["torn_tail"]["bytes"] == 40);
    CHECK(v.terminal["payload"]["torn_tail"]["sha256"] == corral::sha256_hex(torn));

    // A bad line that is not the last is not "torn": nothing is cut.
    auto edited = lines;
    edited[1][edited[1].find("ledger_lines") + 20] ^= 1;
    { std::ofstream(path, std::ios::binary | std::ios::trunc) << join({edited[0], edited[1]}) << torn; }
    CHECK_THROWS_WITH(append_recovered(path, key, "supervisor lost"), doctest::Contains("not appending a recovered record"));
    CHECK(read_file(path) == join({edited[0], edited[1]}) + torn);
}

TEST_CASE("the ledger is the journal's decisions, line for line: each edit of it is named") {
    TempDir dir;
    SigningKey key = SigningKey::generate();
    std::string text = write_run_journal(dir.path() + "/journal.jsonl", key);
    Verdict v = verify_journal(text, key.public_key());
    REQUIRE(v.status == Status::valid);
    REQUIRE(v.decisions.size() == 2);
    CHECK(v.decisions[0].seq == 2);
    CHECK(v.decisions[1].ledger_line == kLedgerLines[1]);
    CHECK_FALSE(compare_ledger(v, join(kLedgerLines)).has_value());
    auto expect = [&](const std::vector<std::string>& ledger, const char* why) {
        auto diff = compare_ledger(v, join(ledger));
        REQUIRE_MESSAGE(diff.has_value(), "not found: " << why);
        CHECK_MESSAGE(diff->problem.find(why) != std::string::npos, diff->problem);
    };
    auto edited = kLedgerLines;
    edited[1].replace(edited[1].find("refuse"), 6, "allow");
    expect(edited, "ledger line 2 differs from record 3 (decision 2)");
    expect({kLedgerLines[1], kLedgerLines[0]}, "ledger line 1 differs from record 2");
    expect({kLedgerLines[1]}, "ledger line 1 differs from record 2");
    expect({kLedgerLines[0]}, "record 3 (decision 2) is missing from the ledger");
    expect({kLedgerLines[0], kLedgerLines[1], kLedgerLines[1]}, "ledger line 3 has no decision record");
    CHECK(ledger_text_diff(v, kLedgerLines[0] + "\n" + kLedgerLines[1]).find("no newline") != std::string::npos);
    // A run still going may have journalled a decision its ledger file has
    // not got yet (the journal is written first), never the other way round.
    auto lines = lines_of(text);
    Verdict going = verify_journal(join({lines[0], lines[1], lines[2]}), key.public_key());
    REQUIRE(going.status == Status::incomplete);
    CHECK_FALSE(compare_ledger(going, join({kLedgerLines[0]})).has_value());
    CHECK(compare_ledger(going, join({kLedgerLines[0], kLedgerLines[1], kLedgerLines[1]})).has_value());
}

TEST_CASE("one decision record may hold a batch of ledger lines; the ledger compares line by line across records") {
    TempDir dir;
    SigningKey key = SigningKey::generate();
    JournalWriter w = JournalWriter::create(dir.path() + "/j", key);
    w.append(kTypeAdmission, {{"id", "r"}}, Commit::durable);
    w.append(kTypeDecision, {{"ledger_lines", json::array({kLedgerLines[0], kLedgerLines[1]})}}, Commit::group);
    w.append(kTypeDecision, decision(kLedgerLines[0]), Commit::group);
    w.append(kTypeTerminal, {{"id", "r"}}, Commit::durable);
    Verdict v = verify_journal(read_file(dir.path() + "/j"), key.public_key());
    REQUIRE(v.status == Status::valid);
    REQUIRE(v.decisions.size() == 3);
    CHECK(v.decisions[1].seq == 2);
    CHECK(v.decisions[2].seq == 3);
    CHECK_FALSE(compare_ledger(v, join({kLedgerLines[0], kLedgerLines[1], kLedgerLines[0]})).has_value());
    CHECK(ledger_text_diff(v, join({kLedgerLines[0], kLedgerLines[1], kLedgerLines[1]})).find(
              "ledger line 3 differs from record 3 (decision 3)") != std::string::npos);
}

TEST_CASE("a decision record without its ledger lines as one-line strings is invalid") {
    TempDir dir;
    SigningKey key = SigningKey::generate();
    JournalWriter w = JournalWriter::create(dir.path() + "/j", key);
    w.append(kTypeAdmission, {{"id", "r"}}, Commit::durable);
    w.append(kTypeDecision, {{"ledger_lines", json::array({7})}}, Commit::group);
    Verdict v = verify_journal(read_file(dir.path() + "/j"), key.public_key());
    CHECK(v.status == Status::invalid);
    CHECK(v.line == 2);
    CHECK(v.reason.find("a decision without ledger_lines") != std::string::npos);
}

TEST_CASE("run.json edited after the fact disagrees with the journal") {
    TempDir dir;
    SigningKey key = SigningKey::generate();
    Verdict v = verify_journal(write_run_journal(dir.path() + "/journal.jsonl", key), key.public_key());
    json run = {{"id", "r1"}, {"argv", {"/bin/true"}}, {"exit_code", 0}, {"outcome", "ok"}, {"status", 0},
                {"teardown", {{"verdict", "clean"}}}};
    CHECK(compare_run_json(v, run).empty());
    run["exit_code"] = 1;
    run["teardown"]["verdict"] = "failed";
    auto diff = compare_run_json(v, run);
    REQUIRE(diff.size() == 2);
    CHECK(diff[0] == "run.json \"exit_code\" is 1; record 4 (terminal) says 0");
    CHECK(diff[1].find("teardown verdict is \"failed\"") != std::string::npos);
}

TEST_CASE("the writer refuses floats and keeps nothing of the refused record") {
    TempDir dir;
    SigningKey key = SigningKey::generate();
    JournalWriter w = JournalWriter::create(dir.path() + "/j", key);
    CHECK_THROWS_AS(w.append("decision", {{"cost", 0.5}}, Commit::durable), corral::UsageError);
    CHECK(w.size() == 0);
}

TEST_CASE("past its bound the journal refuses records but keeps room for the terminal one, then stays closed") {
    TempDir dir;
    SigningKey key = SigningKey::generate();
    WriterOptions small;
    small.max_bytes = 4096;
    small.terminal_reserve = 1024;
    JournalWriter w = JournalWriter::create(dir.path() + "/j", key, small);
    std::string what;
    try {
        for (int i = 0; i < 100; ++i) w.append(kTypeDecision, decision(std::to_string(i)), Commit::group);
    } catch (const corral::UsageError& e) {
        what = e.what();
    }
    CHECK(what.find("journal full") != std::string::npos);
    CHECK(what.find("would pass the bound of 3072 bytes") != std::string::npos);
    CHECK(w.size() <= 3072);
    // The refusal sticks for every other record (fail closed), and the file is a valid prefix.
    CHECK_THROWS_WITH(w.append(kTypeDecision, decision("late"), Commit::group), doctest::Contains("journal full"));
    CHECK(verify_journal(read_file(dir.path() + "/j"), key.public_key()).status == Status::incomplete);
    // The run can still say how it ended: the terminal record goes into the reserve.
    w.append(kTypeTerminal, {{"outcome", "ok"}}, Commit::durable);
    CHECK(verify_journal(read_file(dir.path() + "/j"), key.public_key()).status == Status::valid);
    CHECK_THROWS(w.append(kTypeDecision, decision("after"), Commit::group));
}

TEST_CASE("a terminal record fits in the reserve") {
    TempDir dir;
    SigningKey key = SigningKey::generate();
    WriterOptions small;
    small.max_bytes = 4096;
    small.terminal_reserve = 1024;
    JournalWriter w = JournalWriter::create(dir.path() + "/j", key, small);
    while (w.size() + 400 < 3072) w.append(kTypeDecision, decision(std::to_string(1)), Commit::group);
    w.append(kTypeTerminal, {{"outcome", "ok"}}, Commit::durable);
    CHECK(verify_journal(read_file(dir.path() + "/j"), key.public_key()).status == Status::valid);
}

TEST_CASE("a full disk: the write error names the call, the record and errno, and the writer stays failed") {
    Fd fd(::open("/dev/full", O_WRONLY | O_CLOEXEC));
    REQUIRE(fd.valid());
    JournalWriter w(std::move(fd), "/dev/full", SigningKey::generate(), JournalPosition{}, WriterOptions{});
    CHECK_THROWS_WITH_AS(w.append(kTypeAdmission, {{"id", "r"}}, Commit::durable),
                         "write(/dev/full (record 1, admission)): No space left on device", corral::SysError);
    CHECK_THROWS_WITH_AS(w.append(kTypeTerminal, {{"id", "r"}}, Commit::durable),
                         doctest::Contains("No space left on device"), corral::SysError);
}

TEST_CASE("a group-committed record is synced by the next durable one, by the count bound, or when due") {
    TempDir dir;
    SigningKey key = SigningKey::generate();
    WriterOptions opts;
    opts.group_records = 3;
    opts.group_delay = std::chrono::hours(1);  // only the count and explicit syncs here: no timing in a test
    JournalWriter w = JournalWriter::create(dir.path() + "/j", key, opts);
    w.append(kTypeDecision, decision(std::to_string(1)), Commit::group);
    CHECK_FALSE(w.sync_if_due());  // one waiting, not yet due
    w.append(kTypeDecision, decision(std::to_string(2)), Commit::group);
    w.append(kTypeDecision, decision(std::to_string(3)), Commit::group);  // the third: synced by the count bound
    CHECK_FALSE(w.sync_if_due());                     // nothing waits any more
    opts.group_delay = std::chrono::milliseconds(0);
    JournalWriter due = JournalWriter::create(dir.path() + "/k", key, opts);
    due.append(kTypeDecision, decision(std::to_string(1)), Commit::group);  // a zero delay: synced at once
    CHECK_FALSE(due.sync_if_due());
}

TEST_CASE("group commit by an owner's thread: append leaves the sync to begin_sync/end_sync, a failed one closes the writer") {
    TempDir dir;
    SigningKey key = SigningKey::generate();
    WriterOptions opts;
    opts.sync_group_in_append = false;
    opts.group_records = 1;
    opts.group_delay = std::chrono::milliseconds(0);
    JournalWriter w = JournalWriter::create(dir.path() + "/j", key, opts);
    w.append(kTypeDecision, decision("a"), Commit::group);
    w.append(kTypeDecision, decision("b"), Commit::group);
    auto t = w.begin_sync();  // neither bound made append sync
    CHECK(t.records == 2);
    CHECK(t.fd >= 0);
    w.append(kTypeDecision, decision("c"), Commit::group);  // written while the owner syncs
    REQUIRE(::fdatasync(t.fd) == 0);
    w.end_sync(t, 0);
    CHECK(w.begin_sync().records == 1);  // c still waits: the sync began before it
    w.append(kTypeTerminal, {{"id", "r"}}, Commit::durable);  // a durable record covers everything
    CHECK(w.begin_sync().records == 0);

    JournalWriter failing = JournalWriter::create(dir.path() + "/k", key, opts);
    failing.append(kTypeDecision, decision("a"), Commit::group);
    auto ft = failing.begin_sync();
    CHECK_THROWS_WITH_AS(failing.end_sync(ft, EIO), doctest::Contains("fdatasync"), corral::SysError);
    CHECK_THROWS_WITH_AS(failing.append(kTypeDecision, decision("b"), Commit::group),
                         doctest::Contains("Input/output error"), corral::SysError);
}

TEST_CASE("the signing key: created 0600 in a 0700 dir, loaded again the same, refused when opened up") {
    TempDir dir;
    bool created = false;
    SigningKey k1 = SigningKey::load_or_create(dir.path(), &created);
    CHECK(created);
    KeyFiles files = key_files(dir.path());
    struct stat st {};
    REQUIRE(::stat(files.dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    REQUIRE(::stat(files.key_path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    SigningKey k2 = SigningKey::load_or_create(dir.path(), &created);
    CHECK_FALSE(created);
    CHECK(k1.public_key().pem() == k2.public_key().pem());
    CHECK(k1.public_key().fingerprint().rfind("ed25519:", 0) == 0);
    CHECK(PublicKey::from_file(files.pub_path).pem() == k1.public_key().pem());
    std::string sig = k2.sign("m");
    CHECK(sig.size() == 64);
    CHECK(k1.public_key().verify("m", sig));
    CHECK_FALSE(k1.public_key().verify("n", sig));

    REQUIRE(::chmod(files.key_path.c_str(), 0640) == 0);
    CHECK_THROWS_WITH(SigningKey::load_or_create(dir.path()), doctest::Contains("closed to group and other"));
    REQUIRE(::chmod(files.key_path.c_str(), 0600) == 0);
    REQUIRE(::unlink(files.pub_path.c_str()) == 0);
    CHECK_THROWS_WITH(SigningKey::load_or_create(dir.path()), doctest::Contains("is incomplete"));
    CHECK_THROWS_WITH(PublicKey::from_file(files.key_path), doctest::Contains("not a PEM public key"));
}

TEST_CASE("a key file that is not an Ed25519 key is refused, naming it; an Ed25519 public key of OpenSSL's own is read") {
    TempDir dir;
    SigningKey k = SigningKey::load_or_create(dir.path());
    const KeyFiles files = key_files(dir.path());
    // An EC private key where the Ed25519 one belongs (made by OpenSSL's own tool).
    const std::string ec = dir.path() + "/ec.pem";
    REQUIRE(std::system(("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out " + ec + " 2>/dev/null").c_str()) == 0);
    const std::string original = read_file(files.key_path);
    { std::ofstream(files.key_path, std::ios::trunc) << read_file(ec); }
    CHECK_THROWS_WITH(SigningKey::load_or_create(dir.path()), doctest::Contains("not a PEM Ed25519 private key"));
    { std::ofstream(files.key_path, std::ios::trunc) << original; }
    CHECK(SigningKey::load_or_create(dir.path()).public_key().pem() == k.public_key().pem());
    // `openssl pkey -pubout` of the key: the same public key as corral's.
    const std::string pub = dir.path() + "/openssl.pub";
    REQUIRE(std::system(("openssl pkey -in " + files.key_path + " -pubout -out " + pub).c_str()) == 0);
    CHECK(PublicKey::from_file(pub).fingerprint() == k.public_key().fingerprint());
    REQUIRE(std::system(("openssl pkey -in " + ec + " -pubout -out " + pub).c_str()) == 0);
    CHECK_THROWS_WITH(PublicKey::from_file(pub), doctest::Contains("not an Ed25519 public key"));
}

TEST_CASE("a key made by openssl genpkey signs what openssl pkeyutl verifies, and the other way round") {
    TempDir dir;
    const KeyFiles files = key_files(dir.path());
    REQUIRE(::mkdir(files.dir.c_str(), 0700) == 0);
    REQUIRE(std::system(("umask 077 && openssl genpkey -algorithm ed25519 -out " + files.key_path + " && openssl pkey -in " +
                         files.key_path + " -pubout -out " + files.pub_path)
                            .c_str()) == 0);
    bool created = true;
    SigningKey k = SigningKey::load_or_create(dir.path(), &created);
    CHECK_FALSE(created);
    const std::string msg = dir.path() + "/msg", sig = dir.path() + "/sig";
    { std::ofstream(msg) << "a journal line"; }
    { std::ofstream(sig, std::ios::binary) << k.sign("a journal line"); }
    CHECK(std::system(("openssl pkeyutl -verify -rawin -pubin -inkey " + files.pub_path + " -in " + msg + " -sigfile " +
                       sig + " >/dev/null").c_str()) == 0);
    REQUIRE(std::system(("openssl pkeyutl -sign -rawin -inkey " + files.key_path + " -in " + msg + " -out " + sig).c_str()) ==
            0);
    CHECK(k.public_key().verify("a journal line", read_file(sig)));
    CHECK_FALSE(k.public_key().verify("another line", read_file(sig)));
}

TEST_CASE("base64 round-trips and refuses non-canonical text") {
    CHECK(base64_encode("ab") == "YWI=");
    CHECK(base64_decode("YWI=") == "ab");
    CHECK(base64_decode(base64_encode(std::string(64, '\xff'))) == std::string(64, '\xff'));
    CHECK_THROWS(base64_decode("YWJ="));  // the same bytes would encode as YWI=
    CHECK_THROWS(base64_decode("YW"));
}
