// names/box_hosts: the names a box resolves to its own loopback, one table
// for its /etc/hosts and the capture DNS stub.
#include <doctest/doctest.h>

#include "names/box_hosts.hpp"

using namespace corral::names;

TEST_CASE("the box's /etc/hosts: localhost both ways, the box's name on 127.0.1.1") {
    CHECK(box_hosts_text("box-1") ==
          "127.0.0.1\tlocalhost\n"
          "::1\tlocalhost ip6-localhost ip6-loopback\n"
          "127.0.1.1\tbox-1\n");
    auto lines = box_hosts("box-1");
    REQUIRE(lines.size() == 3);
    CHECK(lines[2].address == "127.0.1.1");
    CHECK(lines[2].names == std::vector<std::string>{"box-1"});
}

TEST_CASE("without a hostname only localhost") {
    CHECK(box_hosts_text("") == "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
    CHECK(box_hosts("").size() == 2);
}
