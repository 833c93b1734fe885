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
