// rootfs/hazard_scan on real trees the test makes (no root needed: the test's
// own files are the agent's, as a workspace owner's are): large enough that
// the scan shares the tree among threads, with one hazard placed deep in it.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "base/fd.hpp"
#include "base/sys_error.hpp"
#include "rootfs/hazard_scan.hpp"
#include "tests/support/temp_dir.hpp"

using namespace corral;
using rootfs::AgentWrites;

namespace {

// DIRS directories of FILES empty files each, below `root`: d000/f00 ...
void make_tree(const std::string& root, int dirs, int files) {
    for (int d = 0; d < dirs; ++d) {
        char dir[32];
        std::snprintf(dir, sizeof dir, "/d%03d", d);
        const std::string path = root + dir;
        REQUIRE(mkdir(path.c_str(), 0755) == 0);
        for (int f = 0; f < files; ++f) {
            const std::string file = path + "/f" + std::to_string(f);
            int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            REQUIRE(fd >= 0);
            close(fd);
        }
    }
}

AgentWrites the_agent() { return AgentWrites{getuid(), getgid()}; }

// The refusal's text, or "" when the tree is accepted.
std::string refusal_of(const std::string& root, AgentWrites who) {
    Fd tree(open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(tree.valid());
    try {
        rootfs::refuse_hazards(tree.get(), who, root, "--workspace");
    } catch (const UsageError& e) {
        return e.what();
    }
    return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

unsigned cpus() { return std::thread::hardware_concurrency(); }

}  // namespace

TEST_CASE("a large tree: a FIFO deep in it is found, whichever thread lists its directory") {
    test::TempDir ws("corral-hazard-scan");
    make_tree(ws.path(), 60, 100);  // 6 060 entries: past the helpers' threshold
    const std::string deep = ws.path() + "/d047/inner/most";
    REQUIRE(mkdir((ws.path() + "/d047/inner").c_str(), 0755) == 0);
    REQUIRE(mkdir(deep.c_str(), 0755) == 0);
    REQUIRE(mkfifo((deep + "/pipe").c_str(), 0600) == 0);

    const std::string refusal = refusal_of(ws.path(), the_agent());
    CHECK(contains(refusal, "--workspace " + ws.path() + ": " + deep + "/pipe is a FIFO the agent could write into"));
    if (cpus() > 1) CHECK(rootfs::last_hazard_scan_threads() > 1);
    else MESSAGE("one CPU: the scan ran on the calling thread alone");

    SUBCASE("the same tree without it is accepted, every entry seen") {
        REQUIRE(unlink((deep + "/pipe").c_str()) == 0);
        CHECK(refusal_of(ws.path(), the_agent()).empty());
    }
    SUBCASE("attached as is, a FIFO only its owner may write is no hazard") {
        CHECK(refusal_of(ws.path(), AgentWrites{static_cast<uid_t>(-1), static_cast<gid_t>(-1)}).empty());
    }
}

TEST_CASE("a large tree: a set-user-ID file of the agent's is refused") {
    test::TempDir ws("corral-hazard-scan");
    make_tree(ws.path(), 50, 100);
    const std::string file = ws.path() + "/d013/f77";
    REQUIRE(chmod(file.c_str(), 04755) == 0);
    CHECK(contains(refusal_of(ws.path(), the_agent()), file + " is set-user-ID, set-group-ID or has file capabilities"));
}

TEST_CASE("a small tree is scanned by the calling thread alone") {
    test::TempDir ws("corral-hazard-scan");
    make_tree(ws.path(), 3, 10);
    CHECK(refusal_of(ws.path(), the_agent()).empty());
    CHECK(rootfs::last_hazard_scan_threads() == 1);
}

TEST_CASE("a tree deeper than the limit is refused, also when it hangs below a large one") {
    test::TempDir ws("corral-hazard-scan");
    make_tree(ws.path(), 45, 100);
    std::string path = ws.path() + "/d030";
    for (int i = 0; i < rootfs::kMaxHazardScanDepth + 2; ++i) {
        path += "/x";
        REQUIRE(mkdir(path.c_str(), 0755) == 0);
    }
    CHECK(contains(refusal_of(ws.path(), the_agent()), "it is more than 512 directories deep"));
}
