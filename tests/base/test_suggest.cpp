// Unit tests of base/suggest: the distance and when a name is suggested.
#include <doctest/doctest.h>

#include <string_view>
#include <vector>

#include "base/suggest.hpp"

using corral::closest_name;
using corral::edit_distance;

TEST_CASE("edit distance: insertions, deletions, substitutions and neighbour swaps cost one each") {
    CHECK(edit_distance("", "") == 0);
    CHECK(edit_distance("run", "run") == 0);
    CHECK(edit_distance("--memroy", "--memory") == 1);
    CHECK(edit_distance("--workspce", "--workspace") == 1);
    CHECK(edit_distance("doctr", "doctor") == 1);
    CHECK(edit_distance("valdate", "validate") == 1);
    CHECK(edit_distance("abc", "xyz") == 3);
    CHECK(edit_distance("", "abc") == 3);
}

TEST_CASE("one suggestion, only when it is close and no other name is as close") {
    const std::vector<std::string_view> opts{"--memory", "--pids", "--nofile", "--workspace", "--worker", "--env"};
    CHECK(closest_name("--memroy", opts) == "--memory");
    CHECK(closest_name("--workspce", opts) == "--workspace");
    CHECK(closest_name("--workr", opts) == "--worker");
    CHECK_FALSE(closest_name("--bogus", opts));       // nothing close
    CHECK_FALSE(closest_name("--memory", opts));      // a known name is not a typo
    CHECK_FALSE(closest_name("-e", opts));            // too short to guess from
    CHECK_FALSE(closest_name("--", opts));
    const std::vector<std::string_view> tied{"--abcd", "--abce"};
    CHECK_FALSE(closest_name("--abcf", tied));        // two equally close: no guess
    const std::vector<std::string_view> subs{"run", "doctor", "gateway", "ca", "validate", "budget"};
    CHECK(closest_name("rnu", subs) == "run");
    CHECK(closest_name("doctr", subs) == "doctor");
    CHECK(closest_name("gatway", subs) == "gateway");
    CHECK_FALSE(closest_name("status", subs));
}
