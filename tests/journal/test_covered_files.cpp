// journal/covered_files.hpp and run_identity: every file whose SHA-256 a
// record holds (a run's logs in its terminal record, each exec's logs in its
// exec_end record) is compared, and each change of one is named with the
// record and both digests; a journal says which run it is.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/sha256.hpp"
#include "journal/covered_files.hpp"
#include "journal/journal.hpp"
#include "journal/verify.hpp"
#include "tests/journal/journal_files.hpp"

using namespace corral::journal;
using nlohmann::json;
using corral::journal::test::read_file;
using corral::journal::test::TempDir;

namespace {

// A session's run dir: its logs and one exec's, and a journal whose
// terminal and exec_end records hold their SHA-256 as the writers do.
struct SessionDir {
    TempDir dir;
    SigningKey key = SigningKey::generate();
    std::string text;

    SessionDir() {
        dir.write("stdout.log", "session out\n");
        dir.write("execs/1/stdout.log", "exec 1 out\n");
        dir.write("execs/1/stderr.log", "");
        JournalWriter w = JournalWriter::create(dir / "journal.jsonl", key);
        w.append(kTypeAdmission, {{"id", "s1"}, {"argv", {"/bin/sh"}}}, Commit::durable);
        w.append(kTypeExecEnd,
                 {{"exec", 1},
                  {"status", 0},
                  {"output", {{"stdout", {{"bytes", 11}, {"log_sha256", file_sha256(dir / "execs/1/stdout.log")}}},
                              {"stderr", {{"bytes", 0}, {"log_sha256", file_sha256(dir / "execs/1/stderr.log")}}}}}},
                 Commit::group);
        w.append(kTypeTerminal,
                 {{"id", "s1"},
                  {"outcome", "ok"},
                  {"output", {{"stdout", {{"log", "stdout.log"}, {"log_sha256", file_sha256(dir / "stdout.log")}}},
                              {"stderr", {{"log", "stderr.log"}, {"log_sha256", file_sha256(dir / "stderr.log")}}}}}},
                 Commit::durable);
        text = read_file(dir / "journal.jsonl");
    }
    Verdict verdict() const { return verify_journal(text, key.public_key()); }
    std::optional<std::string> check(std::size_t* checked = nullptr) const {
        return check_covered_files(verdict().files, dir.path(), checked);
    }
};

std::string digest_of(const std::string& text) { return "sha256:" + corral::sha256_hex(text); }

}  // namespace

TEST_CASE("the files a journal holds the SHA-256 of: each log of the run and of every exec") {
    SessionDir s;
    Verdict v = s.verdict();
    REQUIRE(v.status == Status::valid);
    REQUIRE(v.files.size() == 4);
    CHECK(v.files[0].path == "execs/1/stdout.log");
    CHECK(v.files[0].record == "exec_end of exec 1");
    CHECK(v.files[0].seq == 2);
    CHECK(v.files[0].sha256 == digest_of("exec 1 out\n"));
    CHECK(v.files[2].path == "stdout.log");
    CHECK(v.files[2].record == "terminal");
    CHECK(v.files[3].path == "stderr.log");
    CHECK(v.files[3].sha256.is_null());  // there was none when the run ended
    std::size_t checked = 0;
    CHECK(s.check(&checked) == std::nullopt);
    CHECK(checked == 4);
}

TEST_CASE("an edited, removed or added log is named, with its record and both digests") {
    SessionDir s;
    SUBCASE("an exec's stdout.log edited") {
        s.dir.write("execs/1/stdout.log", "exec 1 OUT\n");
        CHECK(s.check() == s.dir / "execs/1/stdout.log" + ": its SHA-256 is " + digest_of("exec 1 OUT\n") +
                               "; record 2 (exec_end of exec 1) says " + digest_of("exec 1 out\n") +
                               ": it was changed after the record was written");
    }
    SUBCASE("the run's stdout.log edited") {
        s.dir.write("stdout.log", "session out, edited\n");
        CHECK(s.check() == s.dir / "stdout.log" + ": its SHA-256 is " + digest_of("session out, edited\n") +
                               "; record 3 (terminal) says " + digest_of("session out\n") +
                               ": it was changed after the record was written");
    }
    SUBCASE("a log removed") {
        REQUIRE(::unlink((s.dir / "execs/1/stderr.log").c_str()) == 0);
        CHECK(s.check() == s.dir / "execs/1/stderr.log" + " is missing; record 2 (exec_end of exec 1) says " +
                               digest_of("") + ": it was removed or renamed");
    }
    SUBCASE("a log added where the record says there was none") {
        s.dir.write("stderr.log", "planted\n");
        CHECK(s.check() == s.dir / "stderr.log" +
                               " is there; record 3 (terminal) says there was none when it was written: it was added after");
    }
    SUBCASE("a log replaced by a FIFO: not read, not blocked on") {
        REQUIRE(::unlink((s.dir / "stdout.log").c_str()) == 0);
        REQUIRE(::mkfifo((s.dir / "stdout.log").c_str(), 0600) == 0);
        auto why = s.check();
        REQUIRE(why.has_value());
        CHECK(why->find("stdout.log: its SHA-256 is none (not a regular file)") != std::string::npos);
    }
    SUBCASE("a log replaced by a symlink to the same bytes: never followed") {
        s.dir.write("copy.log", "session out\n");
        REQUIRE(::unlink((s.dir / "stdout.log").c_str()) == 0);
        REQUIRE(::symlink("copy.log", (s.dir / "stdout.log").c_str()) == 0);
        auto why = s.check();
        REQUIRE(why.has_value());
        CHECK(why->find("its SHA-256 is none") != std::string::npos);
    }
}

