// rootfs/host_paths on real directories: paths that only root can change are
// accepted (and resolved), every way someone else could redirect root's
// writes is refused with the option, the path and the culprit named.
// Root only (exit 77 otherwise): the fixtures chown to other users.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/sys_error.hpp"
#include "rootfs/host_paths.hpp"
#include "tests/support/temp_dir.hpp"

using namespace corral;
using corral::rootfs::open_root_only_dir;
using corral::rootfs::require_root_only_tree;

namespace {

constexpr uid_t kOther = 1899999101;  // nobody's: below corral's default UID range

// A root-owned 0755 directory in /tmp (sticky, root's), so paths below it are root-only.
struct Base {
    test::TempDir dir{"corral-host-paths"};
    Base() { REQUIRE(chmod(dir.path().c_str(), 0755) == 0); }
    std::string mkdir(const std::string& rel, mode_t mode = 0755, uid_t owner = 0) const {
        std::string p = dir / rel;
        REQUIRE(::mkdir(p.c_str(), 0700) == 0);
        REQUIRE(chmod(p.c_str(), mode) == 0);
        REQUIRE(chown(p.c_str(), owner, owner) == 0);
        return p;
    }
};

std::string refusal_of(const std::string& path) {
    try {
        require_root_only_tree("--state-dir", path);
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a path through root's own directories is accepted and comes back real") {
    Base b;
    std::string d = b.mkdir("state");
    CHECK(require_root_only_tree("--state-dir", d) == d);
    CHECK(require_root_only_tree("--state-dir", "/usr") == "/usr");
    // Missing parts below a directory only root can write: root will make them.
    CHECK(require_root_only_tree("--state-dir", d + "/runs/new") == d + "/runs/new");
    // A root-owned symlink to a root-only directory resolves to its target.
    REQUIRE(symlink(d.c_str(), (b.dir / "link").c_str()) == 0);
    CHECK(require_root_only_tree("--state-dir", b.dir / "link") == d);
    // A sticky, world-writable directory (/tmp) on the way is fine: others cannot rename what root owns there.
    CHECK(require_root_only_tree("--state-dir", b.dir.path()) == b.dir.path());
}

TEST_CASE("a directory on the way that is not root's is refused, naming it and its owner") {
    Base b;
    std::string d = b.mkdir("user", 0755, kOther);
    b.mkdir("user/state");
    std::string why = refusal_of(d + "/state");
    CHECK(contains(why, "--state-dir " + d + "/state: "));
    CHECK(contains(why, d + " is owned by uid " + std::to_string(kOther)));
    // Root squashed on NFS shows as nobody: the message says so.
    std::string squashed = b.mkdir("squashed", 0755, 65534);
    CHECK(contains(refusal_of(squashed), "root squashed to nobody"));
}

TEST_CASE("group- or other-writable directories are refused unless sticky") {
    Base b;
    CHECK(contains(refusal_of(b.mkdir("g", 0775)), "is writable by group or others (and not sticky)"));
    CHECK(contains(refusal_of(b.mkdir("o", 0757)), "is writable by group or others (and not sticky)"));
    std::string sticky = b.mkdir("sticky", 01777);
    CHECK(refusal_of(sticky).empty());
    // ... but in a sticky directory someone else could take a missing name first.
    std::string why = refusal_of(sticky + "/not-yet");
    CHECK(contains(why, sticky + " is writable by others, so " + sticky + "/not-yet could be created by someone else first"));
}

TEST_CASE("symlinks: one not root's, or one whose target leads through another user's directory, is refused") {
    Base b;
    std::string d = b.mkdir("state");
    REQUIRE(symlink(d.c_str(), (b.dir / "theirs").c_str()) == 0);
    REQUIRE(lchown((b.dir / "theirs").c_str(), kOther, kOther) == 0);
    CHECK(contains(refusal_of(b.dir / "theirs"), b.dir / "theirs" + " is owned by uid " + std::to_string(kOther)));
    std::string user = b.mkdir("user", 0755, kOther);
    b.mkdir("user/inner");
    REQUIRE(symlink((user + "/inner").c_str(), (b.dir / "through").c_str()) == 0);  // root's link, their directory
    CHECK(contains(refusal_of(b.dir / "through"), user + " is owned by uid " + std::to_string(kOther)));
    // A loop ends in a refusal, not a hang.
    REQUIRE(symlink((b.dir / "loop").c_str(), (b.dir / "loop").c_str()) == 0);
    CHECK(contains(refusal_of(b.dir / "loop"), "too many symbolic links"));
}

TEST_CASE("\"..\" in the path and a file on the way are refused") {
    Base b;
    std::string d = b.mkdir("state");
    CHECK(contains(refusal_of(d + "/../state"), "contains \"..\""));
    std::string file = b.dir.write("file", "x");
    CHECK(contains(refusal_of(file + "/below"), file + " is not a directory"));
    CHECK(refusal_of(file).empty());  // the leaf may be a file (a ledger): root's
}

TEST_CASE("open_root_only_dir creates what is missing with exact modes, and opens what exists as it is") {
    Base b;
    const std::string leaf = b.dir / "a/b/leaf";
    const mode_t old_umask = umask(077);  // the umask plays no part
    rootfs::RootOnlyDir made = open_root_only_dir("--run-dir", leaf, 0700);
    umask(old_umask);
    CHECK(made.created);
    CHECK(made.real_path == leaf);
    struct stat st {};
    REQUIRE(fstat(made.fd.get(), &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    CHECK((st.st_mode & 07777) == 0700);
    CHECK(st.st_uid == 0);
    REQUIRE(stat((b.dir / "a").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0755);
    REQUIRE(stat((b.dir / "a/b").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0755);

    REQUIRE(chmod(leaf.c_str(), 0750) == 0);
    rootfs::RootOnlyDir again = open_root_only_dir("--run-dir", leaf, 0700);
    CHECK_FALSE(again.created);
    REQUIRE(fstat(again.fd.get(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0750);  // an existing leaf keeps its mode
}

TEST_CASE("open_root_only_dir refuses what require_root_only_tree refuses, before creating anything") {
    Base b;
    std::string user = b.mkdir("user", 0755, kOther);
    std::string why;
    try {
        open_root_only_dir("--run-dir", user + "/new", 0700);
    } catch (const UsageError& e) {
        why = e.what();
    }
    CHECK(contains(why, "--run-dir " + user + "/new: " + user + " is owned by uid " + std::to_string(kOther)));
    CHECK(access((user + "/new").c_str(), F_OK) != 0);
    std::string open = b.mkdir("open", 0777);
    CHECK_THROWS_AS(open_root_only_dir("--run-dir", open + "/new", 0700), UsageError);
    CHECK(access((open + "/new").c_str(), F_OK) != 0);
}

int main(int argc, char** argv) {
    if (geteuid() != 0) {
        std::puts("SKIP: the host path tests chown fixtures to other users and need root");
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
