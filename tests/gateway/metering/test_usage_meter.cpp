#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gateway/metering/model_routes.hpp"
#include "gateway/metering/usage_meter.hpp"

using namespace corral::gateway::metering;

namespace {

std::string opt(const std::optional<std::uint64_t>& v) { return v ? std::to_string(*v) : "-"; }

// Every field, so two usages compare as one string.
std::string describe(const Usage& u) {
    std::ostringstream s;
    s << usage_state_name(u.state) << " model=" << u.model << " in=" << opt(u.input_tokens)
      << " out=" << opt(u.output_tokens) << " cw=" << opt(u.cache_write_tokens) << " cr=" << opt(u.cache_read_tokens)
      << " cached=" << opt(u.cached_input_tokens) << " reasoning=" << opt(u.reasoning_tokens) << " reason=" << u.reason
      << " error=" << u.error;
    return s.str();
}

Usage meter_in_pieces(ModelApi api, BodyForm form, std::string_view body, std::size_t piece) {
    UsageMeter m(api, form);
    for (std::size_t i = 0; i < body.size(); i += piece) m.feed(body.substr(i, piece));
    m.finish();
    return m.usage();
}

// Whole, byte by byte and at random split points: the same usage, returned.
Usage meter_every_way(ModelApi api, BodyForm form, std::string_view body) {
    Usage whole = meter_in_pieces(api, form, body, body.size() + 1);
    CHECK(describe(meter_in_pieces(api, form, body, 1)) == describe(whole));
    std::mt19937 rng(2026);
    for (int round = 0; round < 40; ++round) {
        UsageMeter m(api, form);
        std::size_t i = 0;
        while (i < body.size()) {
            std::size_t n = std::uniform_int_distribution<std::size_t>(0, 40)(rng);
            m.feed(body.substr(i, n));
            i += n;
        }
        m.finish();
        CHECK(describe(m.usage()) == describe(whole));
    }
    return whole;
}

// Anthropic's documented stream shape, with known numbers.
const std::string kAnthropicStream =
    "event: message_start\n"
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01XFDUDYJgAACzvnptvVoYEL\",\"type\":\"message\","
    "\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5-20250929\",\"stop_reason\":null,"
    "\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":1200,"
    "\"cache_read_input_tokens\":3400,\"output_tokens\":1}}}\n\n"
    "event: content_block_start\n"
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
    "event: ping\n"
    "data: {\"type\": \"ping\"}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"!\"}}\n\n"
    "event: content_block_stop\n"
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
    "event: message_delta\n"
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},"
    "\"usage\":{\"output_tokens\":15}}\n\n"
    "event: message_stop\n"
    "data: {\"type\":\"message_stop\"}\n\n";

const std::string kResponsesStream =
    "event: response.created\n"
    "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_67c9fdcecf488190\","
    "\"object\":\"response\",\"created_at\":1741290958,\"status\":\"in_progress\",\"model\":\"gpt-5-codex\","
    "\"output\":[],\"usage\":null}}\n\n"
    "event: response.in_progress\n"
    "data: {\"type\":\"response.in_progress\",\"sequence_number\":1,\"response\":{\"id\":\"resp_67c9fdcecf488190\","
    "\"status\":\"in_progress\",\"model\":\"gpt-5-codex\",\"usage\":null}}\n\n"
    "event: response.output_item.added\n"
    "data: {\"type\":\"response.output_item.added\",\"sequence_number\":2,\"output_index\":0,\"item\":{\"id\":"
    "\"msg_1\",\"type\":\"message\",\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]}}\n\n"
    "event: response.output_text.delta\n"
    "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":3,\"item_id\":\"msg_1\",\"output_index\":0,"
    "\"content_index\":0,\"delta\":\"Hi \\\"there\\\"\"}\n\n"
    "event: response.completed\n"
    "data: {\"type\":\"response.completed\",\"sequence_number\":4,\"response\":{\"id\":\"resp_67c9fdcecf488190\","
    "\"object\":\"response\",\"status\":\"completed\",\"model\":\"gpt-5-codex\",\"output\":[],\"usage\":{"
    "\"input_tokens\":9120,\"input_tokens_details\":{\"cached_tokens\":8064},\"output_tokens\":310,"
    "\"output_tokens_details\":{\"reasoning_tokens\":192},\"total_tokens\":9430}}}\n\n";

