// write_file_atomically: the one whole-file replacement (base/atomic_file.*).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "base/atomic_file.hpp"
#include "base/sys_error.hpp"
#include "tests/support/temp_dir.hpp"

using namespace corral;
namespace fs = std::filesystem;

namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::size_t entries(const std::string& dir) {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
    return n;
}

}  // namespace

TEST_CASE("write_file_atomically replaces the file whole, at exactly the mode asked, at every durability") {
    test::TempDir dir("corral-atomic");
    const mode_t old_umask = ::umask(0077);
    for (Durability d : {Durability::visible, Durability::content_synced, Durability::durable}) {
        CAPTURE(static_cast<int>(d));
        write_file_atomically({dir.path(), "f.json", 0644, d}, "first");
        write_file_atomically({dir.path(), "f.json", 0644, d}, "second, longer than the first");
        CHECK(slurp(dir / "f.json") == "second, longer than the first");
        struct stat st {};
        REQUIRE(::stat((dir / "f.json").c_str(), &st) == 0);
        CHECK((st.st_mode & 07777) == 0644);  // the umask 0077 did not narrow it
        CHECK(entries(dir.path()) == 1);      // no temporary file left beside it
    }
    ::umask(old_umask);
}

TEST_CASE("write_file_atomically never writes through a symlink planted at the target or at a temporary name") {
    test::TempDir dir("corral-atomic");
    const std::string victim = dir.write("victim", "untouched");
    fs::create_symlink(victim, dir / "record.json");
    fs::create_symlink(victim, dir / ".record.json.tmp");
    write_file_atomically({dir.path(), "record.json", 0600, Durability::durable}, "new");
    CHECK(slurp(victim) == "untouched");
    CHECK(fs::is_regular_file(fs::symlink_status(dir / "record.json")));
    CHECK(slurp(dir / "record.json") == "new");
}

TEST_CASE("a failed write_file_atomically names the call and leaves the old file and no temporary") {
    test::TempDir dir("corral-atomic");
    dir.write("sub/f", "old");
    // The target is a directory: the rename fails after the content was written.
    fs::create_directory(dir / "sub/g");
    dir.write("sub/g/inside", "x");
    try {
        write_file_atomically({dir / "sub", "g", 0600, Durability::durable}, "new");
        FAIL("a rename over a non-empty directory succeeded");
    } catch (const SysError& e) {
        CHECK(std::string(e.what()).find("rename(") == 0);
    }
    CHECK(slurp(dir / "sub/f") == "old");
    CHECK(entries(dir / "sub") == 2);  // f and g, no .g.XXXXXX

    try {
        write_file_atomically({dir / "missing", "f", 0600, Durability::visible}, "new");
        FAIL("a write into a missing directory succeeded");
    } catch (const SysError& e) {
        CHECK(std::string(e.what()).find("mkostemp(") == 0);
        CHECK(std::string(e.what()).find(dir / "missing") != std::string::npos);
    }
}

TEST_CASE("atomic_target splits a path into the directory and the name") {
    CHECK(atomic_target("/a/b/c", 0600, Durability::durable).dir == "/a/b");
    CHECK(atomic_target("/a/b/c", 0600, Durability::durable).name == "c");
    CHECK(atomic_target("/c", 0600, Durability::durable).dir == "/");
    CHECK(atomic_target("c", 0644, Durability::visible).dir == ".");
    CHECK(atomic_target("c", 0644, Durability::visible).mode == 0644);
}
