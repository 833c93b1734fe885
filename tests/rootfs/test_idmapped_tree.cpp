// rootfs/idmapped_tree against the kernel: the user namespace an ID-mapped
// mount reads through, the detached copy attached in a mount namespace of a
// child's own (the host's mount table is never touched), and every source
// the function refuses. Root only (exit 77 otherwise).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "base/sys_error.hpp"
#include "rootfs/idmapped_tree.hpp"
#include "tests/support/in_child.hpp"
#include "tests/support/temp_dir.hpp"

using namespace corral;
using rootfs::IdmapRefusal;
using rootfs::OwnerMapping;
using test::in_child;

namespace {

// On-disk owner of the test's workspaces, and the agent it is shown as.
constexpr uid_t kDiskUid = 1899999201;
constexpr gid_t kDiskGid = 1899999202;
constexpr uid_t kBoxUid = 1899999001;  // below corral's default range: no real run's lease
constexpr gid_t kBoxGid = 1899999002;

OwnerMapping agent_mapping() { return OwnerMapping{.disk_uid = 0, .disk_gid = 0, .box_uid = kBoxUid, .box_gid = kBoxGid}; }

std::string errno_line(const char* call) { return std::string(call) + ": " + std::strerror(errno); }

// A workspace owned by kDiskUid:kDiskGid with one file of its owner's and
// one of a stranger's.
struct Workspace {
    test::TempDir base{"corral-idmap"};
    std::string dir = base / "ws";
    Workspace() {
        REQUIRE(chmod(base.path().c_str(), 0755) == 0);
        REQUIRE(mkdir(dir.c_str(), 0755) == 0);
        base.write("ws/mine", "mine\n");
        base.write("ws/stranger", "theirs\n");
        REQUIRE(chown(dir.c_str(), kDiskUid, kDiskGid) == 0);
        REQUIRE(chown((dir + "/mine").c_str(), kDiskUid, kDiskGid) == 0);
        REQUIRE(chown((dir + "/stranger").c_str(), 4321, 4321) == 0);
    }
};

// In a child: a private mount namespace, the tree attached at `target`, then
// (as the agent) the owners seen there and a file created through it.
std::string attach_and_look(const rootfs::IdmappedTree& t, const std::string& target) {
    return in_child([&]() -> std::string {
        if (unshare(CLONE_NEWNS) != 0) return errno_line("unshare");
        if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno_line("mount(MS_PRIVATE)");
        if (move_mount(t.tree.get(), "", AT_FDCWD, target.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0)
            return errno_line("move_mount");
        std::ostringstream out;
        struct stat st {};
        for (const char* name : {"", "/mine", "/stranger"}) {
            if (stat((target + name).c_str(), &st) != 0) return errno_line("stat");
            out << (name[0] ? name + 1 : ".") << "=" << st.st_uid << ":" << st.st_gid << "\n";
        }
        if (setresgid(kBoxGid, kBoxGid, kBoxGid) != 0 || setresuid(kBoxUid, kBoxUid, kBoxUid) != 0)
            return errno_line("setresuid");
        int fd = open((target + "/made-by-agent").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        out << "create=" << (fd >= 0 ? "ok" : std::strerror(errno)) << "\n";
        if (fd >= 0) close(fd);
        return out.str();
    });
}

std::string refusal_of(const std::string& source, const std::vector<std::string>& protected_dirs = {}) {
    OwnerMapping m = agent_mapping();
    try {
        rootfs::idmapped_tree("--workspace", source, m, protected_dirs);
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

bool mounted_anywhere_here(const std::string& path) {
    std::ifstream in("/proc/self/mountinfo");
    for (std::string line; std::getline(in, line);)
        if (contains(line, " " + path + " ")) return true;
    return false;
}

}  // namespace

TEST_CASE("user_namespace_mapping: a namespace mapping exactly the disk IDs to the box's, and no child left behind") {
    OwnerMapping m{.disk_uid = kDiskUid, .disk_gid = kDiskGid, .box_uid = kBoxUid, .box_gid = kBoxGid};
    Fd ns = rootfs::user_namespace_mapping(m);
    REQUIRE(ns.valid());
    errno = 0;
    CHECK(waitpid(-1, nullptr, WNOHANG) == -1);  // the parked child was killed and reaped
    CHECK(errno == ECHILD);
    std::string maps = in_child([&]() -> std::string {
        if (setns(ns.get(), CLONE_NEWUSER) != 0) return errno_line("setns");
        std::ostringstream out;
        for (const char* f : {"/proc/self/uid_map", "/proc/self/gid_map"}) {
            std::ifstream in(f);
            unsigned long inside = 0, outside = 0, count = 0;
            in >> inside >> outside >> count;
            std::string more;
            in >> more;  // exactly one line
            out << inside << " " << outside << " " << count << (more.empty() ? "" : " and more") << "\n";
        }
        return out.str();
    });
    CHECK(maps == std::to_string(kDiskUid) + " " + std::to_string(kBoxUid) + " 1\n" + std::to_string(kDiskGid) + " " +
                      std::to_string(kBoxGid) + " 1\n");
}

TEST_CASE("the workspace's owner shows as the agent, a stranger as nobody, and what the agent makes is the owner's on disk") {
    Workspace ws;
    OwnerMapping m = agent_mapping();
    rootfs::IdmappedTree t = rootfs::idmapped_tree("--workspace", ws.dir, m, {"/proc", "/sys"});
    REQUIRE(t.tree.valid());
    REQUIRE_MESSAGE(t.refusal == IdmapRefusal::none, t.detail);
    CHECK(m.disk_uid == kDiskUid);  // written back from the directory itself
    CHECK(m.disk_gid == kDiskGid);
    const std::string target = ws.base / "target";
    REQUIRE(mkdir(target.c_str(), 0755) == 0);
    const std::string box = std::to_string(kBoxUid) + ":" + std::to_string(kBoxGid);
    CHECK(attach_and_look(t, target) ==
          ".=" + box + "\nmine=" + box + "\nstranger=65534:65534\ncreate=ok\n");
    struct stat st {};
    REQUIRE(stat((ws.dir + "/made-by-agent").c_str(), &st) == 0);
    CHECK(st.st_uid == kDiskUid);
    CHECK(st.st_gid == kDiskGid);
    CHECK_FALSE(mounted_anywhere_here(target));  // the host's mount table is untouched
}

TEST_CASE("the copy is not recursive: a mount below the source is not in it") {
    Workspace ws;
    const std::string target = ws.base / "target";
    REQUIRE(mkdir(target.c_str(), 0755) == 0);
    REQUIRE(mkdir((ws.dir + "/sub").c_str(), 0755) == 0);
    std::string seen = in_child([&]() -> std::string {
        if (unshare(CLONE_NEWNS) != 0) return errno_line("unshare");
        if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno_line("mount(MS_PRIVATE)");
        if (mount("corral-test", (ws.dir + "/sub").c_str(), "tmpfs", 0, "size=64k") != 0) return errno_line("mount(tmpfs)");
        if (FILE* f = std::fopen((ws.dir + "/sub/on-submount").c_str(), "w")) std::fclose(f);
        else return errno_line("fopen");
        OwnerMapping m = agent_mapping();
        rootfs::IdmappedTree t = rootfs::idmapped_tree("--workspace", ws.dir, m, {});
        if (move_mount(t.tree.get(), "", AT_FDCWD, target.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0)
            return errno_line("move_mount");
        return access((target + "/sub/on-submount").c_str(), F_OK) == 0 ? "submount visible" : "submount absent";
    });
    CHECK(seen == "submount absent");
}

TEST_CASE("a root-owned source is copied as is, with the refusal and why") {
    test::TempDir base("corral-idmap-root");
    REQUIRE(chmod(base.path().c_str(), 0755) == 0);
    OwnerMapping m = agent_mapping();
    rootfs::IdmappedTree t = rootfs::idmapped_tree("--workspace", base.path(), m, {});
    CHECK(t.tree.valid());
    CHECK(t.refusal == IdmapRefusal::owned_by_root);
    CHECK(contains(t.detail, "its owner or group is root"));
}

TEST_CASE("refused sources: /, a path through a symlink, a pseudo file system, a protected directory either way") {
    Workspace ws;
    CHECK(contains(refusal_of("/"), "is the host's root directory"));
    REQUIRE(symlink(ws.dir.c_str(), (ws.base / "link").c_str()) == 0);
    CHECK(contains(refusal_of(ws.base / "link"), "its path goes through a symbolic link (it resolves to " + ws.dir + ")"));
    CHECK(contains(refusal_of("/proc/sys"), "is on a kernel pseudo file system"));
    CHECK(contains(refusal_of(ws.dir, {ws.base.path()}), "overlaps " + ws.base.path()));  // inside a protected dir
    REQUIRE(mkdir((ws.dir + "/records").c_str(), 0755) == 0);
    CHECK(contains(refusal_of(ws.dir, {ws.dir + "/records"}), "overlaps " + ws.dir + "/records"));  // around one
    CHECK(refusal_of(ws.dir, {ws.base / "elsewhere"}).empty());  // a protected dir that does not exist
}

TEST_CASE("refused contents: a set-ID file, a socket or a FIFO the agent could use; a set-ID file it cannot write is fine") {
    Workspace ws;
    const std::string deep = ws.dir + "/a/b";
    REQUIRE(mkdir((ws.dir + "/a").c_str(), 0755) == 0);
    REQUIRE(mkdir(deep.c_str(), 0755) == 0);

    SUBCASE("set-user-ID, the owner's") {
        std::string f = ws.base.write("ws/a/b/tool", "#!/bin/sh\n", 04755);
        REQUIRE(chown(f.c_str(), kDiskUid, kDiskGid) == 0);
        REQUIRE(chmod(f.c_str(), 04755) == 0);  // chown cleared the bit
        CHECK(contains(refusal_of(ws.dir), f + " is set-user-ID, set-group-ID or has file capabilities"));
    }
    SUBCASE("set-group-ID, group-writable for the owner's group") {
        std::string f = ws.base.write("ws/a/b/tool", "#!/bin/sh\n");
        REQUIRE(chown(f.c_str(), 4321, kDiskGid) == 0);
        REQUIRE(chmod(f.c_str(), 02775) == 0);
        CHECK(contains(refusal_of(ws.dir), f + " is set-user-ID, set-group-ID"));
    }
    SUBCASE("set-user-ID of a stranger, not writable by the agent: accepted") {
        std::string f = ws.base.write("ws/a/b/tool", "#!/bin/sh\n");
        REQUIRE(chown(f.c_str(), 4321, 4321) == 0);
        REQUIRE(chmod(f.c_str(), 04755) == 0);
        CHECK(refusal_of(ws.dir).empty());
    }
    SUBCASE("a UNIX socket the owner may connect to") {
        const std::string path = deep + "/agent.sock";
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        REQUIRE(s >= 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
        REQUIRE(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        close(s);
        REQUIRE(chown(path.c_str(), kDiskUid, kDiskGid) == 0);
        CHECK(contains(refusal_of(ws.dir), path + " is a UNIX socket the agent could connect to"));
    }
    SUBCASE("a FIFO the owner may write") {
        const std::string path = deep + "/pipe";
        REQUIRE(mkfifo(path.c_str(), 0600) == 0);
        REQUIRE(chown(path.c_str(), kDiskUid, kDiskGid) == 0);
        CHECK(contains(refusal_of(ws.dir), path + " is a FIFO the agent could write into"));
    }
}

int main(int argc, char** argv) {
    if (geteuid() != 0) {
        std::puts("SKIP: the ID-mapped tree tests make user and mount namespaces and chown fixtures; they need root");
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
