// The daemon's answer to CORRAL-COUNTS as the supervisor reads it for
// run.json: exact counts or nothing, never a number made up from another one.
#include <doctest/doctest.h>

#include <string>

#include "shim/bridge.hpp"

using corral::shim::parse_daemon_counts;

TEST_CASE("the daemon's counts line: two unsigned integers") {
    std::string problem;
    auto c = parse_daemon_counts("{\"requests\":12,\"refusals\":3}\n", &problem);
    REQUIRE(c.has_value());
    CHECK(c->requests == 12);
    CHECK(c->refusals == 3);
    auto big = parse_daemon_counts("{\"requests\":18446744073709551615,\"refusals\":0}\n", &problem);
    REQUIRE(big.has_value());
    CHECK(big->requests == 18446744073709551615ull);
}

TEST_CASE("the daemon's counts line: secrets_reflected, 0 from a daemon that does not send it") {
    std::string problem;
    auto c = parse_daemon_counts("{\"requests\":12,\"refusals\":3,\"secrets_reflected\":2}\n", &problem);
    REQUIRE(c.has_value());
    CHECK(c->secrets_reflected == 2);
    auto old = parse_daemon_counts("{\"requests\":12,\"refusals\":3}\n", &problem);
    REQUIRE(old.has_value());
    CHECK(old->secrets_reflected == 0);
    for (const char* bad : {"{\"requests\":1,\"refusals\":0,\"secrets_reflected\":-1}",
                            "{\"requests\":1,\"refusals\":0,\"secrets_reflected\":0.5}",
                            "{\"requests\":1,\"refusals\":0,\"secrets_reflected\":null}"}) {
        std::string text = bad;
        CAPTURE(text);
        CHECK_FALSE(parse_daemon_counts(bad, &problem).has_value());
        CHECK(problem.rfind("unexpected answer: ", 0) == 0);
    }
}

TEST_CASE("a count that is not an unsigned integer is refused, not converted") {
    for (const char* bad : {"{\"requests\":-1,\"refusals\":0}", "{\"requests\":1.5,\"refusals\":0}",
                            "{\"requests\":1,\"refusals\":1.8448e19}", "{\"requests\":1,\"refusals\":-1e300}",
                            "{\"requests\":\"1\",\"refusals\":0}", "{\"requests\":1}", "[1,2]", "not json", ""}) {
        std::string text = bad;
        CAPTURE(text);
        std::string problem;
        CHECK_FALSE(parse_daemon_counts(bad, &problem).has_value());
        CHECK(problem.rfind("unexpected answer: ", 0) == 0);
    }
}