const std::string kChatChunkHead =
    "{\"id\":\"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT\",\"object\":\"chat.completion.chunk\",\"created\":1741569952,"
    "\"model\":\"gpt-4o-2024-08-06\",\"system_fingerprint\":\"fp_eb9dce56a8\",";
const std::string kChatStream =
    "data: " + kChatChunkHead +
    "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
    "\"finish_reason\":null}],\"usage\":null}\n\n"
    "data: " + kChatChunkHead +
    "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"logprobs\":null,\"finish_reason\":null}],"
    "\"usage\":null}\n\n"
    "data: " + kChatChunkHead +
    "\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":null}\n\n"
    "data: " + kChatChunkHead +
    "\"choices\":[],\"usage\":{\"prompt_tokens\":1117,\"completion_tokens\":46,\"total_tokens\":1163,"
    "\"prompt_tokens_details\":{\"cached_tokens\":1024,\"audio_tokens\":0},\"completion_tokens_details\":"
    "{\"reasoning_tokens\":0,\"audio_tokens\":0,\"accepted_prediction_tokens\":0,"
    "\"rejected_prediction_tokens\":0}}}\n\n"
    "data: [DONE]\n\n";

std::string crlf(std::string s) {
    std::string out;
    for (char c : s) {
        if (c == '\n') out += '\r';
        out += c;
    }
    return out;
}

}  // namespace

TEST_CASE("routes: each metered path, the query ignored, anything else not metered") {
    CHECK(model_api_for_path("/v1/messages") == ModelApi::anthropic_messages);
    CHECK(model_api_for_path("/v1/messages?beta=true") == ModelApi::anthropic_messages);
    CHECK(model_api_for_path("/v1/messages/count_tokens?beta=true") == ModelApi::anthropic_count_tokens);
    CHECK(model_api_for_path("/v1/responses") == ModelApi::openai_responses);
    CHECK(model_api_for_path("/backend-api/codex/responses") == ModelApi::openai_responses);
    CHECK(model_api_for_path("/v1/chat/completions") == ModelApi::openai_chat);
    CHECK(model_api_for_path("/v1/messages/") == ModelApi::none);
    CHECK(model_api_for_path("/v1/models/claude") == ModelApi::none);
    CHECK(model_api_for_path("/x/v1/messages") == ModelApi::none);
    CHECK(provider_of(ModelApi::openai_chat) == Provider::openai);
    CHECK(provider_of(ModelApi::anthropic_count_tokens) == Provider::anthropic);
}

TEST_CASE("content type: text/event-stream in any case and with parameters is SSE, the rest JSON") {
    CHECK(body_form_for("text/event-stream") == BodyForm::sse);
    CHECK(body_form_for("Text/Event-Stream; charset=utf-8") == BodyForm::sse);
    CHECK(body_form_for(" text/event-stream") == BodyForm::sse);
    CHECK(body_form_for("text/event-streamx") == BodyForm::json);
    CHECK(body_form_for("application/json") == BodyForm::json);
    CHECK(body_form_for("") == BodyForm::json);
}

TEST_CASE("anthropic SSE: model and usage from message_start, output from message_delta, any split") {
    Usage u = meter_every_way(ModelApi::anthropic_messages, BodyForm::sse, kAnthropicStream);
    CHECK(u.state == UsageState::reported);
    CHECK(u.model == "claude-sonnet-4-5-20250929");
    CHECK(u.input_tokens == 25u);
    CHECK(u.cache_write_tokens == 1200u);
    CHECK(u.cache_read_tokens == 3400u);
    CHECK(u.output_tokens == 15u);  // the delta's running total replaces message_start's 1, never adds to it
    CHECK_FALSE(u.cached_input_tokens);
    CHECK_FALSE(u.reasoning_tokens);
    // CRLF line ends, split anywhere (a \r\n across pieces included).
    CHECK(describe(meter_every_way(ModelApi::anthropic_messages, BodyForm::sse, crlf(kAnthropicStream))) ==
          describe(u));
    TokenTotals t = counted_tokens(u);
    CHECK(t.input == 25u + 1200u + 3400u);
    CHECK(t.output == 15u);
    CHECK(t.total() == 4640u);
}

