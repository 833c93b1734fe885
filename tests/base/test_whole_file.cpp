// read_whole_file: the one reader of files corral reads as a unit (base/fd.*).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "base/fd.hpp"
#include "base/sys_error.hpp"
#include "tests/support/temp_dir.hpp"

using namespace corral;

TEST_CASE("read_whole_file: the whole file, nullopt when missing, a bound that refuses one byte more") {
    test::TempDir dir("corral-whole-file");
    const std::string path = dir.write("f", std::string(100, 'x'));
    CHECK(read_whole_file({path, 100}) == std::string(100, 'x'));
    CHECK_FALSE(read_whole_file({dir / "missing", 100}).has_value());
    try {
        read_whole_file({path, 99});
        FAIL("a file over the bound was read");
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()) == path + ": larger than 99 bytes");
    }
    // Relative to a directory fd.
    Fd d(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    REQUIRE(d.valid());
    CHECK(read_whole_file({"f", 100, d.get()})->size() == 100);
}

TEST_CASE("read_whole_file refuses a FIFO at once (no writer needed to return), a directory, and with no_follow a symlink") {
    test::TempDir dir("corral-whole-file");
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(read_whole_file({dir / "fifo", 100}), (dir / "fifo" + ": not a regular file").c_str(), UsageError);
    std::filesystem::create_directory(dir / "sub");
    CHECK_THROWS_AS(read_whole_file({dir / "sub", 100}), UsageError);
    const std::string target = dir.write("target", "t");
    std::filesystem::create_symlink(target, dir / "link");
    CHECK(read_whole_file({dir / "link", 100}) == "t");
    try {
        read_whole_file({dir / "link", 100, AT_FDCWD, true});
        FAIL("no_follow followed a symlink");
    } catch (const SysError& e) {
        CHECK(e.error() == ELOOP);
        CHECK(std::string(e.what()).find("open(" + dir / "link") == 0);
    }
}
