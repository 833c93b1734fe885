// A session's reviewed workspace (corral session start --workspace DIR
// --review): `corral diff` while it runs reads the live layer (never writes
// it) and shows the changes so far in host IDs; apply and discard wait for
// its end (or --while-running: the session records it); after `corral
// session stop` the copied layer reads as the live one did, and apply works
// as for a run, journalled after the session's end.
#include <doctest/doctest.h>

#include "tests/supervisor/sandbox/sessions_support.hpp"
#include "tests/workspace/review_support.hpp"

namespace corral::test::review {
namespace {

TEST_CASE("a session's reviewed workspace: diff while it runs shows the changes so far; apply waits for its stop") {
    Sessions s;
    const std::string ws = make_repo("review-session", {{"a.txt", "one\n"}, {"del.txt", "gone soon\n"}});
    const auto manifest_before = tree_manifest(ws);
    const std::string id = s.start({"--workspace", ws, "--review"});
    const Result first = s.sh(id, "agent", "cd /workspace && echo two >> a.txt && rm del.txt");
    INFO(transcript(first));
    REQUIRE(first.exit_code == 0);

    const Result live = s.corral({"diff", "--stat", id});
    INFO(live.out << live.err);
    REQUIRE(live.exit_code == 0);
    // The agent's UID reads as DIR's owner's: no [owner] flag.
    CHECK(has_line(live.out, "M  a.txt  [content]"));
    CHECK(has_line(live.out, "D  del.txt"));
    CHECK(live.out.find("changes so far") != std::string::npos);
    // The agent goes on; the next diff follows it.
    REQUIRE(s.sh(id, "agent", "cd /workspace && echo new > new.txt").exit_code == 0);
    const Result later = s.corral({"diff", "--stat", id});
    INFO(later.out << later.err);
    REQUIRE(later.exit_code == 0);
    CHECK(has_line(later.out, "A  new.txt"));
    CHECK(digest_of(later.out) != digest_of(live.out));

    // Apply and discard wait for the end; DIR is untouched meanwhile.
    for (const char* cmd : {"apply", "discard"}) {
        const Result early = s.corral({cmd, id});
        INFO(cmd << ": " << early.out << early.err);
        CHECK(early.exit_code != 0);
        CHECK(early.err.find("still going") != std::string::npos);
    }
    CHECK(tree_manifest(ws) == manifest_before);

    const Result stopped = s.corral({"session", "stop", id});
    INFO(transcript(stopped));
    REQUIRE(stopped.exit_code == 0);
    const Result after = s.corral({"diff", "--stat", id});
    INFO(after.out << after.err);
    REQUIRE(after.exit_code == 0);
    CHECK(after.out.find("changes so far") == std::string::npos);
    // The layer copied out at the stop reads as the live one did.
    CHECK(digest_of(after.out) == digest_of(later.out));
    const Result applied = s.corral({"apply", "--expect", digest_of(after.out), id});
    INFO(applied.out << applied.err);
    CHECK(applied.exit_code == 0);
    CHECK(sandbox::read_file(ws + "/a.txt") == "one\ntwo\n");
    CHECK_FALSE(std::filesystem::exists(ws + "/del.txt"));
    CHECK(sandbox::read_file(ws + "/new.txt") == "new\n");
    struct stat st {};
    REQUIRE(stat((ws + "/new.txt").c_str(), &st) == 0);
    CHECK(st.st_uid == kOwnerUid);
    CHECK(st.st_gid == kOwnerGid);
    CHECK(journal_record(s.run_dir(id), -1)["type"] == "workspace_apply");
    CHECK(journal_record(s.run_dir(id), -2)["type"] == "terminal");
    const Result verified = s.corral({"journal", "verify", s.run_dir(id)});
    INFO(verified.out << verified.err);
    CHECK(verified.exit_code == 0);
}

TEST_CASE("a session's reviewed workspace: apply --while-running writes as the owner, the session records it, a later apply goes on from there") {
    Sessions s;
    const std::string ws = make_repo("review-live-apply", {{"a.txt", "one\n"}, {"del.txt", "gone soon\n"}, {"b.txt", "b\n"}});
    const std::string id = s.start({"--workspace", ws, "--review"});
    // new.txt 0600 and the agent's: root opens the reviewed copy for the owner's child.
    const Result first = s.sh(id, "agent", "cd /workspace && echo two >> a.txt && rm del.txt && echo new > new.txt && chmod 600 new.txt");
    INFO(transcript(first));
    REQUIRE(first.exit_code == 0);
    const Result live_diff = s.corral({"diff", "--stat", id});
    REQUIRE(live_diff.exit_code == 0);

    const Result applied = s.corral({"apply", "--while-running", "--expect", digest_of(live_diff.out), id});
    INFO(applied.out << applied.err);
    REQUIRE(applied.exit_code == 0);
    CHECK(applied.out.find("while the session runs") != std::string::npos);
    CHECK(sandbox::read_file(ws + "/a.txt") == "one\ntwo\n");
    CHECK(sandbox::read_file(ws + "/new.txt") == "new\n");
    CHECK_FALSE(std::filesystem::exists(ws + "/del.txt"));
    struct stat st {};
    REQUIRE(stat((ws + "/new.txt").c_str(), &st) == 0);
    CHECK(st.st_uid == kOwnerUid);
    CHECK((st.st_mode & 07777) == 0600);
    // The session's supervisor wrote the record into its own journal.
    const auto rec = journal_record(s.run_dir(id), -1);
    CHECK(rec["type"] == "workspace_apply");
    CHECK(rec.dump().find("\"while_running\":true") != std::string::npos);

    // Nothing left to apply now: the applied files are the review's own.
    const Result settled = s.corral({"diff", "--stat", id});
    INFO(settled.out << settled.err);
    CHECK(settled.out.find("a.txt") == std::string::npos);
    CHECK(settled.out.find("host-changed") == std::string::npos);
    // The agent goes on; the host edits a file the apply wrote.
    REQUIRE(s.sh(id, "agent", "cd /workspace && echo three >> a.txt && echo newer > new.txt && echo bb > b.txt").exit_code == 0);
    sandbox::write_file(ws + "/new.txt", "host\n");
    const Result later = s.corral({"diff", "--stat", id});
    INFO(later.out << later.err);
    CHECK(has_line(later.out, "M  a.txt  [content]"));
    CHECK(later.out.find("new.txt  [content, host-changed]") != std::string::npos);

    REQUIRE(s.corral({"session", "stop", id}).exit_code == 0);
    const Result final_apply = s.corral({"apply", id});
    INFO(final_apply.out << final_apply.err);
    CHECK(final_apply.exit_code == 1);  // new.txt is a conflict, the rest applied
    CHECK(has_line(final_apply.out, "applied a.txt"));
    CHECK(has_line(final_apply.out, "applied b.txt"));
    CHECK(final_apply.out.find("refused new.txt: conflict") != std::string::npos);
    CHECK(sandbox::read_file(ws + "/a.txt") == "one\ntwo\nthree\n");
    CHECK(sandbox::read_file(ws + "/b.txt") == "bb\n");
    CHECK(sandbox::read_file(ws + "/new.txt") == "host\n");
    const Result verified = s.corral({"journal", "verify", s.run_dir(id)});
    INFO(verified.out << verified.err);
    CHECK(verified.exit_code == 0);
}

}  // namespace
}  // namespace corral::test::review