TEST_CASE("anthropic SSE: message_delta repeating input and cache fields: the last value of each counts") {
    std::string s = kAnthropicStream;
    const std::string old_delta = "\"usage\":{\"output_tokens\":15}";
    s.replace(s.find(old_delta), old_delta.size(),
              "\"usage\":{\"input_tokens\":30,\"cache_creation_input_tokens\":1200,\"cache_read_input_tokens\":3500,"
              "\"output_tokens\":40}");
    Usage u = meter_every_way(ModelApi::anthropic_messages, BodyForm::sse, s);
    CHECK(u.state == UsageState::reported);
    CHECK(u.input_tokens == 30u);
    CHECK(u.cache_read_tokens == 3500u);
    CHECK(u.output_tokens == 40u);
}

TEST_CASE("anthropic SSE: odd whitespace, no space after the colon, comments, no event names") {
    const std::string s =
        ": hello\r\n"
        "event:message_start\r\n"
        "data:{ \"type\" : \"message_start\" , \"message\" : { \"model\" : \"claude-opus-4-1\" ,\r\n"
        "data:  \"usage\" : { \"input_tokens\" : 7 , \"output_tokens\" : 1 } } }\r\n"
        "\r\n"
        "data: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":9}}\r\r"
        "data: {\"type\":\"message_stop\"}\n\n";
    Usage u = meter_every_way(ModelApi::anthropic_messages, BodyForm::sse, s);
    CHECK(u.state == UsageState::reported);
    CHECK(u.model == "claude-opus-4-1");
    CHECK(u.input_tokens == 7u);
    CHECK(u.output_tokens == 9u);
    CHECK_FALSE(u.cache_write_tokens);
}

TEST_CASE("anthropic SSE: a stream cut before message_delta, or with no usage, is unavailable") {
    const std::string cut = kAnthropicStream.substr(0, kAnthropicStream.find("event: message_delta"));
    Usage u = meter_every_way(ModelApi::anthropic_messages, BodyForm::sse, cut);
    CHECK(u.state == UsageState::unavailable);
    CHECK(u.reason == "no usage in the response");
    CHECK(u.input_tokens == 25u);  // what was seen is kept for the ledger
    Usage empty = meter_every_way(ModelApi::anthropic_messages, BodyForm::sse, "");
    CHECK(empty.state == UsageState::unavailable);
    CHECK(empty.reason == "no usage in the response");
    // message_delta with usage but no message_start: input unknown.
    Usage no_start = meter_every_way(ModelApi::anthropic_messages, BodyForm::sse,
                                     "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":"
                                     "{\"output_tokens\":3}}\n\n");
    CHECK(no_start.state == UsageState::unavailable);
    CHECK(no_start.reason == "usage lacks input_tokens");
}

TEST_CASE("anthropic SSE: a stream cut after a message_delta but before message_stop is unavailable") {
    // message_delta's output_tokens is a running total: the one seen last
    // before a cut may be lower than what was generated (and billed).
    const std::string cut = kAnthropicStream.substr(0, kAnthropicStream.find("event: message_stop"));
    REQUIRE(cut.find("message_delta") != std::string::npos);
    Usage u = meter_every_way(ModelApi::anthropic_messages, BodyForm::sse, cut);
    CHECK(u.state == UsageState::unavailable);
    CHECK(u.reason == "the stream ended before message_stop (its last usage may not be final)");
    CHECK(meter_every_way(ModelApi::anthropic_messages, BodyForm::sse, kAnthropicStream).state ==
          UsageState::reported);
}

TEST_CASE("anthropic SSE: an error event before the message is a provider error; after it, unavailable") {
    const std::string error_event =
        "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": "
        "\"Overloaded\"}}\n\n";
    Usage before = meter_every_way(ModelApi::anthropic_messages, BodyForm::sse, error_event);
    CHECK(before.state == UsageState::provider_error);
    CHECK(before.error == "overloaded_error: Overloaded");
    const std::string mid = kAnthropicStream.substr(0, kAnthropicStream.find("event: content_block_stop")) + error_event;
    Usage after = meter_every_way(ModelApi::anthropic_messages, BodyForm::sse, mid);
    CHECK(after.state == UsageState::unavailable);
    CHECK(after.reason == "the provider reported an error after the response began: overloaded_error: Overloaded");
}

