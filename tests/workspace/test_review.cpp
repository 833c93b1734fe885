// corral run --workspace DIR --review, then corral diff / apply / discard,
// on real git repositories with real kernel overlays (root; the sandbox
// suite's busybox rootfs). DIR is never written during the run; the diff
// lists every change (deletions included) with its flags; apply yields what
// the same edits made directly yield, as DIR's owner; conflicts, a planted
// symlink and a stale digest are refused; discard leaves DIR untouched.
#include <doctest/doctest.h>
#include <sys/mount.h>

#include "tests/workspace/review_support.hpp"

namespace corral::test::review {
namespace {

// The agent's edits, run in the box (busybox) and, for the reference tree,
// directly on a copy of the repository.
constexpr const char* kEdits = R"SH(set -e
echo two >> a.txt
echo new > new.txt
rm del.txt
mv b.txt b2.txt
chmod +x mode.sh
ln -s /etc/passwd link
echo 'echo pwned' > .git/hooks/x
chmod +x .git/hooks/x
touch ignored.log
rm -r d; mkdir d; touch d/new
mv ren ren2
printf '\000\001\002' > bin.dat
)SH";

const std::map<std::string, std::string> kFiles = {
    {"a.txt", "one\n"},        {"b.txt", "bee\n"},          {"del.txt", "gone soon\n"},
    {"mode.sh", "echo hi\n"},  {"sub/keep.txt", "keep\n"}, {"d/old.txt", "old\n"},
    {"ren/x.txt", "moved\n"},  {"bin.dat", std::string("\x7f" "ELF\0\0", 6)},
};

CorralArgs review_args(const std::string& ws) {
    CorralArgs args;
    args.flags = {"--workspace", ws, "--review"};
    return args;
}

TEST_CASE("a reviewed run leaves DIR untouched; diff lists every change; apply equals the edits made directly") {
    const std::string ws = make_repo("review-ws", kFiles);
    const std::string direct = fresh_path("review-direct");
    must_run({"cp", "-a", ws, direct});
    const auto before = tree_state(ws);
    const auto manifest_before = tree_manifest(ws);  // times included: nothing may even be touched

    auto run = corral_sh(std::string("echo START\n") + kEdits + "echo DONE\n", review_args(ws));
    INFO(transcript(run.result));
    require_ran(run);
    check_nothing_left(run);
    CHECK(tree_manifest(ws) == manifest_before);
    CHECK(run.result.err.find("wait for review") != std::string::npos);

    const Result stat = corral_cmd({"diff", "--stat", run.run_dir});
    INFO(stat.out << stat.err);
    REQUIRE(stat.exit_code == 0);
    for (const char* line : {"M  a.txt  [content]", "A  new.txt", "D  del.txt", "D  b.txt  (renamed to b2.txt)",
                             "A  b2.txt  (renamed from b.txt)", "M  mode.sh  [mode, exec-bit]", "A  link",
                             "A  .git/hooks/x  [exec-bit, git-internal]", "A  ignored.log  [ignored]", "D  d/old.txt",
                             "A  d/new", "D  ren  (renamed to ren2)", "D  ren/x.txt  (renamed to ren2/x.txt)",
                             "A  ren2  (renamed from ren)", "A  ren2/x.txt  (renamed from ren/x.txt)",
                             "M  bin.dat  [content]"}) {
        INFO(line);
        CHECK(has_line(stat.out, line));
    }
    CHECK(stat.out.find("sub/keep.txt") == std::string::npos);
    const Result full = corral_cmd({"diff", run.run_dir});
    REQUIRE(full.exit_code == 0);
    CHECK(full.out.find("+two") != std::string::npos);
    CHECK(full.out.find("symlink -> /etc/passwd") != std::string::npos);
    CHECK(full.out.find("binary: 6 bytes sha256:") != std::string::npos);
    const std::string digest = digest_of(full.out);
    CHECK(digest == digest_of(stat.out));
    const Result json = corral_cmd({"diff", "--json", run.run_dir});
    REQUIRE(json.exit_code == 0);
    CHECK(nlohmann::json::parse(json.out)["digest"] == digest);

    const Result applied = corral_cmd({"apply", "--expect", digest, run.run_dir});
    INFO(applied.out << applied.err);
    CHECK(applied.exit_code == 0);
    CHECK(has_line(applied.out, "applied a.txt"));
    CHECK(has_line(applied.out, "applied del.txt"));
    // The apply is in the run's journal, after its terminal record: what,
    // from which diff, by whom, as whom; and the journal still verifies.
    const nlohmann::json last = journal_record(run.run_dir, -1);
    CHECK(last["type"] == "workspace_apply");
    CHECK(journal_record(run.run_dir, -2)["type"] == "terminal");
    CHECK(last["payload"]["diff_digest"] == digest);
    CHECK(last["payload"]["expect"] == digest);
    CHECK(last["payload"]["by"]["uid"] == getuid());
    CHECK(last["payload"]["written_as"]["uid"] == kOwnerUid);
    CHECK(last["payload"]["refused"].empty());
    const nlohmann::json& paths = last["payload"]["applied"];
    CHECK(std::find(paths.begin(), paths.end(), nlohmann::json("a.txt")) != paths.end());
    CHECK(std::find(paths.begin(), paths.end(), nlohmann::json("del.txt")) != paths.end());
    const Result verified = corral_cmd({"journal", "verify", run.run_dir});
    INFO(verified.out << verified.err);
    CHECK(verified.exit_code == 0);
    CHECK(verified.out.find("then 1 record of its workspace's review") != std::string::npos);

    must_run({"sh", "-c", std::string("cd '") + direct + "' && " + kEdits});
    must_run({"chown", "-R", std::to_string(kOwnerUid) + ":" + std::to_string(kOwnerGid), direct});
    auto applied_tree = tree_state(ws), direct_tree = tree_state(direct);
    CHECK(applied_tree == direct_tree);
    CHECK(git(ws, {"status", "--porcelain", "--ignored", "-uall"}).out ==
          git(direct, {"status", "--porcelain", "--ignored", "-uall"}).out);
    CHECK(applied_tree != before);
    // Nothing of the agent's landed as root or as the run's UID.
    for (const auto& entry : applied_tree) {  // no structured binding: INFO captures it in a lambda (clang 14)
        INFO(entry.first);
        CHECK(entry.second.find(" " + std::to_string(kOwnerUid) + ":" + std::to_string(kOwnerGid)) != std::string::npos);
    }
}

TEST_CASE("discard drops the changes and DIR stays as it was") {
    const std::string ws = make_repo("review-discard", kFiles);
    const auto manifest_before = tree_manifest(ws);
    auto run = corral_sh("echo START; echo x >> a.txt; rm del.txt; echo DONE", review_args(ws));
    INFO(transcript(run.result));
    require_ran(run);
    const std::string digest = digest_of(must_run({corral_bin(), "diff", run.run_dir}).out);
    const Result discarded = corral_cmd({"discard", run.run_dir});
    INFO(discarded.out << discarded.err);
    CHECK(discarded.exit_code == 0);
    const nlohmann::json last = journal_record(run.run_dir, -1);
    CHECK(last["type"] == "workspace_discard");
    CHECK(last["payload"]["diff_digest"] == digest);
    CHECK(last["payload"]["changes"] == 2);
    CHECK(last["payload"]["by"]["uid"] == getuid());
    CHECK(corral_cmd({"journal", "verify", run.run_dir}).exit_code == 0);
    CHECK(tree_manifest(ws) == manifest_before);
    CHECK_FALSE(std::filesystem::exists(run.run_dir + "/workspace/upper"));
    const Result diff = corral_cmd({"diff", run.run_dir});
    CHECK(diff.exit_code != 0);
    CHECK(diff.err.find("discarded") != std::string::npos);
}

TEST_CASE("apply refuses a host edit (conflict), a planted symlink and a stale digest; applies the rest") {
    const std::string ws = make_repo("review-conflict", kFiles);
    const std::string outside = fresh_dir("review-outside", 0777);
    auto run = corral_sh("echo START; echo agent >> a.txt; echo ok >> b.txt; echo new > sub/new.txt; echo DONE",
                         review_args(ws));
    INFO(transcript(run.result));
    require_ran(run);
    // Since the run started: the host edits a.txt, and sub/ becomes a link out of DIR.
    sandbox::write_file(ws + "/a.txt", "host edit\n");
    must_run({"mv", ws + "/sub", ws + "/sub.orig"});
    REQUIRE(symlink(outside.c_str(), (ws + "/sub").c_str()) == 0);
    REQUIRE(lchown((ws + "/sub").c_str(), kOwnerUid, kOwnerGid) == 0);

    const Result diff = corral_cmd({"diff", "--stat", run.run_dir});
    INFO(diff.out << diff.err);
    REQUIRE(diff.exit_code == 0);
    CHECK(has_line(diff.out, "M  a.txt  [content, host-changed]"));
    const Result stale = corral_cmd({"apply", "--expect", "sha256:" + std::string(64, '0'), run.run_dir});
    CHECK(stale.exit_code == 1);
    CHECK(stale.err.find("nothing applied") != std::string::npos);
    CHECK(sandbox::read_file(ws + "/b.txt") == "bee\n");

    const Result applied = corral_cmd({"apply", "--expect", digest_of(diff.out), run.run_dir});
    INFO(applied.out << applied.err);
    CHECK(applied.exit_code == 1);
    CHECK(applied.out.find("refused a.txt: conflict: changed on the host since the run started") != std::string::npos);
    CHECK(applied.out.find("refused sub/new.txt: refused: a symlink on the way") != std::string::npos);
    CHECK(has_line(applied.out, "applied b.txt"));
    CHECK(sandbox::read_file(ws + "/a.txt") == "host edit\n");
    CHECK(sandbox::read_file(ws + "/b.txt") == "bee\nok\n");
    CHECK(std::filesystem::is_empty(outside));
}

TEST_CASE("a FIFO is listed and never applied; hard links are flagged and applied as files; a deleted file the host recreated is a conflict") {
    const std::string ws = make_repo("review-special", kFiles);
    auto run = corral_sh("echo START; mkfifo pipe; echo linked > h1; ln h1 h2; rm del.txt; echo DONE", review_args(ws));
    INFO(transcript(run.result));
    require_ran(run);
    must_run({"rm", ws + "/del.txt"});
    sandbox::write_file(ws + "/del.txt", "recreated\n");
    const Result diff = corral_cmd({"diff", "--stat", run.run_dir});
    INFO(diff.out << diff.err);
    REQUIRE(diff.exit_code == 0);
    CHECK(has_line(diff.out, "A  pipe  [special-file]"));
    CHECK(has_line(diff.out, "A  h1  [hard-link]"));
    CHECK(has_line(diff.out, "A  h2  [hard-link]"));
    CHECK(has_line(diff.out, "D  del.txt  [host-changed]"));
    const Result applied = corral_cmd({"apply", run.run_dir});
    INFO(applied.out << applied.err);
    CHECK(applied.exit_code == 1);
    CHECK(applied.out.find("refused pipe: refused: a special file") != std::string::npos);
    CHECK(applied.out.find("refused del.txt: conflict: changed on the host since the run started") != std::string::npos);
    CHECK(has_line(applied.out, "applied h1"));
    CHECK(has_line(applied.out, "applied h2"));
    CHECK_FALSE(std::filesystem::exists(ws + "/pipe"));
    CHECK(sandbox::read_file(ws + "/h2") == "linked\n");
    CHECK(sandbox::read_file(ws + "/del.txt") == "recreated\n");
}

TEST_CASE("a workspace with a mount inside cannot be reviewed: refused before the box starts") {
    const std::string ws = make_repo("review-mounted", kFiles);
    REQUIRE(mount("corral-test", (ws + "/sub").c_str(), "tmpfs", 0, "size=1M") == 0);
    auto run = run_refused(review_args(ws), "cannot be reviewed");
    umount2((ws + "/sub").c_str(), MNT_DETACH);
    CHECK(run.result.err.find("/sub is a mount inside it") != std::string::npos);
}

TEST_CASE("a full upper layer is ENOSPC in the box and said after the run") {
    const std::string ws = make_repo("review-full", kFiles);
    CorralArgs args = review_args(ws);
    args.flags.insert(args.flags.end(), {"--scratch-size", "2M"});
    auto run = corral_sh("echo START; dd if=/dev/zero of=big bs=1M count=8 2>&1; echo \"dd-rc=$?\"; echo DONE", args);
    INFO(transcript(run.result));
    require_ran(run);
    CHECK(run.result.out.find("No space left on device") != std::string::npos);
    CHECK(field(run.result.out, "dd-rc") != "0");
    CHECK(run.result.err.find("upper layer is full") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(ws + "/big"));
}

TEST_CASE("a 1 GiB file: diff digests it and apply writes it, neither holding it in memory") {
    const std::string ws = make_repo("review-big", {{"a.txt", "one\n"}});
    // Sparse in the box's tmpfs (the layer's cap counts written blocks only),
    // yet 1 GiB of bytes to everything that reads it: the copy-out, the
    // digests, the apply's copy.
    auto run = corral_sh("echo START; dd if=/dev/zero of=big.bin bs=1 count=0 seek=1073741823 2>/dev/null; "
                         "printf x >> big.bin; echo DONE",
                         review_args(ws));
    INFO(transcript(run.result));
    require_ran(run);
    const Peak diff = run_measuring_memory({corral_bin(), "diff", run.run_dir});
    CHECK(diff.exit_code == 0);
    const Peak applied = run_measuring_memory({corral_bin(), "apply", run.run_dir});
    CHECK(applied.exit_code == 0);
    // Each command and the children it waited for (the apply's writer, git)
    // peaked far below the file's size: it was streamed, never held.
    CHECK(diff.max_rss_kib < kStreamedMaxRssKib);
    CHECK(applied.max_rss_kib < kStreamedMaxRssKib);
    struct stat st {};
    REQUIRE(stat((ws + "/big.bin").c_str(), &st) == 0);
    CHECK(st.st_size == 1ll << 30);
    CHECK(st.st_uid == kOwnerUid);
    CHECK(journal_record(run.run_dir, -1)["payload"]["applied"] == nlohmann::json::array({"big.bin"}));
    std::filesystem::remove(ws + "/big.bin");
    std::filesystem::remove_all(run.run_dir + "/workspace/upper");
}

}  // namespace
}  // namespace corral::test::review
