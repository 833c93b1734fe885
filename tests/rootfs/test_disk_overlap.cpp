// tests/rootfs/test_disk_overlap.cpp — rootfs/disk_overlap on real
// directories: a symlink, a ".." after one, a parent, and every other mount
// of one tree (a bind mount of the directory, of an ancestor, of a
// subdirectory) are seen for what they are on disk. The bind mounts are made
// in a forked child's own mount namespace (the host's mount table is never
// touched). Root only (exit 77 otherwise).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "base/fd.hpp"
#include "rootfs/disk_overlap.hpp"
#include "tests/support/in_child.hpp"
#include "tests/support/temp_dir.hpp"

using namespace corral;
using rootfs::DiskOverlap;

namespace {

// DIR/a/ws/sub, DIR/b, DIR/mnt/{alias,up,sub}.
struct Tree {
    test::TempDir t{"corral-disk-overlap"};
    std::string dir = t.path();
    Tree() {
        for (const char* d : {"a", "a/ws", "a/ws/sub", "a/ws/sub/deep", "b", "mnt", "mnt/alias", "mnt/up", "mnt/sub", "links"})
            REQUIRE(mkdir((dir + "/" + d).c_str(), 0755) == 0);
    }
};

Fd open_dir(const std::string& path) { return Fd(open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)); }

// How `a` relates to `b`, as a word; "open failed" / "threw: ..." else.
std::string relation(const std::string& a, const std::string& b) {
    Fd fa = open_dir(a), fb = open_dir(b);
    if (!fa.valid() || !fb.valid()) return "open failed";
    try {
        switch (rootfs::disk_overlap(fa.get(), fb.get())) {
            case DiskOverlap::none: return "none";
            case DiskOverlap::same: return "same";
            case DiskOverlap::inside: return "inside";
            case DiskOverlap::contains: return "contains";
        }
    } catch (const std::exception& e) {
        return std::string("threw: ") + e.what();
    }
    return "?";
}

// Runs `body` in a forked child with a private mount namespace of its own
// and returns what it wrote, or "child failed: STATUS".
std::string in_own_mount_namespace(const std::function<std::string()>& body) {
    return test::in_child([&]() -> std::string {
        if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
            return std::string("unshare/mount: ") + std::strerror(errno);
        return body();
    });
}

std::string bind(const std::string& from, const std::string& to) {
    if (mount(from.c_str(), to.c_str(), nullptr, MS_BIND, nullptr) != 0)
        return "mount " + from + " " + to + ": " + std::strerror(errno);
    return "";
}

}  // namespace

TEST_CASE("disk_overlap: paths that name the same tree differently") {
    Tree t;
    const std::string ws = t.dir + "/a/ws";
    REQUIRE(symlink(ws.c_str(), (t.dir + "/links/ws").c_str()) == 0);
    REQUIRE(symlink((ws + "/sub/deep").c_str(), (t.dir + "/links/deep").c_str()) == 0);
    CHECK(relation(t.dir + "/links/ws", ws) == "same");
    CHECK(relation(t.dir + "/links/deep/..", ws) == "inside");    // lexically DIR/links
    CHECK(relation(t.dir + "/b/../a/ws/sub", ws) == "inside");
    CHECK(relation(t.dir + "/a", ws) == "contains");
    CHECK(relation(ws, t.dir + "/links/deep/../..") == "same");
    CHECK(relation(t.dir + "/b", ws) == "none");
    CHECK(relation(ws, t.dir + "/b") == "none");
}

TEST_CASE("disk_overlap: a bind mount of the directory, of an ancestor and of a subdirectory") {
    Tree t;
    const std::string ws = t.dir + "/a/ws";
    const std::string seen = in_own_mount_namespace([&] {
        for (const auto& [from, to] : {std::pair{ws, t.dir + "/mnt/alias"}, std::pair{t.dir + "/a", t.dir + "/mnt/up"},
                                       std::pair{ws + "/sub", t.dir + "/mnt/sub"}})
            if (auto err = bind(from, to); !err.empty()) return err;
        std::string out;
        out += "alias:" + relation(t.dir + "/mnt/alias", ws) + " ";
        out += "alias-below:" + relation(t.dir + "/mnt/alias/sub", ws) + " ";
        out += "up:" + relation(t.dir + "/mnt/up", ws) + " ";
        out += "up-ws:" + relation(t.dir + "/mnt/up/ws", ws) + " ";
        out += "sub:" + relation(t.dir + "/mnt/sub", ws) + " ";
        out += "sub-deep:" + relation(t.dir + "/mnt/sub/deep", ws) + " ";
        out += "ws-in-sub:" + relation(ws, t.dir + "/mnt/sub") + " ";
        out += "b:" + relation(t.dir + "/b", t.dir + "/mnt/sub");
        return out;
    });
    CHECK(seen ==
          "alias:same alias-below:inside up:contains up-ws:same sub:inside sub-deep:inside ws-in-sub:contains b:none");
}

int main(int argc, char** argv) {
    if (geteuid() != 0) {
        std::puts("SKIP: the disk overlap tests make bind mounts in a mount namespace of their own; they need root");
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
