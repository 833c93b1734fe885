#include <doctest/doctest.h>

#include <string>

#include "gateway/metering/request_facts.hpp"

using namespace corral::gateway::metering;

TEST_CASE("request facts: Anthropic model, max_tokens, stream") {
    const std::string body =
        "{\"model\":\"claude-sonnet-4-5-20250929\",\"max_tokens\":32000,\"stream\":true,"
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}]}";
    RequestFacts f = request_facts(ModelApi::anthropic_messages, body);
    CHECK(f.parsed);
    CHECK(f.problem == "");
    CHECK(f.api == ModelApi::anthropic_messages);
    CHECK(f.body_bytes == body.size());
    CHECK(f.model == "claude-sonnet-4-5-20250929");
    CHECK(f.max_output_tokens == 32000u);
    CHECK(f.stream == true);
    CHECK(f.unbounded_input == "");
}

TEST_CASE("request facts: Responses max_output_tokens, stored context is unbounded input") {
    RequestFacts f = request_facts(ModelApi::openai_responses,
                                   "{\"model\":\"gpt-5-codex\",\"stream\":true,\"store\":false,\"input\":[]}");
    CHECK(f.parsed);
    CHECK_FALSE(f.max_output_tokens);  // codex names none: the policy's cap applies
    CHECK(f.unbounded_input == "");
    RequestFacts g = request_facts(ModelApi::openai_responses,
                                   "{\"model\":\"gpt-5\",\"max_output_tokens\":500,\"previous_response_id\":\"resp_1\"}");
    CHECK(g.max_output_tokens == 500u);
    CHECK(g.unbounded_input == "previous_response_id");
    // codex's WebSocket response.create message: the same fields at the top level.
    RequestFacts ws = request_facts(ModelApi::openai_responses,
                                    "{\"type\":\"response.create\",\"model\":\"gpt-5-codex\",\"max_output_tokens\":9}");
    CHECK(ws.model == "gpt-5-codex");
    CHECK(ws.max_output_tokens == 9u);
}

TEST_CASE("request facts: Chat Completions takes the larger of the two caps, and include_usage") {
    RequestFacts f = request_facts(ModelApi::openai_chat,
                                   "{\"model\":\"gpt-4o\",\"max_tokens\":100,\"max_completion_tokens\":300,"
                                   "\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
    CHECK(f.max_output_tokens == 300u);
    CHECK(f.include_usage);
    RequestFacts g = request_facts(ModelApi::openai_chat, "{\"model\":\"gpt-4o\",\"max_tokens\":100}");
    CHECK(g.max_output_tokens == 100u);
    CHECK_FALSE(g.include_usage);
}

TEST_CASE("request facts: Chat Completions n multiplies the output; an n it cannot read counts as the most allowed") {
    CHECK(request_facts(ModelApi::openai_chat, R"({"model":"gpt-4o","max_tokens":100})").completions == 1u);
    CHECK(request_facts(ModelApi::openai_chat, R"({"model":"gpt-4o","max_tokens":100,"n":4})").completions == 4u);
    CHECK(request_facts(ModelApi::openai_chat, R"({"model":"gpt-4o","n":null})").completions == 1u);
    for (const char* bad : {R"({"n":"4"})", R"({"n":0})", R"({"n":-1})", R"({"n":4.5})", R"({"n":129})", R"({"n":[4]})"}) {
        CAPTURE(bad);
        RequestFacts f = request_facts(ModelApi::openai_chat, bad);
        CHECK(f.completions == kMaxCompletionsPerRequest);
        CHECK(f.problem.find("n is not a whole number from 1 to 128") == 0);
    }
    // Only Chat Completions has n: elsewhere it is not read.
    CHECK(request_facts(ModelApi::anthropic_messages, R"({"max_tokens":100,"n":4})").completions == 1u);
}

TEST_CASE("request facts: documents and files are unbounded input, found at any depth") {
    RequestFacts f = request_facts(
        ModelApi::anthropic_messages,
        "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"document\","
        "\"source\":{\"type\":\"base64\",\"media_type\":\"application/pdf\",\"data\":\"JVBERi0=\"}}]}]}");
    CHECK(f.unbounded_input == "document block");
    RequestFacts g = request_facts(
        ModelApi::openai_responses,
        "{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_file\",\"file_id\":\"f\"}]}]}");
    CHECK(g.unbounded_input == "input_file block");
    // A deep nesting is walked without recursion.
    std::string deep = "{\"model\":\"m\",\"x\":" + std::string(5000, '[') + "{\"type\":\"document\"}" +
                       std::string(5000, ']') + "}";
    CHECK(request_facts(ModelApi::anthropic_messages, deep).unbounded_input == "document block");
}

TEST_CASE("request facts: unreadable bodies and wrong types say what is wrong") {
    RequestFacts a = request_facts(ModelApi::anthropic_messages, "not json");
    CHECK_FALSE(a.parsed);
    CHECK(a.problem == "the request body is not a JSON object");
    CHECK_FALSE(a.model);
    RequestFacts b = request_facts(ModelApi::anthropic_messages, "[1,2]");
    CHECK_FALSE(b.parsed);
    RequestFacts c = request_facts(ModelApi::anthropic_messages, std::string(2000, ' '), 1000);
    CHECK_FALSE(c.parsed);
    CHECK(c.problem == "the request body is over 1000 bytes");
    CHECK(c.body_bytes == 2000u);
    RequestFacts d = request_facts(ModelApi::anthropic_messages, "{\"model\":7,\"max_tokens\":\"lots\"}");
    CHECK(d.parsed);
    CHECK(d.problem == "model is not a string");
    CHECK_FALSE(d.model);
    CHECK_FALSE(d.max_output_tokens);
    RequestFacts e = request_facts(ModelApi::anthropic_messages, "{\"model\":\"m\",\"max_tokens\":-1}");
    CHECK(e.problem == "max_tokens is not a non-negative integer");
    CHECK_FALSE(e.max_output_tokens);
}

TEST_CASE("request facts: images the provider fetches and prompt templates are unbounded input; inline images are not") {
    auto facts = [](ModelApi api, const std::string& body) { return request_facts(api, body).unbounded_input; };
    const std::string a = R"({"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":)";
    CHECK(facts(ModelApi::anthropic_messages, a + R"({"type":"file","file_id":"file_1"}}]}]})") == "image by file");
    CHECK(facts(ModelApi::anthropic_messages, a + R"({"type":"url","url":"https://x/a.png"}}]}]})") == "image by url");
    CHECK(facts(ModelApi::anthropic_messages, a + R"({"type":"base64","media_type":"image/png","data":"iVBO"}}]}]})") == "");
    const std::string r = R"({"model":"m","input":[{"role":"user","content":[{"type":"input_image",)";
    CHECK(facts(ModelApi::openai_responses, r + R"("file_id":"file_1"}]}]})") == "image by file_id");
    CHECK(facts(ModelApi::openai_responses, r + R"("image_url":"https://x/a.png"}]}]})") == "image by URL");
    CHECK(facts(ModelApi::openai_responses, r + R"("image_url":"data:image/png;base64,iVBO"}]}]})") == "");
    CHECK(facts(ModelApi::openai_responses, R"({"model":"m","prompt":{"id":"pmpt_1","variables":{"x":"y"}}})") ==
          "prompt template");
    const std::string c = R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":)";
    CHECK(facts(ModelApi::openai_chat, c + R"("https://x/a.png"}}]}]})") == "image by URL");
    CHECK(facts(ModelApi::openai_chat, c + R"("data:image/png;base64,iVBO"}}]}]})") == "");
}
