// --workspace DIR: the agent works as DIR's owner (an ID-mapped bind), what it
// writes lands on disk as the owner's, and no call can leave a set-ID file on
// the host. Each script prints START first and DONE last (require_ran).
#include <doctest/doctest.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "tests/supervisor/sandbox/sandbox_support.hpp"
#include "tests/supervisor/sandbox/workspace_support.hpp"

namespace fs = std::filesystem;

namespace corral::test::sandbox {
namespace {

// Every file below `dir` with a set-user-ID or set-group-ID bit.
std::string set_id_files(const std::string& dir) {
    std::string found;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        struct stat st = stat_of(e.path().string());
        if (st.st_mode & (S_ISUID | S_ISGID)) found += e.path().string() + "\n";
    }
    return found;
}

TEST_CASE("a workspace owned by an operator's user is the agent's in the box; what it writes is the owner's on disk") {
    std::string ws = fresh_dir("ws-owned", 0755);
    REQUIRE(chown(ws.c_str(), kOwnerUid, kOwnerGid) == 0);
    write_file(ws + "/mine.txt", "owner's\n");
    REQUIRE(chown((ws + "/mine.txt").c_str(), kOwnerUid, kOwnerGid) == 0);
    write_file(ws + "/roots.txt", "root's\n");  // owned by root: not the workspace owner
    REQUIRE(chmod((ws + "/roots.txt").c_str(), 0644) == 0);
    CorralArgs args;
    args.flags = {"--workspace", ws};
    auto run = corral_sh(R"SH(echo START
echo "me=$(id -u):$(id -g)"
echo "ws-owner=$(stat -c %u:%g /workspace)"
echo "mine-owner=$(stat -c %u:%g mine.txt)"
echo "roots-owner=$(stat -c %u:%g roots.txt)"
echo appended >> mine.txt; echo "append-rc=$?"
echo nope >> roots.txt 2>/dev/null; echo "roots-write-rc=$?"
mkdir -p made/deeper && echo new > made/deeper/new.txt; echo "create-rc=$?"
chmod 0600 mine.txt; echo "chmod-rc=$?"
echo DONE)SH",
                         args);
    INFO(transcript(run.result));
    require_ran(run);
    REQUIRE(run.record.has_value());
    const std::string me = std::to_string((*run.record)["uid"].get<long long>()) + ":" +
                           std::to_string((*run.record)["gid"].get<long long>());
    CHECK(field(run.result.out, "me") == me);
    CHECK(field(run.result.out, "ws-owner") == me);
    CHECK(field(run.result.out, "mine-owner") == me);
    CHECK(field(run.result.out, "roots-owner") == "65534:65534");  // unmapped: the overflow IDs
    CHECK(field(run.result.out, "append-rc") == "0");
    CHECK(field(run.result.out, "roots-write-rc") != "0");
    CHECK(field(run.result.out, "create-rc") == "0");
    CHECK(field(run.result.out, "chmod-rc") == "0");
    // On the host: everything the agent made or changed is the owner's, nothing the run's UID's.
    CHECK(read_file(ws + "/mine.txt") == "owner's\nappended\n");
    CHECK(read_file(ws + "/roots.txt") == "root's\n");
    CHECK((stat_of(ws + "/mine.txt").st_mode & 07777) == 0600);
    for (const char* p : {"/mine.txt", "/made", "/made/deeper", "/made/deeper/new.txt"}) {
        INFO(p);
        struct stat st = stat_of(ws + p);
        CHECK(st.st_uid == kOwnerUid);
        CHECK(st.st_gid == kOwnerGid);
    }
    CHECK(stat_of(ws + "/roots.txt").st_uid == 0);
    const auto& binding = (*run.record)["workspace_binding"];
    REQUIRE(binding.is_object());
    REQUIRE(binding["idmapped"].size() == 1);
    CHECK(binding["idmapped"][0].get<std::string>().find("on-disk 41001:41002") != std::string::npos);
    CHECK(binding["unmapped"].empty());
    // The ID-mapped mount lived only in the box's mount namespace.
    CHECK(mount_lines_mentioning(ws).empty());
    check_nothing_left(run);
}