TEST_CASE("anthropic SSE: non-JSON data, wrong-typed counts and an oversize event make usage unavailable") {
    Usage not_json = meter_every_way(ModelApi::anthropic_messages, BodyForm::sse,
                                     "event: message_start\ndata: {not json\n\n" +
                                         kAnthropicStream.substr(kAnthropicStream.find("event: message_delta")));
    CHECK(not_json.state == UsageState::unavailable);
    CHECK(not_json.reason == "the data of a 'message_start' event is not a JSON object");
    for (const char* bad : {"-5", "1.5", "\"15\"", "true", "18446744073709551616"}) {
        std::string s = kAnthropicStream;
        const std::string old_delta = "\"output_tokens\":15";
        s.replace(s.find(old_delta), old_delta.size(), std::string("\"output_tokens\":") + bad);
        Usage u = meter_every_way(ModelApi::anthropic_messages, BodyForm::sse, s);
        CHECK(u.state == UsageState::unavailable);
        CHECK(u.reason == "usage.output_tokens is not a non-negative integer");
    }
    // A text delta of 2 MiB: over the event bound. The meter never holds it.
    std::string big = kAnthropicStream;
    big.insert(big.find("event: message_delta"),
               "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"" +
                   std::string(2 * 1024 * 1024, 'a') + "\"}}\n\n");
    UsageMeter m(ModelApi::anthropic_messages, BodyForm::sse);
    std::size_t most = 0;
    for (std::size_t i = 0; i < big.size(); i += 4096) {
        m.feed(std::string_view(big).substr(i, 4096));
        most = std::max(most, m.held());
    }
    m.finish();
    CHECK(most <= kMaxSseEventBytes);
    CHECK(m.usage().state == UsageState::unavailable);
    CHECK(m.usage().reason == "an SSE event is over 1048576 bytes");
}

TEST_CASE("anthropic JSON body: usage and model; an error body is a provider error; HTML is unavailable") {
    const std::string body =
        "{\"id\":\"msg_013Zva2CMHLNnXjNJJKqJ2EF\",\"type\":\"message\",\"role\":\"assistant\",\"model\":"
        "\"claude-opus-4-1-20250805\",\"content\":[{\"type\":\"text\",\"text\":\"Hi\"}],\"stop_reason\":\"end_turn\","
        "\"stop_sequence\":null,\"usage\":{\"input_tokens\":2095,\"output_tokens\":503,"
        "\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":100}}";
    Usage u = meter_every_way(ModelApi::anthropic_messages, BodyForm::json, body);
    CHECK(u.state == UsageState::reported);
    CHECK(u.model == "claude-opus-4-1-20250805");
    CHECK(u.input_tokens == 2095u);
    CHECK(u.output_tokens == 503u);
    CHECK(u.cache_write_tokens == 0u);
    CHECK(u.cache_read_tokens == 100u);
    Usage err = meter_every_way(ModelApi::anthropic_messages, BodyForm::json,
                                "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":"
                                "\"Number of request tokens has exceeded your per-minute rate limit\"}}");
    CHECK(err.state == UsageState::provider_error);
    CHECK(err.error == "rate_limit_error: Number of request tokens has exceeded your per-minute rate limit");
    Usage html = meter_every_way(ModelApi::anthropic_messages, BodyForm::json, "<html>502 Bad Gateway</html>");
    CHECK(html.state == UsageState::unavailable);
    CHECK(html.reason == "the response body is not a JSON object");
    Usage no_usage = meter_every_way(ModelApi::anthropic_messages, BodyForm::json, "{\"type\":\"message\"}");
    CHECK(no_usage.state == UsageState::unavailable);
    CHECK(no_usage.reason == "no usage in the response");
    // Over the body bound: dropped, not kept.
    UsageMeter m(ModelApi::anthropic_messages, BodyForm::json, kMaxSseEventBytes, 1000);
    m.feed(std::string(800, ' '));
    m.feed(body);
    CHECK(m.held() == 0);
    m.finish();
    CHECK(m.usage().reason == "the JSON body is over 1000 bytes");
}

TEST_CASE("count_tokens: nothing is read, the state is not_metered") {
    Usage u = meter_every_way(ModelApi::anthropic_count_tokens, BodyForm::json, "{\"input_tokens\":2095}");
    CHECK(u.state == UsageState::not_metered);
    CHECK_FALSE(u.input_tokens);
}

