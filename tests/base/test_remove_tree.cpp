// remove_tree_at: a tree as deep as its author liked, removed with one
// directory fd at a time (base/remove_tree.*).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "base/fd.hpp"
#include "base/remove_tree.hpp"
#include "tests/support/temp_dir.hpp"

using namespace corral;
namespace fs = std::filesystem;

namespace {

// DIR/top/d/d/d/... `depth` directories deep, a file in each, made by fd so
// no path ever grows past PATH_MAX.
void make_deep_tree(const std::string& dir, int depth) {
    Fd cur(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(cur.valid());
    const char* name = "top";
    for (int i = 0; i < depth; ++i) {
        REQUIRE(::mkdirat(cur.get(), name, 0755) == 0);
        Fd next(::openat(cur.get(), name, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        REQUIRE(next.valid());
        Fd file(::openat(next.get(), "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
        REQUIRE(file.valid());
        cur = std::move(next);
        name = "d";
    }
}

// Lowers RLIMIT_NOFILE for the scope: a removal that held an fd per level would fail.
struct FewFds {
    rlimit saved{};
    explicit FewFds(rlim_t n) {
        ::getrlimit(RLIMIT_NOFILE, &saved);
        rlimit low{n, saved.rlim_max};
        REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
    }
    ~FewFds() { ::setrlimit(RLIMIT_NOFILE, &saved); }
};

}  // namespace

TEST_CASE("remove_tree_at removes a tree 25 000 directories deep with 32 fds to spare") {
    test::TempDir dir("corral-remove-tree");
    make_deep_tree(dir.path(), 25'000);
    {
        FewFds few(32);
        remove_tree_at(AT_FDCWD, dir / "top");
    }
    CHECK_FALSE(fs::exists(fs::symlink_status(dir / "top")));
}

TEST_CASE("remove_tree_at never follows a symlink, takes wide directories and files, and a missing name is fine") {
    test::TempDir dir("corral-remove-tree");
    const std::string outside = dir.write("outside/keep", "kept");
    fs::create_directories(dir / "tree/a/b");
    for (int i = 0; i < 2000; ++i) dir.write("tree/a/wide-" + std::to_string(i), "x");
    fs::create_directory_symlink(dir / "outside", dir / "tree/a/b/link-to-outside");
    fs::create_symlink(outside, dir / "tree/file-link");
    Fd base(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(base.valid());
    remove_tree_at(base.get(), "tree");
    CHECK_FALSE(fs::exists(fs::symlink_status(dir / "tree")));
    CHECK(fs::exists(outside));  // the links were removed, not followed
    remove_tree_at(base.get(), "tree");  // already gone: fine
    dir.write("plain", "p");
    remove_tree_at(base.get(), "plain");  // not a directory: unlinked
    CHECK_FALSE(fs::exists(dir / "plain"));
}