TEST_CASE("in the workspace no call can create a set-user-ID or set-group-ID file") {
    std::string ws = fresh_dir("ws-setid", 0755);
    REQUIRE(chown(ws.c_str(), kOwnerUid, kOwnerGid) == 0);
    CorralArgs args;
    args.flags = {"--workspace", ws};
    auto run = corral_sh("echo START; /bin/setid-probe; echo \"probe-rc=$?\"; echo DONE", args);
    INFO(transcript(run.result));
    require_ran(run);
    const std::string& out = run.result.out;
    CHECK(field(out, "probe-rc") == "0");
    // Plain files and modes work: the agent really writes here as the owner.
    CHECK(field(out, "open-plain") == "ok");
    CHECK(field(out, "chmod-plain") == "ok");
    CHECK(stat_of(ws + "/p-plain").st_uid == kOwnerUid);
    CHECK((stat_of(ws + "/p-plain").st_mode & 07777) == 0700);
    for (const char* call : {"open-creat-suid", "openat-creat-sgid", "creat-suid", "mknod-reg-suid", "mknodat-reg-sgid",
                             "open-tmpfile-suid", "chmod-suid", "chmod-sgid", "fchmod-suid", "fchmodat-sgid",
                             "fchmodat2-suid"}) {
        INFO(call);
        CHECK(field(out, call) == "EPERM");
    }
    CHECK(field(out, "openat2") == "ENOSYS");  // its mode is in a struct: callers fall back to openat
    CHECK(set_id_files(ws).empty());
    check_nothing_left(run);
}

TEST_CASE("a root-owned workspace is not ID-mapped: bound as is, with a warning and a record") {
    // Mapping root to the agent would make it root over everything in DIR
    // (and a shared mmap write keeps set-ID bits): never done.
    std::string ws = fresh_dir("ws-root", 0755);
    REQUIRE(stat_of(ws).st_uid == 0);
    write_file(ws + "/roots.txt", "root's\n");
    CorralArgs args;
    args.flags = {"--workspace", ws};
    auto run = corral_sh(R"SH(echo START
echo "ws-owner=$(stat -c %u /workspace)"
echo nope >> roots.txt 2>/dev/null; echo "write-rc=$?"
touch new 2>/dev/null; echo "create-rc=$?"
echo DONE)SH",
                         args);
    INFO(transcript(run.result));
    require_ran(run);
    CHECK(field(run.result.out, "ws-owner") == "0");
    CHECK(field(run.result.out, "write-rc") != "0");
    CHECK(field(run.result.out, "create-rc") != "0");
    CHECK(read_file(ws + "/roots.txt") == "root's\n");
    CHECK(run.result.err.find("owner or group is root") != std::string::npos);
    // The warning gives the fix.
    CHECK(run.result.err.find("; to let the agent write it, give it to an unprivileged user: chown -R USER:GROUP " + ws +
                              " (any owner but root;") != std::string::npos);
    REQUIRE(run.record.has_value());
    const auto& binding = (*run.record)["workspace_binding"];
    CHECK(binding["idmapped"].empty());
    REQUIRE(binding["unmapped"].size() == 1);
    CHECK(binding["unmapped"][0].get<std::string>().find("owner or group is root") != std::string::npos);
    check_nothing_left(run);
}

TEST_CASE("a workspace holding a set-ID or file-capability file its owner could rewrite is refused, naming the file") {
    std::string ws = fresh_dir("ws-suid", 0755);
    REQUIRE(chown(ws.c_str(), kOwnerUid, kOwnerGid) == 0);
    fs::create_directories(ws + "/sub/deeper");
    const std::string suid = ws + "/sub/deeper/tool";
    write_file(suid, "#!/bin/sh\n");
    REQUIRE(chown(suid.c_str(), kOwnerUid, kOwnerGid) == 0);
    REQUIRE(chmod(suid.c_str(), 04755) == 0);
    CorralArgs args;
    args.flags = {"--workspace", ws};
    auto run = corral_sh("echo START; echo INSIDE; echo DONE", args);
    INFO(transcript(run.result));
    CHECK(run.result.out.find("INSIDE") == std::string::npos);  // nothing ran
    CHECK(run.result.exit_code != 0);
    CHECK(run.result.err.find("sub/deeper/tool") != std::string::npos);
    CHECK(run.result.err.find("set-user-ID") != std::string::npos);

    // The same with file capabilities (security.capability, revision 2: cap_net_raw permitted+effective).
    REQUIRE(chmod(suid.c_str(), 0755) == 0);
    const unsigned char cap[20] = {0x01, 0x00, 0x00, 0x02, 0x00, 0x20, 0x00, 0x00};  // magic_etc, permitted[0]=1<<13
    REQUIRE(setxattr(suid.c_str(), "security.capability", cap, sizeof cap, 0) == 0);
    auto run2 = run_refused(args, "sub/deeper/tool");
    CHECK(run2.result.exit_code != 0);

    // Without the capability the workspace is fine again.
    REQUIRE(removexattr(suid.c_str(), "security.capability") == 0);
    auto run3 = corral_sh("echo START; echo DONE", args);
    INFO(transcript(run3.result));
    require_ran(run3);
    check_nothing_left(run3);
}

