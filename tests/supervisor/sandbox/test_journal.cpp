// RUN_DIR/journal.jsonl with a real sandbox (docs/journal.md): the admission
// record is durable while the command runs and verifies as "incomplete"; a
// killed supervisor leaves it incomplete until the next corral run appends
// the recovered record; a finished run's journal verifies with its run.json
// and names its run; one run's journal copied into another's dir, and an
// edited stdout.log (a run's, a session exec's), are invalid, named; a full
// run dir (a small tmpfs) stops the run with a line naming the write.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "base/sha256.hpp"
#include "tests/supervisor/sandbox/sandbox_support.hpp"

using namespace corral::test;
using namespace corral::test::sandbox;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

struct StateDir {
    std::string path = fresh_dir("state", 0700);
    CorralArgs args() const {
        CorralArgs a;
        a.flags = {"--state-dir", path};
        return a;
    }
    std::string pub() const { return path + "/journal/signing.pub"; }
};

Result verify(const std::string& journal, const std::string& key) {
    return run({corral_bin(), "journal", "verify", journal, "--key", key}, RunOptions{60s});
}

// verify, holding the journal's run against the state dir's runs.
Result verify_in(const std::string& journal, const StateDir& st) {
    return run({corral_bin(), "journal", "verify", journal, "--key", st.pub(), "--state-dir", st.path}, RunOptions{60s});
}

json line_of(const std::string& text, std::size_t n) {
    auto ls = lines(text);
    REQUIRE(ls.size() > n);
    return json::parse(ls[n]);
}

}  // namespace

TEST_CASE("a run's journal: admission on disk while the command runs; terminal at the end; run.json agrees") {
    StateDir st;
    CorralProcess p({"/bin/sh", "-c", "echo ready; read x < /dev/null; sleep 600"}, st.args());
    REQUIRE(p.wait_for_out("ready", 30s));
    const std::string journal = p.run_dir() + "/journal.jsonl";
    // The command printed: its first process ran; the admission record was there before it.
    std::string text = sandbox::read_file(journal);
    REQUIRE(lines(text).size() == 2);
    json admission = line_of(text, 0);
    CHECK(admission["type"] == "admission");
    CHECK(admission["seq"] == 1);
    CHECK(admission["payload"]["argv"][0] == "/bin/sh");
    CHECK(admission["payload"]["env_names"].is_array());
    // The box's UID and GID, leased after the admission was written, come
    // in the record of the command's start.
    json started = line_of(text, 1);
    CHECK(started["type"] == "started");
    auto rec_running = read_record(p.run_dir());
    REQUIRE(rec_running.has_value());
    CHECK(started["payload"]["uid"] == (*rec_running)["uid"]);
    CHECK(started["payload"]["gid"] == (*rec_running)["gid"]);
    auto during = verify(journal, st.pub());
    INFO(transcript(during));
    CHECK(during.exit_code == 1);  // incomplete: the run has not ended
    CHECK(during.out.find("incomplete: 2 good records") != std::string::npos);

    p.signal(SIGTERM);
    p.wait();
    text = sandbox::read_file(journal);
    REQUIRE(lines(text).size() == 3);
    json terminal = line_of(text, 2);
    CHECK(terminal["type"] == "terminal");
    CHECK(terminal["payload"]["teardown"] == "clean");
    CHECK(terminal["payload"]["output"]["stdout"]["log_sha256"].get<std::string>().rfind("sha256:", 0) == 0);
    auto after = verify(journal, st.pub());
    INFO(transcript(after));
    CHECK(after.exit_code == 0);
    CHECK(after.out.find("run.json agrees") != std::string::npos);

    // run.json edited after the fact: invalid, naming the field.
    auto rec = read_record(p.run_dir());
    REQUIRE(rec.has_value());
    (*rec)["status"] = 0;
    (*rec)["outcome"] = "exited";
    sandbox::write_file(p.run_dir() + "/run.json", rec->dump());
    auto edited = verify(journal, st.pub());
    INFO(transcript(edited));
    CHECK(edited.exit_code == 3);
    CHECK(edited.out.find("run.json \"outcome\" is \"exited\"") != std::string::npos);
}

