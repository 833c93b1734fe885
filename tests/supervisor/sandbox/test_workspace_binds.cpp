// --workspace's companions: a git worktree as the workspace, --bind and
// --ro-bind (writable as the source's owner, or not at all, with the
// workspace's refusals), and the scratch and /tmp sizes. Each script prints
// START first and DONE last (require_ran).
#include <doctest/doctest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/supervisor/sandbox/sandbox_support.hpp"
#include "tests/supervisor/sandbox/workspace_support.hpp"

namespace fs = std::filesystem;

namespace corral::test::sandbox {
namespace {

// `git -C DIR ARGS...` on the host as root, failing the test if it fails.
void git(const std::string& dir, std::vector<std::string> args) {
    std::vector<std::string> argv{"git", "-c", "safe.directory=*", "-C", dir};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions o;
    o.env["GIT_CONFIG_NOSYSTEM"] = "1";
    o.env["HOME"] = "/nonexistent";
    auto r = run(argv, o);
    REQUIRE_MESSAGE(r.exit_code == 0, "git " << args.front() << ": " << r.err);
}

}  // namespace

TEST_CASE("a git worktree as the workspace: its .git file works once the main repository's .git is bound at its path") {
    if (::access("/usr/bin/git", X_OK) != 0) {
        MESSAGE("skipped: /usr/bin/git is not installed on the host (the box runs the host's git)");
        return;
    }
    const std::string base = fresh_dir("git-worktree", 0755);
    const std::string repo = base + "/repo", tree = base + "/wt";
    fs::create_directories(repo);
    git(repo, {"init", "-q", "-b", "main"});
    write_file(repo + "/README", "hello\n");
    git(repo, {"add", "README"});
    git(repo, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first"});
    git(repo, {"worktree", "add", "-q", "-b", "feature", tree});
    // Both belong to an operator's user, as a developer's checkout would.
    for (const auto& e : fs::recursive_directory_iterator(base))
        REQUIRE(lchown(e.path().c_str(), kOwnerUid, kOwnerGid) == 0);
    REQUIRE(chown(base.c_str(), kOwnerUid, kOwnerGid) == 0);
    write_file(tree + "/new.txt", "from the box\n");
    REQUIRE(chown((tree + "/new.txt").c_str(), kOwnerUid, kOwnerGid) == 0);
    const std::string script = R"SH(echo START
export GIT_CONFIG_NOSYSTEM=1
git status --porcelain --branch > /tmp/status 2>&1; echo "status-rc=$?"
cat /tmp/status
echo "branch=$(git rev-parse --abbrev-ref HEAD 2>&1)"
echo DONE)SH";

    // Without the main repository's .git the worktree's .git file leads nowhere.
    CorralArgs without;
    without.rootfs = "host";
    without.flags = {"--workspace", tree};
    auto lost = corral_sh(script, without);
    INFO(transcript(lost.result));
    require_ran(lost);
    CHECK(field(lost.result.out, "status-rc") != "0");

    CorralArgs args;
    args.rootfs = "host";
    args.flags = {"--workspace", tree, "--ro-bind", repo + "/.git:" + repo + "/.git"};
    auto r = corral_sh(script, args);
    INFO(transcript(r.result));
    require_ran(r);
    CHECK(field(r.result.out, "status-rc") == "0");
    CHECK(r.result.out.find("## feature") != std::string::npos);
    CHECK(r.result.out.find("?? new.txt") != std::string::npos);
    CHECK(field(r.result.out, "branch") == "feature");
    REQUIRE(r.record.has_value());
    CHECK((*r.record)["binds"][0]["target"] == repo + "/.git");
    CHECK(mount_lines_mentioning(repo).empty());
    check_nothing_left(r);
}

TEST_CASE("--bind is writable as the source's owner, --ro-bind is not writable at all; a single file as well") {
    const std::string src = fresh_dir("bind-src", 0755);
    REQUIRE(chown(src.c_str(), kOwnerUid, kOwnerGid) == 0);
    const std::string ro = fresh_dir("ro-bind-src", 0755);
    REQUIRE(chown(ro.c_str(), kOwnerUid, kOwnerGid) == 0);
    write_file(ro + "/keep.txt", "keep\n");
    // Single files (issue 35); /opt/conf does not exist in the box: made as a
    // directory, the file's mount point a file in it.
    const std::string files = fresh_dir("bind-files", 0755);
    const std::string rw_file = files + "/app.conf", ro_file = files + "/token.txt";
    write_file(rw_file, "first\n");
    write_file(ro_file, "token\n");
    for (const auto& f : {rw_file, ro_file}) REQUIRE(chown(f.c_str(), kOwnerUid, kOwnerGid) == 0);
    CorralArgs args;
    args.flags = {"--bind", src + ":/opt/data/rw", "--ro-bind", ro + ":/srv/ro", "--bind", rw_file + ":/opt/conf/app.conf",
                  "--ro-bind", ro_file + ":/srv/token.txt"};
    auto r = corral_sh(R"SH(echo START
echo made > /opt/data/rw/made.txt; echo "rw-rc=$?"
echo "rw-owner=$(stat -c %u /opt/data/rw)"
echo nope > /srv/ro/new.txt 2>/dev/null; echo "ro-rc=$?"
echo "ro-read=$(cat /srv/ro/keep.txt)"
echo "file-read=$(cat /opt/conf/app.conf)"
echo second >> /opt/conf/app.conf; echo "file-rc=$?"
echo "file=$(stat -c '%u %F' /opt/conf/app.conf)"
echo nope >> /srv/token.txt 2>/dev/null; echo "ro-file-rc=$?"
echo "ro-file-read=$(cat /srv/token.txt)"
echo DONE)SH",
                       args);
    INFO(transcript(r.result));
    require_ran(r);
    CHECK(field(r.result.out, "rw-rc") == "0");
    CHECK(field(r.result.out, "ro-rc") != "0");
    CHECK(field(r.result.out, "ro-read") == "keep");
    REQUIRE(r.record.has_value());
    const std::string agent_uid = std::to_string((*r.record)["uid"].get<long long>());
    CHECK(field(r.result.out, "rw-owner") == agent_uid);
    CHECK(read_file(src + "/made.txt") == "made\n");
    CHECK(stat_of(src + "/made.txt").st_uid == kOwnerUid);
    CHECK_FALSE(fs::exists(ro + "/new.txt"));
    CHECK(field(r.result.out, "file-read") == "first");
    CHECK(field(r.result.out, "file-rc") == "0");
    CHECK(field(r.result.out, "file") == agent_uid + " regular file");
    CHECK(field(r.result.out, "ro-file-rc") != "0");
    CHECK(field(r.result.out, "ro-file-read") == "token");
    CHECK(read_file(rw_file) == "first\nsecond\n");
    CHECK(stat_of(rw_file).st_uid == kOwnerUid);
    CHECK(read_file(ro_file) == "token\n");
    check_nothing_left(r);
}