TEST_CASE("a UNIX socket or FIFO the agent could reach in the workspace is refused (it leads to a host process)") {
    std::string ws = fresh_dir("ws-sock", 0755);
    REQUIRE(chown(ws.c_str(), kOwnerUid, kOwnerGid) == 0);
    fs::create_directories(ws + "/.cache");
    const std::string sock_path = ws + "/.cache/devtool.sock";
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(s >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(sock_path.size() < sizeof addr.sun_path);
    std::memcpy(addr.sun_path, sock_path.c_str(), sock_path.size() + 1);
    REQUIRE(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(listen(s, 1) == 0);
    REQUIRE(chmod(sock_path.c_str(), 0600) == 0);
    REQUIRE(chown(sock_path.c_str(), kOwnerUid, kOwnerGid) == 0);  // the owner's: the agent would be it
    CorralArgs args;
    args.flags = {"--workspace", ws};
    auto run = run_refused(args, ".cache/devtool.sock is a UNIX socket the agent could connect to");
    CHECK(run.result.exit_code != 0);
    close(s);
    fs::remove(sock_path);

    REQUIRE(mkfifo((ws + "/.cache/pipe").c_str(), 0600) == 0);
    REQUIRE(chown((ws + "/.cache/pipe").c_str(), kOwnerUid, kOwnerGid) == 0);
    auto run2 = run_refused(args, ".cache/pipe is a FIFO the agent could write into");
    fs::remove(ws + "/.cache/pipe");

    // Not the agent's to use (another user's, 0600): fine.
    REQUIRE(mkfifo((ws + "/.cache/other").c_str(), 0600) == 0);
    REQUIRE(chown((ws + "/.cache/other").c_str(), kOwnerUid + 7, kOwnerGid + 7) == 0);
    auto run3 = corral_sh("echo START; echo DONE", args);
    INFO(transcript(run3.result));
    require_ran(run3);
    check_nothing_left(run3);
}

TEST_CASE("--run-dir and --rootfs must run through directories only root can change; refused before anything is made") {
    std::string users = fresh_dir("rd-user", 0755);
    REQUIRE(chown(users.c_str(), kOwnerUid, kOwnerGid) == 0);
    std::string victim = fresh_dir("rd-victim", 0755);
    REQUIRE(symlink(victim.c_str(), (users + "/runs").c_str()) == 0);  // as a sandbox acting as the owner could
    for (const std::string& run_dir : {users + "/runs/ssh", users + "/new/deeper"}) {
        CAPTURE(run_dir);
        CorralArgs args;
        args.own_run_dir = false;
        args.flags = {"--run-dir", run_dir};
        auto run = run_refused(args, "--run-dir " + run_dir + ": " + users + " is owned by uid 41001");
        CHECK(run.result.exit_code != 0);
    }
    CHECK_FALSE(fs::exists(victim + "/ssh"));   // nothing created through the link
    CHECK_FALSE(fs::exists(users + "/new"));    // nor below the user's directory
    CHECK((stat_of(victim).st_mode & 0777) == 0755);

    // ".." is resolved after the symlink before it: refused, never checked lexically.
    {
        std::string base = fresh_dir("rd-dots", 0755);
        REQUIRE(symlink(users.c_str(), (base + "/l").c_str()) == 0);
        CorralArgs a;
        a.own_run_dir = false;
        a.flags = {"--run-dir", base + "/l/../run1"};
        auto r = run_refused(a, "contains \"..\"");
        CHECK_FALSE(fs::exists(users + "/run1"));
    }
    // A missing part to be made in a directory others can write (even sticky): someone could take the name first.
    {
        std::string sticky = fresh_dir("rd-sticky", 01777);
        CorralArgs a;
        a.own_run_dir = false;
        a.flags = {"--run-dir", sticky + "/r/run1"};
        auto r = run_refused(a, sticky + " is writable by others");
        CHECK_FALSE(fs::exists(sticky + "/r"));
    }
    // An existing directory is never chmodded: an empty 0755 --run-dir is refused and left as it was...
    {
        std::string open_dir = fresh_dir("rd-open", 0755);
        CorralArgs a;
        a.own_run_dir = false;
        a.flags = {"--run-dir", open_dir};
        auto r = run_refused(a, "--run-dir " + open_dir + ": exists with mode 0755");
        CHECK((stat_of(open_dir).st_mode & 07777) == 0755);
    }
    // ...and a group-writable --state-dir too; a 0755 state dir is used as it is (its runs are 0700).
    {
        std::string group_dir = fresh_dir("sd-group", 0775);
        CorralArgs a;
        a.flags = {"--state-dir", group_dir};
        auto r = run_refused(a, "--state-dir " + group_dir + ": " + group_dir + " is writable by group or others");
        CHECK((stat_of(group_dir).st_mode & 07777) == 0775);
        std::string readable = fresh_dir("sd-readable", 0755);
        CorralArgs b;
        b.flags = {"--state-dir", readable};
        auto ok = corral_sh("echo START; echo DONE", b);
        INFO(transcript(ok.result));
        require_ran(ok);
        CHECK((stat_of(readable).st_mode & 07777) == 0755);
    }

    // A root-owned symlink leading into a sticky directory: the missing part would be made there, refused too.
    {
        std::string sticky = fresh_dir("rd-sticky2", 01777);
        std::string base = fresh_dir("rd-via", 0755);
        REQUIRE(symlink(sticky.c_str(), (base + "/lnk").c_str()) == 0);
        CorralArgs a;
        a.own_run_dir = false;
        a.flags = {"--run-dir", base + "/lnk/r/run1"};
        auto r = run_refused(a, sticky + " is writable by others");
        CHECK_FALSE(fs::exists(sticky + "/r"));
    }
    // Directories corral makes get exact modes whatever the umask: 0755 on the way, 0700 for the run dir;
    // and a state dir reached through a root-owned symlink is fine.
    {
        std::string base = fresh_dir("rd-umask", 0755);
        fs::create_directories(base + "/real-state");
        REQUIRE(chmod((base + "/real-state").c_str(), 0700) == 0);
        REQUIRE(symlink((base + "/real-state").c_str(), (base + "/state").c_str()) == 0);
        CorralArgs a;
        a.own_run_dir = false;
        a.flags = {"--run-dir", base + "/a/b/run", "--state-dir", base + "/state"};
        const mode_t old_umask = umask(0);  // inherited by corral
        auto r = corral_sh("echo START; echo DONE", a);
        umask(old_umask);
        INFO(transcript(r.result));
        require_ran(r);
        CHECK((stat_of(base + "/a").st_mode & 07777) == 0755);
        CHECK((stat_of(base + "/a/b").st_mode & 07777) == 0755);
        CHECK((stat_of(base + "/a/b/run").st_mode & 07777) == 0700);
    }

    // A root-owned link whose target runs through someone else's symlink: every step is checked, not just
    // the path as given and where it ends up now.
    {
        std::string base = fresh_dir("rd-chain", 0755);
        std::string theirs = base + "/u";
        fs::create_directories(theirs);
        std::string safe = fresh_dir("rd-chain-target", 0700);
        REQUIRE(symlink(safe.c_str(), (theirs + "/link2").c_str()) == 0);
        REQUIRE(lchown((theirs + "/link2").c_str(), kOwnerUid, kOwnerGid) == 0);
        REQUIRE(chown(theirs.c_str(), kOwnerUid, kOwnerGid) == 0);
        REQUIRE(symlink("u/link2", (base + "/l").c_str()) == 0);  // root's
        CorralArgs a;
        a.flags = {"--state-dir", base + "/l"};
        auto r = run_refused(a, theirs + " is owned by uid 41001");
    }
    // A root link whose text climbs back ("..") into a sticky directory: the missing name would be made there.
    {
        std::string sticky = fresh_dir("rd-sticky3", 01777);
        fs::create_directories(sticky + "/a");
        REQUIRE(chmod((sticky + "/a").c_str(), 0755) == 0);
        REQUIRE(symlink("../new", (sticky + "/a/l").c_str()) == 0);
        CorralArgs a;
        a.flags = {"--state-dir", sticky + "/a/l"};
        auto r = run_refused(a, sticky + " is writable by others");
        CHECK_FALSE(fs::exists(sticky + "/new"));
    }
    // A trailing slash names the same directory: made 0700 like without it.
    {
        std::string base = fresh_dir("rd-slash", 0755);
        CorralArgs a;
        a.own_run_dir = false;
        a.flags = {"--run-dir", base + "/r1/", "--state-dir", base + "/state/"};
        auto r = corral_sh("echo START; echo DONE", a);
        INFO(transcript(r.result));
        require_ran(r);
        CHECK((stat_of(base + "/r1").st_mode & 07777) == 0700);
        CHECK((stat_of(base + "/state").st_mode & 07777) == 0700);
    }

    // A reused, non-empty run dir would hand the previous run's files to the next agent.
    std::string used = fresh_dir("rd-used", 0700);
    write_file(used + "/run.json", "{}");
    CorralArgs a2;
    a2.own_run_dir = false;
    a2.flags = {"--run-dir", used};
    auto run2 = run_refused(a2, "--run-dir " + used + ": is not empty");

    // An image under a directory another user owns: the overlay's lower layer would be theirs to redirect.
    std::string image_parent = fresh_dir("img-user", 0755);
    fs::create_directories(image_parent + "/img");
    REQUIRE(chown(image_parent.c_str(), kOwnerUid, kOwnerGid) == 0);
    CorralArgs a3;
    a3.rootfs = image_parent + "/img";
    auto run3 = run_refused(a3, "--rootfs " + image_parent + "/img: " + image_parent + " is owned by uid 41001");
}

TEST_CASE("a workspace too deep to check completely is refused, not passed unchecked") {
    std::string ws = fresh_dir("ws-deep", 0755);
    std::string deep = ws;
    for (int i = 0; i < 520; ++i) deep += "/d";
    fs::create_directories(deep);
    REQUIRE(chown(ws.c_str(), kOwnerUid, kOwnerGid) == 0);
    CorralArgs args;
    args.flags = {"--workspace", ws};
    auto run = run_refused(args, "more than 512 directories deep");
    CHECK(run.result.exit_code != 0);
}

TEST_CASE("the host's root or a directory overlapping corral's records is refused as a workspace") {
    for (const std::string& ws : {std::string("/"), std::string("/run/corral"), std::string("/run")}) {
        CAPTURE(ws);
        CorralArgs args;
        args.flags = {"--workspace", ws};
        auto run = run_refused(args, "--workspace " + ws);
        CHECK(run.result.exit_code != 0);
    }
    // A run dir inside the workspace: the box could rename it and plant a link for the supervisor's writes.
    std::string ws = fresh_dir("ws-rundir", 0755);
    REQUIRE(chown(ws.c_str(), kOwnerUid, kOwnerGid) == 0);
    CorralArgs args;
    args.own_run_dir = false;
    args.flags = {"--workspace", ws, "--run-dir", ws + "/.runs/r1"};
    auto run = corral_sh("echo START; echo INSIDE; echo DONE", args);
    INFO(transcript(run.result));
    CHECK(run.result.out.find("INSIDE") == std::string::npos);
    CHECK(run.result.exit_code != 0);
    // Refused before anything else: the run dir's tree is not root's alone.
    CHECK(run.result.err.find("--run-dir " + ws + "/.runs/r1: " + ws + " is owned by uid 41001") != std::string::npos);
}

TEST_CASE("a workspace path through a symlink, a bind alias of corral's records, or a pseudo file system is refused") {
    // A link an earlier run's agent could have planted in its workspace.
    std::string home = fresh_dir("ws-links", 0755);
    std::string victim = fresh_dir("ws-victim", 0700);
    REQUIRE(chown(home.c_str(), kOwnerUid, kOwnerGid) == 0);
    REQUIRE(chown(victim.c_str(), kOwnerUid + 1, kOwnerGid + 1) == 0);
    REQUIRE(symlink(victim.c_str(), (home + "/project").c_str()) == 0);
    CorralArgs args;
    args.flags = {"--workspace", home + "/project"};
    auto run = run_refused(args, "goes through a symbolic link (it resolves to " + victim + ")");
    CHECK(run.result.exit_code != 0);

    // A bind alias of a directory that holds the run dir: found by inode, not by name.
    std::string records = fresh_dir("ws-records", 0755);
    std::string alias = fresh_dir("ws-alias", 0755);
    REQUIRE(mount(records.c_str(), alias.c_str(), nullptr, MS_BIND, nullptr) == 0);
    struct Unmount {
        std::string dir;
        ~Unmount() { umount2(dir.c_str(), MNT_DETACH); }
    } unmount{alias};
    CorralArgs a2;
    a2.own_run_dir = false;
    a2.flags = {"--workspace", alias, "--run-dir", records + "/runs/r1"};
    auto run2 = run_refused(a2, "overlaps " + records + "/runs/r1");
    CHECK(run2.result.exit_code != 0);

    for (const char* pseudo : {"/proc", "/sys/kernel", "/proc/self"}) {
        CAPTURE(pseudo);
        CorralArgs a3;
        a3.flags = {"--workspace", pseudo};
        auto run3 = corral_sh("echo START; echo INSIDE; echo DONE", a3);
        INFO(transcript(run3.result));
        CHECK(run3.result.out.find("INSIDE") == std::string::npos);
        CHECK(run3.result.exit_code != 0);
    }
}

TEST_CASE("a workspace on a file system that cannot be ID-mapped is bound as is, with a warning and a record") {
    // ramfs does not support ID-mapped mounts. Mounted on a fresh directory
    // for this test only and unmounted after it.
    std::string ws = fresh_dir("ws-ramfs", 0755);
    REQUIRE_MESSAGE(mount("corral-test-ramfs", ws.c_str(), "ramfs", MS_NOSUID | MS_NODEV, "mode=0755") == 0,
                    "mount ramfs on " << ws);
    struct Unmount {
        std::string dir;
        ~Unmount() { umount2(dir.c_str(), MNT_DETACH); }
    } unmount{ws};
    REQUIRE(chown(ws.c_str(), kOwnerUid, kOwnerGid) == 0);  // not root's: the mapping is really tried
    CorralArgs args;
    args.flags = {"--workspace", ws};
    auto run = corral_sh(R"SH(echo START
echo "ws-owner=$(stat -c %u /workspace)"
touch /workspace/x 2>/dev/null; echo "touch-rc=$?"
echo DONE)SH",
                         args);
    INFO(transcript(run.result));
    require_ran(run);
    CHECK(run.result.exit_code == 0);
    CHECK(field(run.result.out, "ws-owner") == std::to_string(kOwnerUid));
    CHECK(field(run.result.out, "touch-rc") != "0");  // the owner's 0755 directory: the agent may not write
    CHECK(run.result.err.find("cannot be ID-mapped") != std::string::npos);
    CHECK(run.result.err.find("bound as is") != std::string::npos);
    REQUIRE(run.record.has_value());
    const auto& binding = (*run.record)["workspace_binding"];
    CHECK(binding["idmapped"].empty());
    REQUIRE(binding["unmapped"].size() == 1);
    CHECK(binding["unmapped"][0].get<std::string>().find("mount_setattr") != std::string::npos);
    check_nothing_left(run);
}

TEST_CASE("without --workspace, run.json's workspace_binding is null") {
    auto run = corral_sh("echo START; echo DONE");
    INFO(transcript(run.result));
    require_ran(run);
    REQUIRE(run.record.has_value());
    CHECK((*run.record)["workspace_binding"].is_null());
    check_nothing_left(run);
}

}  // namespace
}  // namespace corral::test::sandbox
