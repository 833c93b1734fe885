// The canonical form's rules (journal/canonical.hpp), each pinned against the
// bytes nlohmann/json writes, so a library upgrade that changes one fails here.
#include <doctest/doctest.h>

#include <string>

#include "base/sys_error.hpp"
#include "journal/canonical.hpp"

using corral::journal::canonical_json;
using corral::journal::parse_canonical;
using nlohmann::json;

TEST_CASE("keys are sorted bytewise on UTF-8, no whitespace") {
    json v = json::parse(R"({"b":1, "a":{"z":[1, 2], "Z":null}, "\u00e9":true, "aa":"x", "B":false})");
    // 'B' (0x42) < 'a' < 'aa' < 'b' < 0xC3 (the first byte of é).
    CHECK(canonical_json(v) == "{\"B\":false,\"a\":{\"Z\":null,\"z\":[1,2]},\"aa\":\"x\",\"b\":1,\"\xc3\xa9\":true}");
}

TEST_CASE("integers are decimal; -0 is 0; the 64-bit extremes survive") {
    CHECK(canonical_json(json::parse("[0, -0, 18446744073709551615, -9223372036854775808]")) ==
          "[0,0,18446744073709551615,-9223372036854775808]");
}

TEST_CASE("floats are refused, with the path named") {
    CHECK_THROWS_WITH_AS(canonical_json(json::parse(R"({"a":[1, 2.5]})")),
                         doctest::Contains("$.a[1] is a floating-point number"), corral::UsageError);
    CHECK_THROWS_AS(canonical_json(json::parse("1.0")), corral::UsageError);
}

TEST_CASE("string escapes: quote, backslash, the short ones, \\u00xx for other controls; / and DEL as is") {
    std::string s = "\"\\\b\f\n\r\t\x01\x1f/\x7f\xe2\x82\xac";
    CHECK(canonical_json(json(s)) == "\"\\\"\\\\\\b\\f\\n\\r\\t\\u0001\\u001f/\x7f\xe2\x82\xac\"");
}

TEST_CASE("invalid UTF-8 is refused") {
    CHECK_THROWS_AS(canonical_json(json(std::string("\xff"))), corral::UsageError);
}

TEST_CASE("parse_canonical accepts only the canonical bytes") {
    auto out = parse_canonical(R"({"a":1,"b":"\u0001"})");
    REQUIRE(out);
    CHECK((*out)["a"] == 1);
    for (const char* other : {R"({"a":1.0,"b":"\u0001"})", R"({"a":1e0,"b":"\u0001"})", R"({"a": 1,"b":"\u0001"})",
                              R"({"b":"\u0001","a":1})", R"({"a":1,"b":"\u0001","a":1})", R"({"a":1,"b":"\u0001"} )",
                              R"({"a":1,"b":"\u0001\/"})", R"({"a":1,"b":"\u00e9"})"}) {
        CAPTURE(other);
        auto bad = parse_canonical(other);
        REQUIRE_FALSE(bad);
        CHECK(!bad.problem().empty());
    }
    auto torn = parse_canonical("{\"a\":");
    REQUIRE_FALSE(torn);
    CHECK(torn.problem().find("not JSON") == 0);
}
