// STATE/capacity.toml (config/capacity_config.hpp): no file is no limit; a
// bad value or key is one line naming the file, line, key and what is allowed.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "config/capacity_config.hpp"
#include "config/checker.hpp"
#include "tests/support/temp_dir.hpp"

using namespace corral;

namespace {

std::string capacity_error(const std::string& path) {
    try {
        (void)config::load_capacity_config(path);
    } catch (const config::ConfigError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("capacity.toml: max_boxes read; absent file, no limit; bad values and keys named with their line") {
    test::TempDir dir("corral-capacity");
    const std::string path = dir / "capacity.toml";
    CHECK_FALSE(config::load_capacity_config(path).max_boxes);

    std::ofstream(path) << "# the host's share\nmax_boxes = 64\n";
    CHECK(config::load_capacity_config(path).max_boxes == 64u);

    std::ofstream(path) << "\nmax_boxes = 0\n";
    CHECK(capacity_error(path) == path + ":2: key 'max_boxes': got 0, allowed: an integer 1..1000000");

    std::ofstream(path) << "max_box = 3\n";
    const std::string unknown = capacity_error(path);
    CHECK(unknown.find(path + ":1") == 0);
    CHECK(unknown.find("max_box") != std::string::npos);
    CHECK(unknown.find("max_boxes") != std::string::npos);

    std::ofstream(path) << "max_boxes = \n";
    CHECK(capacity_error(path).find(path + ":1: TOML syntax error") == 0);
}
