#include <doctest/doctest.h>

#include <string>

#include "base/parse.hpp"
#include "base/strict_json.hpp"

using corral::JsonProblemKind;
using corral::parse_strict_json;

TEST_CASE("strict json: two keys of one object that differ only in case are refused, naming both and where") {
    auto r = parse_strict_json(R"({"messages":[{"role":"user","content":"x"}],"model":"a","MODEL":"b"})");
    REQUIRE(!r.ok());
    CHECK(r.problem->kind == JsonProblemKind::case_variant_key);
    CHECK(r.problem->key == "MODEL");
    CHECK(r.problem->detail.find("\"model\" and \"MODEL\"") != std::string::npos);
    CHECK(r.problem->detail.find("/MODEL") != std::string::npos);
    auto deep = parse_strict_json(R"({"tools":[{"type":"custom","Type":"web_search_20250305"}]})");
    REQUIRE(!deep.ok());
    CHECK(deep.problem->kind == JsonProblemKind::case_variant_key);
    CHECK(deep.problem->detail.find("/tools/0/Type") != std::string::npos);
}

TEST_CASE("strict json: an exact duplicate is a duplicate, the first value never silently lost") {
    auto r = parse_strict_json(R"({"max_tokens":100000,"max_tokens":1})");
    REQUIRE(!r.ok());
    CHECK(r.problem->kind == JsonProblemKind::duplicate_key);
    CHECK(r.problem->key == "max_tokens");
    // One spelling alone, in any case, is a key like any other.
    CHECK(parse_strict_json(R"({"Model":"a","filePath":"/x"})").ok());
}

TEST_CASE("strict json: quoted keys stay one escaped line; ascii_lower touches ASCII letters only") {
    CHECK(corral::json_quoted("a\x1b[2Jb\n") == "\"a\\u001b[2Jb\\n\"");
    CHECK(corral::json_quoted(std::string(100, 'k'), 4) == "\"kkkk...\"");
    CHECK(corral::ascii_lower("MoDeL-\xc3\x84_9") == "model-\xc3\x84_9");
}

TEST_CASE("strict json: a large object is checked like a small one, and the document is the plain parser's") {
    // More keys than the builder lists before it switches to a hash set.
    std::string many = "{";
    for (int i = 0; i < 40; ++i) many += "\"key_" + std::to_string(i) + "\":" + std::to_string(i) + ",";
    auto ok = parse_strict_json(many + "\"last\":[1,{\"a\":[]},\"x\"]}");
    REQUIRE(ok.ok());
    CHECK(ok.value == nlohmann::json::parse(many + "\"last\":[1,{\"a\":[]},\"x\"]}"));
    auto late = parse_strict_json(many + "\"KEY_3\":1}");
    REQUIRE(!late.ok());
    CHECK(late.problem->kind == JsonProblemKind::case_variant_key);
    CHECK(late.problem->detail.find("\"key_3\" and \"KEY_3\"") != std::string::npos);
    auto exact = parse_strict_json(many + "\"key_39\":1}");
    REQUIRE(!exact.ok());
    CHECK(exact.problem->kind == JsonProblemKind::duplicate_key);
    // The pointer names the array index and key of each level on the way.
    auto nested = parse_strict_json(R"({"a":[0,{"b":[{"x":1},{"y":2,"Y":3}]}]})");
    REQUIRE(!nested.ok());
    CHECK(nested.problem->detail.find("/a/1/b/1/Y") != std::string::npos);
    // Scalars at the top, and containers closed in any order of nesting.
    CHECK(parse_strict_json("7").value == 7);
    CHECK(parse_strict_json(R"([[],[[]],{"k":{}}])").value == nlohmann::json::parse(R"([[],[[]],{"k":{}}])"));
}