TEST_CASE("responses SSE: usage and model from response.completed, reasoning inside output, any split") {
    Usage u = meter_every_way(ModelApi::openai_responses, BodyForm::sse, kResponsesStream);
    CHECK(u.state == UsageState::reported);
    CHECK(u.model == "gpt-5-codex");
    CHECK(u.input_tokens == 9120u);
    CHECK(u.cached_input_tokens == 8064u);
    CHECK(u.output_tokens == 310u);
    CHECK(u.reasoning_tokens == 192u);
    TokenTotals t = counted_tokens(u);
    CHECK(t.input == 9120u);  // cached tokens are inside input_tokens
    CHECK(t.output == 310u);  // reasoning tokens are inside output_tokens
    CHECK(describe(meter_every_way(ModelApi::openai_responses, BodyForm::sse, crlf(kResponsesStream))) ==
          describe(u));
}

TEST_CASE("responses SSE: incomplete and failed end a response; failed without usage is unavailable") {
    std::string inc = kResponsesStream;
    inc.replace(inc.find("event: response.completed"), 25, "event: response.incomplete");
    inc.replace(inc.find("\"type\":\"response.completed\""), 27, "\"type\":\"response.incomplete\"");
    Usage u = meter_every_way(ModelApi::openai_responses, BodyForm::sse, inc);
    CHECK(u.state == UsageState::reported);
    CHECK(u.output_tokens == 310u);
    CHECK(u.error == "response.incomplete");
    const std::string failed =
        kResponsesStream.substr(0, kResponsesStream.find("event: response.output_item.added")) +
        "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":2,\"response\":{\"id\":"
        "\"resp_1\",\"status\":\"failed\",\"model\":\"gpt-5-codex\",\"error\":{\"code\":\"server_error\","
        "\"message\":\"The model failed to generate a response.\"},\"usage\":null}}\n\n";
    Usage f = meter_every_way(ModelApi::openai_responses, BodyForm::sse, failed);
    CHECK(f.state == UsageState::unavailable);
    CHECK(f.reason == "no usage in the response");
    CHECK(f.error == "server_error: The model failed to generate a response.");
    // An error event mid-stream.
    Usage e = meter_every_way(ModelApi::openai_responses, BodyForm::sse,
                              kResponsesStream.substr(0, kResponsesStream.find("event: response.completed")) +
                                  "event: error\ndata: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\","
                                  "\"message\":\"Slow down\",\"param\":null,\"sequence_number\":5}\n\n");
    CHECK(e.state == UsageState::unavailable);
    CHECK(e.error == "rate_limit_exceeded: Slow down");
}

TEST_CASE("responses SSE: missing usage fields") {
    std::string s = kResponsesStream;
    const std::string cached = "\"input_tokens_details\":{\"cached_tokens\":8064},";
    s.erase(s.find(cached), cached.size());
    Usage u = meter_every_way(ModelApi::openai_responses, BodyForm::sse, s);
    CHECK(u.state == UsageState::reported);
    CHECK_FALSE(u.cached_input_tokens);
    std::string no_out = kResponsesStream;
    const std::string out = "\"output_tokens\":310,";
    no_out.erase(no_out.find(out), out.size());
    Usage v = meter_every_way(ModelApi::openai_responses, BodyForm::sse, no_out);
    CHECK(v.state == UsageState::unavailable);
    CHECK(v.reason == "usage lacks output_tokens");
    std::string more_cached = kResponsesStream;
    more_cached.replace(more_cached.find("8064"), 4, "9999");
    Usage w = meter_every_way(ModelApi::openai_responses, BodyForm::sse, more_cached);
    CHECK(w.state == UsageState::unavailable);
    CHECK(w.reason == "usage reports more cached input tokens than input tokens");
}

