#include <doctest/doctest.h>

#include <string>

#include "mcp/strict_json.hpp"

using namespace corral::mcp;

TEST_CASE("strict_json: a well-formed document parses to the same value as nlohmann's parser") {
    const std::string text = R"({"a":[1,2,{"b":null,"c":"x"}],"d":1.5,"e":true,"f":-3,"g":18446744073709551615})";
    auto r = parse_mcp_json(text);
    REQUIRE(r.ok());
    CHECK(r.value == nlohmann::json::parse(text));
    CHECK(parse_mcp_json("7").value == 7);
}

TEST_CASE("strict_json: a duplicate key at the top level is refused, naming key and pointer") {
    auto r = parse_mcp_json(R"({"name":"read","name":"write"})");
    REQUIRE(!r.ok());
    CHECK(r.error->reason == Reason::duplicate_key);
    CHECK(r.error->subject == "\"name\"");
    CHECK(r.error->detail.find("/name") != std::string::npos);
}

TEST_CASE("strict_json: a duplicate key deep inside arrays and objects names its full pointer") {
    auto r = parse_mcp_json(R"({"params":{"arguments":{"list":[0,{"p/a~th":1,"p/a~th":2}]}}})");
    REQUIRE(!r.ok());
    CHECK(r.error->reason == Reason::duplicate_key);
    CHECK(r.error->subject == "\"p/a~th\"");
    CHECK(r.error->detail.find("/params/arguments/list/1/p~1a~0th") != std::string::npos);
}

TEST_CASE("strict_json: the same key in two different objects is fine") {
    CHECK(parse_mcp_json(R"({"a":{"k":1},"b":{"k":2},"c":[{"k":1},{"k":2}]})").ok());
}

TEST_CASE("strict_json: malformed JSON, trailing bytes and invalid UTF-8 are refused") {
    for (const char* bad : {"", "{", R"({"a":})", "{} {}", "[1,]", "{'a':1}", "\"\xff\"", "nul", "01"}) {
        auto r = parse_mcp_json(bad);
        INFO(bad);
        REQUIRE(!r.ok());
        CHECK(r.error->reason == Reason::malformed_json);
        CHECK(!r.error->detail.empty());
    }
}

TEST_CASE("strict_json: depth over the limit is refused; at the limit it parses") {
    JsonLimits lim;
    lim.max_depth = 4;
    CHECK(parse_mcp_json("[[[[1]]]]", lim).ok());
    auto r = parse_mcp_json("[[[[[1]]]]]", lim);
    REQUIRE(!r.ok());
    CHECK(r.error->reason == Reason::too_deep);
    auto deep = parse_mcp_json(std::string(100000, '[') + std::string(100000, ']'));
    REQUIRE(!deep.ok());
    CHECK(deep.error->reason == Reason::too_deep);
}

TEST_CASE("strict_json: a message over the size limit is refused before it is read") {
    JsonLimits lim;
    lim.max_bytes = 16;
    CHECK(parse_mcp_json(R"({"a":"123456"})", lim).ok());
    auto r = parse_mcp_json(R"({"a":"1234567890"})", lim);
    REQUIRE(!r.ok());
    CHECK(r.error->reason == Reason::oversize);
    CHECK(r.error->detail.find("at most 16") != std::string::npos);
}

TEST_CASE("strict_json: a refusal's detail is one bounded line whatever the key holds") {
    const std::string key(5000, 'k');
    auto r = parse_mcp_json("{\"" + key + "\\n\":1,\"" + key + "\\n\":2}");
    REQUIRE(!r.ok());
    CHECK(r.error->reason == Reason::duplicate_key);
    CHECK(r.error->detail.size() < 400);
    CHECK(r.error->detail.find('\n') == std::string::npos);
    CHECK(denial_sentence(*r.error).size() < 600);
}
