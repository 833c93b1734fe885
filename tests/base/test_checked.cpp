// base/checked: a pure check's value or its one problem, nothing else.
#include <doctest/doctest.h>

#include <string>

#include "base/checked.hpp"

using corral::Checked;
using corral::Failed;

namespace {
Checked<int> positive(int n) {
    if (n <= 0) return Failed{"a positive number is required, got " + std::to_string(n)};
    return n;
}
}  // namespace

TEST_CASE("checked: the value when the check passed, the problem when it did not") {
    auto ok = positive(3);
    REQUIRE(ok);
    CHECK(ok.has_value());
    CHECK(*ok == 3);
    CHECK(ok.value() == 3);

    auto bad = positive(-1);
    CHECK_FALSE(bad);
    CHECK_FALSE(bad.has_value());
    CHECK(bad.problem() == "a positive number is required, got -1");
}

TEST_CASE("checked: a string value and a problem are never confused") {
    Checked<std::string> value = std::string("an empty path");
    Checked<std::string> problem = Failed{"an empty path"};
    REQUIRE(value);
    CHECK(*value == "an empty path");
    REQUIRE_FALSE(problem);
    CHECK(problem.problem() == "an empty path");
    CHECK(std::move(value).value() == "an empty path");
}
