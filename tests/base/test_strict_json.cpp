#include <doctest/doctest.h>

#include <cstdint>
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

namespace {

// Both readers of base/strict_json: the one answer, and the reference's.
void check_both_agree(const std::string& text) {
    CAPTURE(text);
    const auto fast_first = parse_strict_json(text);
    const auto reference = corral::parse_strict_json_reference(text);
    REQUIRE(fast_first.ok() == reference.ok());
    if (reference.ok()) CHECK(fast_first.value == reference.value);
    else CHECK(fast_first.problem->detail == reference.problem->detail);
}

}  // namespace

TEST_CASE("strict json: the fast reader and the reference reader give the same answers on tricky documents") {
    std::string many_keys = "{";
    for (int i = 0; i < 40; ++i) many_keys += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
    const std::string many_twins = many_keys + "\"K39\":1}";
    many_keys += "\"last\":true}";
    std::string deep = "1", too_deep = "1";
    for (int i = 0; i < 64; ++i) deep = "[" + deep + "]";
    for (int i = 0; i < 65; ++i) too_deep = "[" + too_deep + "]";
    const std::string cases[] = {
        R"({"a":1,"b":[true,false,null],"c":{"d":"e"}})", R"({"a":1,"a":2})", R"({"a":{"x":1,"X":2}})",
        many_keys, many_twins, deep, too_deep,
        "\xEF\xBB\xBF{}",                                      // a byte order mark: only the reference reads it
        "-0", "0", "-1", "9223372036854775807", "9223372036854775808", "18446744073709551615",
        "18446744073709551616", "-9223372036854775809", "1.5", "1e2", "-1.0e-400", "1e400",
        R"("\u00e9\ud83d\ude00")", R"("\ud800")", R"("\udc00")", R"("\u0000")", "\"a\x01\"", "\"\xED\xA0\x80\"",
        "\"\xC3\"", "[1,]", "{\"a\":1,}", "01", "1 2", " {} ", "", "nul", "[\"\\/\"]", R"({"":1,"":2})",
    };
    for (const auto& text : cases) check_both_agree(text);
    // A non-negative integer is unsigned, a negative one signed, as nlohmann reads them.
    CHECK(parse_strict_json("5").value.is_number_unsigned());
    CHECK(parse_strict_json("-5").value.is_number_integer());
    CHECK(parse_strict_json("18446744073709551615").value.get<std::uint64_t>() == 18446744073709551615ull);
}

TEST_CASE("strict json: an outline keeps one member of each element of one array, and still checks the rest") {
    const std::string list =
        R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","description":"d","inputSchema":{"type":"object"}},)"
        R"("not an object",{"description":"no name"}],"nextCursor":"c"}})";
    auto r = corral::parse_strict_json_outline(list, "/result/tools", "name");
    REQUIRE(r.ok());
    CHECK(r.outlined);
    CHECK(r.value["result"]["tools"] == nlohmann::json::parse(R"([{"name":"a"},"not an object",{}])"));
    CHECK(r.value["result"]["nextCursor"] == "c");
    CHECK(r.value["id"] == 1);
    // What is left out of the tree is still read the strict way.
    auto twin = corral::parse_strict_json_outline(
        R"({"result":{"tools":[{"name":"a","inputSchema":{"type":"object","Type":"x"}}]}})", "/result/tools", "name");
    REQUIRE(!twin.ok());
    CHECK(twin.problem->kind == JsonProblemKind::case_variant_key);
    CHECK(twin.problem->detail.find("/result/tools/0/inputSchema/Type") != std::string::npos);
    std::string nested = "1";
    for (int i = 0; i < 62; ++i) nested = "[" + nested + "]";
    auto deep = corral::parse_strict_json_outline(R"({"result":{"tools":[{"name":"a","x":)" + nested + "}]}}",
                                                  "/result/tools", "name");
    REQUIRE(!deep.ok());
    CHECK(deep.problem->kind == JsonProblemKind::too_deep);
    // Another array of the same name elsewhere is whole; a document only the
    // reference reads comes back whole, and says so.
    auto other = corral::parse_strict_json_outline(R"({"tools":[{"name":"a","b":1}]})", "/result/tools", "name");
    CHECK(other.value["tools"][0]["b"] == 1);
    auto bom = corral::parse_strict_json_outline("\xEF\xBB\xBF" + list, "/result/tools", "name");
    REQUIRE(bom.ok());
    CHECK(!bom.outlined);
    CHECK(bom.value["result"]["tools"][0]["description"] == "d");
}

TEST_CASE("strict json: a selective read builds the selected members only, as the plain parse would give them") {
    const corral::JsonSelection inner{{{"model"}, {"usage"}}};
    const corral::JsonSelection select{{{"type"}, {"usage"}, {"message", &inner}}};
    const std::string docs[] = {
        R"({"type":"message","content":[{"type":"text","text":"long"}],"usage":{"input_tokens":3,"x":[1,{"y":2}]}})",
        R"({"type":"message_start","message":{"id":"m","model":"c","content":[],"usage":{"output_tokens":1}}})",
        R"({"message":"a string is built whole","type":7})",
        R"({"message":[{"model":"an array's elements are whole"}],"other":{"a":1}})",
        R"([{"type":"a top-level array is whole"}])", R"("text")", R"({})",
    };
    for (const auto& text : docs) {
        CAPTURE(text);
        nlohmann::json got;
        REQUIRE(corral::read_json_selected(text, select, got));
        CHECK(got == corral::select_members(nlohmann::json::parse(text), select));
    }
    nlohmann::json got;
    REQUIRE(corral::read_json_selected(docs[0], select, got));
    CHECK(!got.contains("content"));
    CHECK(got["usage"]["x"][1]["y"] == 2);
    // What is not built is still read: a key twice anywhere, two keys
    // differing in case, a lone surrogate or broken JSON is not vouched for
    // (the caller parses it its own way).
    const std::string refused[] = {R"({"content":{"a":1,"a":2},"type":"m"})", R"({"content":{"a":1,"A":2}})",
                                   R"({"content":"\ud800"})", R"({"content":[1,]})", std::string("{\"a\":\"\0\"}", 9)};
    for (const auto& text : refused) {
        CAPTURE(text);
        CHECK(!corral::read_json_selected(text, select, got));
    }
}