TEST_CASE("verify names the run and holds it against its dir; an edited log is named with both digests") {
    StateDir st;
    // The same command twice: two runs whose logs and run.json differ only in the id.
    auto a = corral_sh("echo same", st.args());
    auto b = corral_sh("echo same", st.args());
    INFO(transcript(a.result) << transcript(b.result));
    REQUIRE(a.result.exit_code == 0);
    REQUIRE(b.result.exit_code == 0);
    REQUIRE(a.record.has_value());
    REQUIRE(b.record.has_value());
    const std::string id_a = (*a.record)["id"], id_b = (*b.record)["id"];
    const std::string ja = a.run_dir + "/journal.jsonl", jb = b.run_dir + "/journal.jsonl";
    auto good = verify_in(ja, st);
    INFO(transcript(good));
    CHECK(good.exit_code == 0);
    CHECK(good.out.find(ja + ": run " + id_a + ", admitted 20") != std::string::npos);
    CHECK(good.out.find(", in its run dir (" + st.path + "/runs/" + id_a + "); 2 logs as their records say\n") !=
          std::string::npos);

    // A's journal, run.json and ledger copied over B's: they agree with one
    // another, and the logs are alike; the dir is B's.
    for (const char* f : {"journal.jsonl", "run.json", "ledger.jsonl"})
        if (::access((a.run_dir + "/" + f).c_str(), F_OK) == 0)
            sandbox::write_file(b.run_dir + "/" + f, sandbox::read_file(a.run_dir + "/" + f));
    auto copied = verify_in(jb, st);
    INFO(transcript(copied));
    CHECK(copied.exit_code == 3);
    CHECK(copied.out.find(jb + ": invalid: the journal is run " + id_a + "'s (admitted 20") != std::string::npos);
    CHECK(copied.out.find(" is the run dir of run " + id_b + " (" + st.path + "/runs/" + id_b +
                          "): the journal was copied or moved from another run's dir\n") != std::string::npos);

    // A's stdout.log edited after its terminal record.
    sandbox::write_file(a.run_dir + "/stdout.log", "edited\n");
    auto edited = verify_in(ja, st);
    INFO(transcript(edited));
    CHECK(edited.exit_code == 3);
    CHECK(edited.out.find(ja + ": invalid: " + a.run_dir + "/stdout.log: its SHA-256 is sha256:" +
                          corral::sha256_hex("edited\n") + "; record ") != std::string::npos);
    CHECK(edited.out.find("(terminal) says sha256:" + corral::sha256_hex("same\n") +
                          ": it was changed after the record was written") != std::string::npos);
}

TEST_CASE("a session's exec log edited after its exec_end record: verify names it, with both digests") {
    StateDir st;
    auto corral = [&](std::vector<std::string> argv) {
        argv.insert(argv.begin() + (argv[0] == "exec" ? 1 : 2), {"--state-dir", st.path});
        argv.insert(argv.begin(), corral_bin());
        return run(argv, RunOptions{60s});
    };
    Result started = corral({"session", "start", "--rootfs", rootfs(), "--uid-range", uid_range()});
    INFO(transcript(started));
    REQUIRE(started.exit_code == 0);
    const std::string id = started.out.substr(0, started.out.find('\n'));
    Result exec = corral({"exec", id, "--", "/bin/sh", "-c", "echo exec-out"});
    INFO(transcript(exec));
    CHECK(exec.exit_code == 0);
    Result stopped = corral({"session", "stop", id});
    INFO(transcript(stopped));
    REQUIRE(stopped.exit_code == 0);
    const std::string dir = st.path + "/runs/" + id, journal = dir + "/journal.jsonl";
    auto good = verify_in(journal, st);
    INFO(transcript(good));
    CHECK(good.exit_code == 0);
    CHECK(good.out.find(journal + ": run " + id + ", admitted 20") != std::string::npos);
    CHECK(good.out.find(", in its run dir (" + dir + "); 4 logs as their records say\n") != std::string::npos);

    sandbox::write_file(dir + "/execs/1/stdout.log", "edited\n");
    auto edited = verify_in(journal, st);
    INFO(transcript(edited));
    CHECK(edited.exit_code == 3);
    CHECK(edited.out.find(journal + ": invalid: " + dir + "/execs/1/stdout.log: its SHA-256 is sha256:" +
                          corral::sha256_hex("edited\n") + "; record ") != std::string::npos);
    CHECK(edited.out.find(" (exec_end of exec 1) says sha256:" + corral::sha256_hex("exec-out\n") + ": it was changed") !=
          std::string::npos);
}

TEST_CASE("a killed supervisor: the journal is incomplete, then the next corral run appends \"recovered\" (lost)") {
    StateDir st;
    std::string journal;
    {
        CorralProcess p({"/bin/sh", "-c", "echo ready; sleep 600"}, st.args());
        REQUIRE(p.wait_for_out("ready", 30s));
        journal = p.run_dir() + "/journal.jsonl";
        p.kill_supervisor_only();
        p.wait();
    }
    auto lost = verify(journal, st.pub());
    INFO(transcript(lost));
    CHECK(lost.exit_code == 1);

    auto next = corral_run({"/bin/true"}, st.args());
    INFO(transcript(next.result));
    CHECK(next.result.exit_code == 0);
    auto recovered = verify(journal, st.pub());
    INFO(transcript(recovered));
    CHECK(recovered.exit_code == 0);
    CHECK(recovered.out.find("ended by recovered (outcome lost)") != std::string::npos);
    json last = line_of(sandbox::read_file(journal), 2);
    CHECK(last["payload"]["reason"] == "supervisor lost");
    // And the run that found it has its own valid journal.
    CHECK(verify(next.run_dir + "/journal.jsonl", st.pub()).exit_code == 0);
}

