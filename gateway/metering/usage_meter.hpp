// gateway/metering/usage_meter.hpp — the usage a model response reports,
// read from the response as it streams by.
//
// A meter sees a copy of the decoded body bytes (de-chunked, identity
// encoding) in the pieces the relay forwards, in order; it never holds the
// stream back and never holds more than one SSE event (kMaxSseEventBytes) or,
// for a non-streaming JSON body, the body (kMaxJsonBodyBytes). Each event's
// data is read into an nlohmann::json holding only the members read below
// (base/strict_json.hpp, read_json_selected; a document that reader does not
// vouch for is parsed whole by nlohmann); only the events that can carry usage,
// the model or an error are parsed at all (by their `event:` name, when the
// provider sends one; a Chat Completions chunk after the first when its raw
// bytes hold a non-null "usage" or an "error"), so text deltas cost a line
// scan and nothing more.
//
// What each API reports, and where (numbers are the provider's, see usage.hpp):
// - Anthropic Messages, SSE: `message_start` data.message.{model, usage};
//   `message_delta` data.usage, whose output_tokens is the running total
//   (each value replaces the last, never adds), and which may repeat
//   input/cache fields; `message_stop`; `error` data.error.{type, message}.
//   Reported once a message_delta carried output_tokens and input_tokens is
//   known. JSON body: {type: "message", model, usage} or {type: "error", error}.
// - OpenAI Responses, SSE or codex's WebSocket: `response.created` /
//   `response.in_progress` data.response.model; `response.completed`,
//   `response.incomplete`, `response.failed` data.response.{model, usage:
//   {input_tokens, input_tokens_details.cached_tokens, output_tokens,
//   output_tokens_details.reasoning_tokens}, error}; `error` events.
//   JSON body: the response object {model, usage, error}.
// - OpenAI Chat Completions, SSE: each `data:` a chunk {model, usage}; usage
//   (prompt_tokens, prompt_tokens_details.cached_tokens, completion_tokens,
//   completion_tokens_details.reasoning_tokens) is non-null only in the last
//   chunk, and only when the request set stream_options.include_usage;
//   `data: [DONE]` ends it; {error} chunks. JSON body: the completion object.
// - count_tokens: nothing read; the state is not_metered.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "gateway/metering/sse_parser.hpp"
#include "gateway/metering/usage.hpp"

namespace corral::gateway::metering {

// A non-streaming answer is one JSON document, parsed when it ends; above
// this it is not kept (usage unavailable). 8 MiB holds a 128k-token answer
// with its JSON escapes.
inline constexpr std::size_t kMaxJsonBodyBytes = 8 * 1024 * 1024;

enum class BodyForm { sse, json };
// text/event-stream (any parameters, any case) → sse; anything else is read
// as a JSON body (an HTML error page then fails to parse: unavailable).
BodyForm body_form_for(std::string_view content_type);

// One response's usage as its events arrive (shared by the HTTP and the
// WebSocket meter). Not for direct use.
class ResponseUsage {
public:
    explicit ResponseUsage(ModelApi api) { u_.api = api; }
    // One event: its SSE name ("" for none / a WebSocket message) and its data.
    void on_event(std::string_view name, std::string_view data);
    // The same, its data already parsed (a WebSocket message).
    void on_value(std::string_view name, const nlohmann::json& data);
    // A whole non-streaming JSON body.
    void on_body(std::string_view body);
    // The stream cannot be trusted any more (the first reason is kept).
    void break_off(std::string reason);
    // The response is over (a terminal event was seen).
    bool ended() const { return ended_; }
    bool begun() const { return begun_; }
    bool broken() const { return !broken_.empty(); }
    Usage result() const;

private:
    void on_parsed(std::string_view type, const nlohmann::json& d);
    void on_error(const nlohmann::json& d);
    void take_model(const nlohmann::json& holder);
    void take_usage(const nlohmann::json& usage);
    void take_count(const nlohmann::json& obj, const char* key, std::optional<std::uint64_t>& into,
                    std::string_view where);

    Usage u_;
    std::string broken_;      // why the usage cannot be trusted ("" = it can)
    bool begun_ = false;      // a message / response started
    bool final_seen_ = false; // the final usage arrived
    bool ended_ = false;
    bool error_before_start_ = false;
};

// An HTTP response body (SSE or JSON).
class UsageMeter {
public:
    UsageMeter(ModelApi api, BodyForm form, std::size_t max_event_bytes = kMaxSseEventBytes,
               std::size_t max_json_body_bytes = kMaxJsonBodyBytes);
    UsageMeter(const UsageMeter&) = delete;
    UsageMeter& operator=(const UsageMeter&) = delete;

    // The next piece of the decoded body, in order, of any size.
    void feed(std::string_view piece);
    // The body is complete (or cut: a cut stream lacks its final usage).
    void finish();
    // After finish(): what the response reported.
    const Usage& usage() const { return usage_; }
    // Bytes held now (one event, or the JSON body so far).
    std::size_t held() const { return sse_.held() + body_.size(); }

private:
    ModelApi api_;
    BodyForm form_;
    std::size_t max_body_;
    ResponseUsage response_;
    SseParser sse_;
    std::string body_;
    bool body_over_ = false;
    bool finished_ = false;
    Usage usage_;
};

// codex's responses WebSocket: each server text message is one JSON event of
// the Responses shapes. One connection carries many responses, one after the
// other; each terminal event (response.completed / incomplete / failed, or
// an `error`) ends one and hands back its usage.
class WebSocketUsageMeter {
public:
    explicit WebSocketUsageMeter(ModelApi api = ModelApi::openai_responses,
                                 std::size_t max_message_bytes = kMaxSseEventBytes)
        : api_(api), max_(max_message_bytes), current_(api) {}

    // One whole server text message. Returns the usage of the response it
    // ended, if it ended one. A message that is not a JSON event, or is over
    // max_message_bytes, makes the response in flight (or the next one)
    // unavailable. A response.created while another is open ends that one
    // (unavailable: it never completed).
    std::optional<Usage> feed_message(std::string_view message);
    // The connection closed: a response still open is unavailable.
    std::optional<Usage> finish();
    // A message could not be read whole (its frames, not its JSON): the
    // response in flight, or the next one, is unavailable for `reason`.
    void break_off(std::string reason);

private:
    Usage end_current();

    ModelApi api_;
    std::size_t max_;
    ResponseUsage current_;
    bool dirty_ = false;  // current_ has seen something
};

}  // namespace corral::gateway::metering