TEST_CASE("a terminal record that does not name its stdout log (older journals): stdout.log or stdout.jsonl, never both") {
    TempDir dir;
    SigningKey key = SigningKey::generate();
    dir.write("stdout.jsonl", "{\"type\":\"result\"}\n");
    JournalWriter w = JournalWriter::create(dir / "journal.jsonl", key);
    w.append(kTypeTerminal, {{"id", "r1"}, {"output", {{"stdout", {{"log_sha256", file_sha256(dir / "stdout.jsonl")}}}}}},
             Commit::durable);
    Verdict v = verify_journal(read_file(dir / "journal.jsonl"), key.public_key());
    REQUIRE(v.files.size() == 1);
    CHECK(v.files[0].path == "stdout.log");
    CHECK(v.files[0].or_path == "stdout.jsonl");
    CHECK(check_covered_files(v.files, dir.path(), nullptr) == std::nullopt);
    // A copy of the agent's log put beside it, and the agent's one edited:
    // which one the record meant is not known, so both are refused.
    dir.write("stdout.log", "{\"type\":\"result\"}\n");
    dir.write("stdout.jsonl", "{\"type\":\"edited\"}\n");
    auto why = check_covered_files(v.files, dir.path(), nullptr);
    REQUIRE(why.has_value());
    CHECK(why->find("are both there") != std::string::npos);
}

TEST_CASE("a record holding a digest in a form no writer makes is invalid, named") {
    TempDir dir;
    SigningKey key = SigningKey::generate();
    int n = 0;
    auto invalid_for = [&](const json& payload, std::string_view type) {
        std::string path = dir / ("j" + std::to_string(++n));
        JournalWriter w = JournalWriter::create(path, key);
        w.append(type, payload, Commit::durable);
        return verify_journal(read_file(path), key.public_key());
    };
    Verdict v = invalid_for({{"exec", 0}, {"output", {{"stdout", {{"log_sha256", nullptr}}}}}}, kTypeExecEnd);
    CHECK(v.status == Status::invalid);
    CHECK(v.reason == "record 1: an exec_end whose exec is not a positive integer");
    v = invalid_for({{"output", {{"stdout", {{"log", "../run.json"}, {"log_sha256", nullptr}}}}}}, kTypeTerminal);
    CHECK(v.reason == "record 1: output.stdout.log is not a plain file name");
    v = invalid_for({{"output", {{"stderr", {{"log_sha256", 7}}}}}}, kTypeTerminal);
    CHECK(v.reason == "record 1: output.stderr.log_sha256 is neither \"sha256:<hex>\" nor null");
}

TEST_CASE("which run a journal is: its id and admission time; none for a daemon's journal") {
    SessionDir s;
    Verdict v = s.verdict();
    auto who = run_identity(v);
    REQUIRE(who.has_value());
    CHECK(who->id == "s1");
    REQUIRE(who->admitted.has_value());
    CHECK(*who->admitted == v.first["time"].get<std::string>());

    TempDir dir;
    JournalWriter refused = JournalWriter::create(dir / "refused.jsonl", s.key);
    refused.append(kTypeTerminal, {{"id", "r2"}, {"outcome", "refused"}}, Commit::durable);
    who = run_identity(verify_journal(read_file(dir / "refused.jsonl"), s.key.public_key()));
    REQUIRE(who.has_value());
    CHECK(who->id == "r2");
    CHECK_FALSE(who->admitted.has_value());  // refused before its box

    JournalWriter daemon = JournalWriter::create(dir / "daemon.jsonl", s.key);
    daemon.append(kTypeAdmission, {{"kind", "gateway_daemon"}, {"journal", {{"day", "2026-12-05"}}}}, Commit::durable);
    CHECK_FALSE(run_identity(verify_journal(read_file(dir / "daemon.jsonl"), s.key.public_key())).has_value());
}
