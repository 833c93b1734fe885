#include <doctest/doctest.h>

#include <string>

#include "gateway/metering/model_body.hpp"
#include "gateway/metering/model_policy.hpp"

using namespace corral::gateway::metering;

TEST_CASE("model body: a body two readers could read differently is ambiguous, never an object") {
    for (const char* body : {
             R"({"model":"claude-forbidden","model":"claude-allowed","max_tokens":1,"messages":[]})",
             R"({"model":"x","tools":[{"type":"web_search_20250305","name":"w"}],"tools":[]})",
             R"({"model":"x","tools":[{"type":"web_search_20250305","type":"custom","name":"w"}]})",
             R"({"model":"x","max_tokens":64000,"max_tokens":1})",
             R"({"model":"x","mcp_servers":[{"url":"https://m.example"}],"mcp_servers":[]})",
             R"({"model":"x","messages":[{"role":"user","content":[{"type":"image","source":{"type":"url"},"source":{"type":"base64"}}]}]})",
             R"({"model":"x","MODEL":"y"})",
             R"({"MODEL":"claude-forbidden","model":"claude-allowed"})",
             R"({"model":"x","Tools":[{"type":"web_search_20250305","name":"w"}]})",
             R"({"model":"x","Mcp_Servers":[{"url":"https://m.example"}]})",
             R"({"model":"x","tools":[{"Type":"web_search_20250305","name":"w"}]})",
             R"({"model":"x","messages":[{"role":"user","content":[{"type":"text","Source":{"type":"url"}}]}]})",
             R"({"model":"x","input":[{"Type":"input_file","file_url":"https://x"}]})",
         }) {
        CAPTURE(body);
        const ModelBody b = parse_model_body(body);
        CHECK(b.ambiguous);
        CHECK_FALSE(b.object);
    }
}

TEST_CASE("model body: upper case inside tool schemas and tool inputs is the client's own data") {
    const ModelBody b = parse_model_body(
        R"({"model":"x","tools":[{"name":"Read","input_schema":{"type":"object","properties":{"filePath":{"type":"string"}},"additionalProperties":false}}],
            "messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Read","input":{"filePath":"/A"}}]}]})");
    CHECK_FALSE(b.ambiguous);
    REQUIRE(b.object);
    CHECK((*b.object)["model"] == "x");
}

TEST_CASE("model body: malformed JSON is not ambiguous, just not an object (the policy refuses it as unreadable)") {
    const ModelBody b = parse_model_body("{\"model\":");
    CHECK_FALSE(b.ambiguous);
    CHECK_FALSE(b.object);
}