TEST_CASE("a single file that is set-ID, or no regular file, is refused as a --bind source") {
    const std::string dir = fresh_dir("bind-files", 0755);
    const std::string setid = dir + "/app.conf";
    write_file(setid, "first\n");
    REQUIRE(chown(setid.c_str(), kOwnerUid, kOwnerGid) == 0);
    REQUIRE(chmod(setid.c_str(), 04755) == 0);  // the agent, as its owner, could rewrite a set-user-ID file
    CorralArgs args;
    args.flags = {"--bind", setid + ":/opt/app.conf"};
    run_refused(args, "--bind " + setid + ": is set-user-ID, set-group-ID or has file capabilities");
    const std::string fifo = dir + "/fifo";
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    args.flags = {"--ro-bind", fifo + ":/opt/fifo"};
    run_refused(args, "--ro-bind " + fifo + ": is neither a directory nor a regular file; allowed: one of them");
}

TEST_CASE("--bind sources get the workspace's refusals: a socket the agent could reach, a symlinked path, /") {
    const std::string holder = fresh_dir("bind-socket", 0755);
    REQUIRE(chown(holder.c_str(), kOwnerUid, kOwnerGid) == 0);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(s >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string sock = holder + "/s.sock";
    std::strncpy(addr.sun_path, sock.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(lchown(sock.c_str(), kOwnerUid, kOwnerGid) == 0);  // the agent, as its owner, could connect
    CorralArgs args;
    args.flags = {"--bind", holder + ":/data"};
    run_refused(args, "--bind " + holder + ": " + sock + " is a UNIX socket");
    close(s);

    const std::string real = fresh_dir("bind-real", 0755);
    const std::string link = fresh_path("bind-link");
    fs::create_directory_symlink(real, link);
    args.flags = {"--ro-bind", link + ":/data"};
    run_refused(args, "--ro-bind " + link + ": its path goes through a symbolic link");

    args.flags = {"--bind", "/:/data"};
    run_refused(args, "--bind /: the host's root directory cannot be shown to the box");
}

TEST_CASE("--scratch-size 512M lets a 300 MB write succeed that the default 256 MiB scratch stops; --tmp-size caps /tmp") {
    const std::string write300 = R"SH(echo START
dd if=/dev/zero of=$HOME/big bs=1M count=300 2>/dev/null; echo "dd-rc=$?"
echo "tmp-kb=$(df -k /tmp | tail -1 | awk '{print $2}')"
echo DONE)SH";
    CorralArgs small;
    auto stopped = corral_sh(write300, small);
    INFO(transcript(stopped.result));
    require_ran(stopped);
    CHECK(field(stopped.result.out, "dd-rc") != "0");
    CorralArgs big;
    big.flags = {"--scratch-size", "512M", "--tmp-size", "8M"};
    auto r = corral_sh(write300, big);
    INFO(transcript(r.result));
    require_ran(r);
    CHECK(field(r.result.out, "dd-rc") == "0");
    CHECK(field(r.result.out, "tmp-kb") == "8192");
    check_nothing_left(r);
}

}  // namespace corral::test::sandbox
