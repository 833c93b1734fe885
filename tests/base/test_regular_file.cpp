// read_regular_file: what root may read from a path others could prepare.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/regular_file.hpp"
#include "base/sys_error.hpp"

using namespace corral;
namespace fs = std::filesystem;

namespace {

struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/corral-regfile-XXXXXX";
        REQUIRE(mkdtemp(tmpl) != nullptr);
        path = tmpl;
    }
    ~TempDir() { fs::remove_all(path); }
    void write(const std::string& rel, const std::string& text) const {
        fs::create_directories(fs::path(path + "/" + rel).parent_path());
        std::ofstream(path + "/" + rel) << text;
    }
};

std::string usage_error(const RegularFileRead& r) {
    try {
        read_regular_file(r);
    } catch (const UsageError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("a regular file is read whole; a missing one is nullopt") {
    TempDir t;
    t.write("prompt.md", "do the thing\n");
    CHECK(read_regular_file({"--prompt-file", t.path + "/prompt.md"}) == "do the thing\n");
    CHECK_FALSE(read_regular_file({"--prompt-file", t.path + "/missing.md"}).has_value());
}

TEST_CASE("a symlink anywhere on the path is refused, naming the option") {
    TempDir t;
    t.write("secret", "root-only\n");
    t.write("real/prompt.md", "ok\n");
    REQUIRE(symlink((t.path + "/secret").c_str(), (t.path + "/task.md").c_str()) == 0);
    REQUIRE(symlink((t.path + "/real").c_str(), (t.path + "/linkdir").c_str()) == 0);
    std::string last = usage_error({"--prompt-file", t.path + "/task.md"});
    CHECK(last.starts_with("--prompt-file " + t.path + "/task.md: the path goes through a symbolic link"));
    CHECK(usage_error({"--prompt-file", t.path + "/linkdir/prompt.md"}).find("symbolic link") != std::string::npos);
}

TEST_CASE("a FIFO is refused at once (never blocks), and so is a directory or a device") {
    TempDir t;
    REQUIRE(mkfifo((t.path + "/fifo").c_str(), 0600) == 0);
    CHECK(usage_error({"--prompt-file", t.path + "/fifo"}).ends_with(": not a regular file"));
    CHECK(usage_error({"--prompt-file", t.path}).ends_with(": not a regular file"));
    CHECK(usage_error({"--prompt-file", "/dev/zero"}).ends_with(": not a regular file"));
}

TEST_CASE("a file over the size cap is refused") {
    TempDir t;
    t.write("big", std::string(2000, 'x'));
    RegularFileRead r{"--prompt-file", t.path + "/big"};
    r.max_bytes = 1000;
    CHECK(usage_error(r).find("2000 bytes, more than the 1000 allowed") != std::string::npos);
    r.max_bytes = 2000;
    CHECK(read_regular_file(r)->size() == 2000);
}

TEST_CASE("in_root resolves the path inside the root: an absolute link stays in the image") {
    TempDir image;
    image.write("etc/ssl/real.crt", "IMAGE-BUNDLE\n");
    image.write("etc/hostname", "image-host\n");
    REQUIRE(symlink("/etc/ssl/real.crt", (image.path + "/etc/ssl/bundle.crt").c_str()) == 0);
    // An absolute link to a host file lands on the image's file of that name.
    REQUIRE(symlink("/etc/hostname", (image.path + "/etc/ssl/escape.crt").c_str()) == 0);
    REQUIRE(symlink("../../../../../../etc/hostname", (image.path + "/etc/ssl/dotdot.crt").c_str()) == 0);
    auto read_in = [&](const char* p) { return read_regular_file({"--rootfs", p, PathWalk::in_root, image.path}); };
    CHECK(read_in("/etc/ssl/bundle.crt") == "IMAGE-BUNDLE\n");
    CHECK(read_in("/etc/ssl/escape.crt") == "image-host\n");
    CHECK(read_in("/etc/ssl/dotdot.crt") == "image-host\n");
    CHECK_FALSE(read_in("/etc/ssl/none.crt").has_value());
}
