#include <doctest/doctest.h>

#include <string>

#include "base/sys_error.hpp"
#include "names/run_id.hpp"

using corral::UsageError;
using namespace corral::names;

TEST_CASE("the drawn form: YYYYMMDDTHHMMSSmmmZ-xxxxxx, and the older one without milliseconds") {
    CHECK(is_drawn_run_id("20261202T052311123Z-9ebbdd"));
    CHECK(is_drawn_run_id("20261130T055114Z-9ebbdd"));  // run dirs made before the milliseconds
    CHECK_FALSE(is_drawn_run_id("20261202T052311123Z-9EBBDD"));  // the random part is lowercase hex
    CHECK_FALSE(is_drawn_run_id("20261202T052311123Z-9ebbd"));
    CHECK_FALSE(is_drawn_run_id("20261202T052311123Z-9ebbddd"));
    CHECK_FALSE(is_drawn_run_id("20261202T05231112Z-9ebbdd"));  // neither 6 nor 9 time digits
    CHECK_FALSE(is_drawn_run_id("20261202X052311123Z-9ebbdd"));
    CHECK_FALSE(is_drawn_run_id("20261202T052311123Z_9ebbdd"));
    CHECK_FALSE(is_drawn_run_id("2026120aT052311123Z-9ebbdd"));
    CHECK_FALSE(is_drawn_run_id(""));
    CHECK_FALSE(is_drawn_run_id("doctor"));
}

TEST_CASE("is_run_id reads every drawn form and the names older builds, doctor and tests use") {
    for (const char* id : {"20261202T052311123Z-9ebbdd", "20261130T055114Z-9ebbdd", "doctor", "validate",
                           "itest-4242-1", "a.b_c-D", "2026"})
        CHECK_MESSAGE(is_run_id(id), id);
    CHECK(is_run_id(std::string(max_run_id_length, 'a')));
}

TEST_CASE("is_run_id refuses what could be a path, a hidden file or a header") {
    for (const char* id : {"", ".", "..", ".hidden", "../etc", "a/b", "a b", "abc\r\nx-api-key: 1", "a:b", "\xc3\xa9"})
        CHECK_MESSAGE(!is_run_id(id), id);
    CHECK_FALSE(is_run_id(std::string(max_run_id_length + 1, 'a')));
    CHECK_FALSE(is_run_id(std::string("ab\0c", 4)));
}

TEST_CASE("require_run_id names where, the id and the offending character") {
    CHECK_NOTHROW(require_run_id("20261202T052311123Z-9ebbdd", "cgroup name"));
    CHECK_THROWS_WITH_AS(require_run_id("../etc", "cgroup name"),
                         doctest::Contains("cgroup name: run id \"../etc\" starts with '.'"), UsageError);
    CHECK_THROWS_WITH_AS(require_run_id("a/b", ""), doctest::Contains("run id \"a/b\" contains '/'; expected an id as"),
                         UsageError);
    CHECK_THROWS_WITH_AS(require_run_id("a\nb", "agent profile"),
                         doctest::Contains("agent profile: run id \"a\nb\" contains byte 0x0a"), UsageError);
    CHECK_THROWS_WITH_AS(require_run_id("", "agent profile"), doctest::Contains("agent profile: empty run id"),
                         UsageError);
    CHECK_THROWS_WITH_AS(require_run_id(std::string(201, 'a'), "x"),
                         doctest::Contains("a run id of 201 characters; expected"), UsageError);
}