TEST_CASE("responses JSON body, and a 429 error body") {
    Usage u = meter_every_way(
        ModelApi::openai_responses, BodyForm::json,
        "{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"error\":null,\"model\":"
        "\"gpt-4.1-2025-04-14\",\"output\":[],\"usage\":{\"input_tokens\":36,\"input_tokens_details\":"
        "{\"cached_tokens\":0},\"output_tokens\":87,\"output_tokens_details\":{\"reasoning_tokens\":0},"
        "\"total_tokens\":123}}");
    CHECK(u.state == UsageState::reported);
    CHECK(u.model == "gpt-4.1-2025-04-14");
    CHECK(u.input_tokens == 36u);
    CHECK(u.output_tokens == 87u);
    Usage e = meter_every_way(ModelApi::openai_responses, BodyForm::json,
                              "{\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\",\"param\":null,"
                              "\"code\":\"rate_limit_exceeded\"}}");
    CHECK(e.state == UsageState::provider_error);
    CHECK(e.error == "requests: Rate limit reached");
}

TEST_CASE("chat completions SSE: the include_usage chunk, [DONE], any split; without it unavailable") {
    Usage u = meter_every_way(ModelApi::openai_chat, BodyForm::sse, kChatStream);
    CHECK(u.state == UsageState::reported);
    CHECK(u.model == "gpt-4o-2024-08-06");
    CHECK(u.input_tokens == 1117u);
    CHECK(u.cached_input_tokens == 1024u);
    CHECK(u.output_tokens == 46u);
    CHECK(u.reasoning_tokens == 0u);
    CHECK(describe(meter_every_way(ModelApi::openai_chat, BodyForm::sse, crlf(kChatStream))) == describe(u));
    // The same stream without the usage chunk (no stream_options.include_usage).
    std::string without = kChatStream;
    const auto a = without.find("data: " + kChatChunkHead + "\"choices\":[],");
    without.erase(a, without.find("data: [DONE]") - a);
    Usage v = meter_every_way(ModelApi::openai_chat, BodyForm::sse, without);
    CHECK(v.state == UsageState::unavailable);
    CHECK(v.reason == "no usage in the response");
    CHECK(v.model == "gpt-4o-2024-08-06");
    // An error chunk before anything else.
    Usage e = meter_every_way(ModelApi::openai_chat, BodyForm::sse,
                              "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n");
    CHECK(e.state == UsageState::provider_error);
    // Bytes after [DONE] are not read.
    Usage after = meter_every_way(ModelApi::openai_chat, BodyForm::sse, kChatStream + "data: {garbage\n\n");
    CHECK(describe(after) == describe(u));
}

TEST_CASE("chat completions SSE: text chunks are not parsed, a usage value in any spacing is") {
    // The usage chunk with spaces and a line break around the colon.
    std::string spaced = kChatStream;
    spaced.replace(spaced.find("\"choices\":[],\"usage\":{"), 22, "\"choices\":[],\"usage\" :\ndata:  {");
    Usage u = meter_every_way(ModelApi::openai_chat, BodyForm::sse, spaced);
    CHECK(u.state == UsageState::reported);
    CHECK(u.input_tokens == 1117u);
    // A broken usage chunk is parsed, and breaks the meter.
    std::string broken = kChatStream;
    broken.insert(broken.find("data: [DONE]"), "data: {\"usage\": {oops\n\n");
    Usage v = meter_every_way(ModelApi::openai_chat, BodyForm::sse, broken);
    CHECK(v.state == UsageState::unavailable);
    CHECK(v.reason == "an event's data is not a JSON object");
}

TEST_CASE("chat completions JSON body") {
    Usage u = meter_every_way(
        ModelApi::openai_chat, BodyForm::json,
        "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1741569952,\"model\":\"o3-2025-04-16\","
        "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"finish_reason\":"
        "\"stop\"}],\"usage\":{\"prompt_tokens\":19,\"completion_tokens\":1010,\"total_tokens\":1029,"
        "\"prompt_tokens_details\":{\"cached_tokens\":0},\"completion_tokens_details\":{\"reasoning_tokens\":"
        "960}}}");
    CHECK(u.state == UsageState::reported);
    CHECK(u.model == "o3-2025-04-16");
    CHECK(u.input_tokens == 19u);
    CHECK(u.output_tokens == 1010u);
    CHECK(u.reasoning_tokens == 960u);
    CHECK(counted_tokens(u).total() == 1029u);
}