TEST_CASE("a full run dir (a small tmpfs): the run stops with a line naming the failed write, never a success") {
    StateDir st;
    const std::string mnt = fresh_dir("full-tmpfs", 0700);
    REQUIRE(::mount("tmpfs", mnt.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=256k,mode=0700") == 0);
    struct Unmount {
        std::string path;
        ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
    } unmount{mnt};
    CorralArgs args = st.args();
    args.own_run_dir = false;
    args.flags.insert(args.flags.end(), {"--run-dir", mnt + "/run"});
    // The command's output fills the run dir's file system; the terminal record finds it full.
    auto r = corral_sh("head -c 1000000 /dev/zero", args);
    INFO(transcript(r.result));
    CHECK(r.result.exit_code != 0);
    CHECK(r.result.err.find("No space left on device") != std::string::npos);
}

TEST_CASE("verify without --key: the key of the state dir the journal is in, named; another key told from a change") {
    StateDir st, other;
    CorralArgs in_state = st.args(), in_other = other.args();
    in_state.own_run_dir = in_other.own_run_dir = false;  // STATE/runs/ID, not a --run-dir elsewhere
    auto a = corral_sh("echo here", in_state);
    auto b = corral_sh("echo there", in_other);
    INFO(transcript(a.result) << transcript(b.result));
    REQUIRE(a.result.exit_code == 0);
    REQUIRE(b.result.exit_code == 0);
    // "corral run: run ID, run dir DIR": the run dir is STATE/runs/ID.
    const auto said = a.result.err.find("corral run: run ");
    REQUIRE(said != std::string::npos);
    const std::string id = a.result.err.substr(said + 16, a.result.err.find(',', said) - said - 16);
    a.run_dir = st.path + "/runs/" + id;
    const std::string journal = a.run_dir + "/journal.jsonl";
    // Neither --key nor --state-dir: the default state dir is not where the run is.
    const std::string own = "(" + st.pub() + ", the state dir the journal is in)";
    for (const std::string& given : {journal, a.run_dir}) {
        auto v = run({corral_bin(), "journal", "verify", given}, RunOptions{60s});
        INFO(transcript(v));
        CHECK(v.exit_code == 0);
        CHECK(v.out.find(journal + ": valid: 3 records, key ed25519:") != std::string::npos);
        CHECK(v.out.find(own + ", ended by terminal") != std::string::npos);
        CHECK(v.out.find(", in its run dir (" + st.path + "/runs/" + id + ")") != std::string::npos);
    }
    // The run's id, with the state dir given: that state dir's key.
    auto by_id = run({corral_bin(), "journal", "verify", id, "--state-dir", st.path}, RunOptions{60s});
    INFO(transcript(by_id));
    CHECK(by_id.exit_code == 0);
    CHECK(by_id.out.find("(" + st.pub() + ", --state-dir), ended by terminal") != std::string::npos);

    // The other state dir's key: signed with another key, and the one that verifies it named.
    auto wrong = verify(journal, other.pub());
    INFO(transcript(wrong));
    CHECK(wrong.exit_code == 3);
    CHECK(wrong.out.find("the journal was signed with another key (none of its 3 records verifies with this one") !=
          std::string::npos);
    CHECK(wrong.out.find("; checked with key ed25519:") != std::string::npos);
    CHECK(wrong.out.find("(" + other.pub() + ", --key); it verifies with key ed25519:") != std::string::npos);
    CHECK(wrong.out.find(own + "\n") != std::string::npos);

    // The admission changed: its own key finds it, and says changed.
    std::string text = sandbox::read_file(journal);
    const auto at = text.find("\"echo here\"");
    REQUIRE(at != std::string::npos);
    text[at + 6] = 'H';
    sandbox::write_file(journal, text);
    auto changed = run({corral_bin(), "journal", "verify", journal}, RunOptions{60s});
    INFO(transcript(changed));
    CHECK(changed.exit_code == 3);
    CHECK(changed.out.find("record 1 was changed after it was signed (2 later records verify with this key)") !=
          std::string::npos);
    CHECK(changed.out.find("signed with another key") == std::string::npos);
    CHECK(changed.out.find("; checked with key ed25519:") != std::string::npos);
}
