// gateway/host: the gateway's own name table ([gateway].hosts_file).
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/gateway_config.hpp"
#include "gateway/host.hpp"

using namespace corral::gateway;

TEST_CASE("hosts file: several lines for one name add answers; errors name file:line") {
    auto dir = std::filesystem::temp_directory_path() / ("corral-hosts-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto path = (dir / "hosts").string();
    {
        std::ofstream f(path);
        f << "# test names\n"
             "127.0.0.1 upstream.test Upstream2.Test.\n"
             "\n"
             "10.0.0.1   mixed.test   # comment\n"
             "::1 mixed.test\n";
    }
    auto t = load_hosts_file(path);
    CHECK(t.size() == 3);
    REQUIRE(t.count("upstream.test"));
    CHECK(t["upstream.test"].at(0).to_string() == "127.0.0.1");
    CHECK(t.count("upstream2.test"));
    REQUIRE(t["mixed.test"].size() == 2);
    CHECK(t["mixed.test"][1].to_string() == "::1");

    {
        std::ofstream f(path);
        f << "127.0.0.1 ok.test\n127.1 bad.test\n";
    }
    try {
        load_hosts_file(path);
        FAIL("accepted 127.1");
    } catch (const corral::config::ConfigError& e) {
        CHECK(std::string(e.what()).find(path + ":2:") == 0);
    }
    {
        std::ofstream f(path);
        f << "127.0.0.1 0x7f.1\n";
    }
    CHECK_THROWS_AS(load_hosts_file(path), corral::config::ConfigError);
    CHECK_THROWS_AS(load_hosts_file((dir / "missing").string()), corral::config::ConfigError);
    std::filesystem::remove_all(dir);
}