TEST_CASE("codex WebSocket: one usage per response on one connection, notes outside responses ignored") {
    auto event_of = [](std::string_view sse, std::string_view name) {
        auto at = sse.find("data: {\"type\":\"" + std::string(name) + "\"");
        REQUIRE(at != std::string_view::npos);
        at += 6;
        return std::string(sse.substr(at, sse.find('\n', at) - at));
    };
    const std::string created = event_of(kResponsesStream, "response.created");
    const std::string delta = event_of(kResponsesStream, "response.output_text.delta");
    const std::string completed = event_of(kResponsesStream, "response.completed");
    WebSocketUsageMeter ws;
    CHECK_FALSE(ws.feed_message("{\"type\":\"codex.rate_limits\",\"primary\":{\"used_percent\":3}}"));
    CHECK_FALSE(ws.feed_message(created));
    CHECK_FALSE(ws.feed_message(delta));
    auto first = ws.feed_message(completed);
    REQUIRE(first);
    CHECK(first->state == UsageState::reported);
    CHECK(first->input_tokens == 9120u);
    CHECK(first->reasoning_tokens == 192u);
    // The second response on the same connection, numbers of its own.
    CHECK_FALSE(ws.feed_message(created));
    std::string completed2 = completed;
    completed2.replace(completed2.find("310"), 3, "777");
    auto second = ws.feed_message(completed2);
    REQUIRE(second);
    CHECK(second->output_tokens == 777u);
    CHECK_FALSE(ws.finish());  // nothing open
    // An error before a response began: a provider error, ended at once.
    auto err = ws.feed_message("{\"type\":\"error\",\"status\":429,\"error\":{\"type\":\"usage_limit_reached\","
                               "\"message\":\"The usage limit has been reached\"}}");
    REQUIRE(err);
    CHECK(err->state == UsageState::provider_error);
    CHECK(err->error == "usage_limit_reached: The usage limit has been reached");
    // A response left open at close, one replaced by a new one, a non-JSON message.
    CHECK_FALSE(ws.feed_message(created));
    auto replaced = ws.feed_message(created);
    REQUIRE(replaced);
    CHECK(replaced->state == UsageState::unavailable);
    CHECK(replaced->reason == "a new response began before this one completed");
    CHECK_FALSE(ws.feed_message("not json"));
    auto broken = ws.feed_message(completed);  // still ends where it ends
    REQUIRE(broken);
    CHECK(broken->state == UsageState::unavailable);
    CHECK(broken->reason == "a WebSocket message is not a JSON object");
    CHECK_FALSE(ws.feed_message(created));
    auto open = ws.finish();
    REQUIRE(open);
    CHECK(open->reason == "the connection closed before the response completed");
    // Oversize.
    WebSocketUsageMeter small(ModelApi::openai_responses, 100);
    CHECK_FALSE(small.feed_message(std::string(101, ' ')));
    auto over = small.finish();
    REQUIRE(over);
    CHECK(over->reason == "a WebSocket message is over 100 bytes");
}

TEST_CASE("usage meter: a body only nlohmann's parse vouches for is read as before, whatever the answer's text holds") {
    // The answer's text and tool calls are checked, not built; a key twice
    // (here in a tool's input) makes the fast reader step aside, and
    // nlohmann's parse, where the last of two keys counts, reads it whole.
    const std::string body =
        R"({"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":")" +
        std::string(4000, 'a') + R"("},{"type":"tool_use","id":"t","name":"bash","input":{"command":"ls")";
    const std::string tail = R"(}}],"usage":{"input_tokens":12,"output_tokens":3,"cache_read_input_tokens":7}})";
    const Usage once = meter_every_way(ModelApi::anthropic_messages, BodyForm::json, body + tail);
    CHECK(describe(once) == "reported model=claude-x in=12 out=3 cw=- cr=7 cached=- reasoning=- reason= error=");
    const Usage twice =
        meter_every_way(ModelApi::anthropic_messages, BodyForm::json, body + R"(,"command":"rm")" + tail);
    CHECK(describe(twice) == describe(once));
    // A duplicated usage: nlohmann keeps the last, as it always did.
    const Usage last = meter_every_way(
        ModelApi::anthropic_messages, BodyForm::json,
        R"({"type":"message","model":"m","usage":{"input_tokens":1,"output_tokens":1},"usage":{"input_tokens":5,"output_tokens":6}})");
    CHECK(describe(last) == "reported model=m in=5 out=6 cw=- cr=- cached=- reasoning=- reason= error=");
}
