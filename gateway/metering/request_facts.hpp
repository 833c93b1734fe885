// gateway/metering/request_facts.hpp — what a model request body says about
// its own cost before it is sent: the model it asks for, the most output it
// allows, whether it streams. Read once per request to reserve its worst
// case (budget.hpp); pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/metering/model_body.hpp"
#include "gateway/metering/usage.hpp"

namespace corral::gateway::metering {

// Request bodies above this are not parsed (the gateway's max_body_bytes
// default is 1 MiB; a larger configured cap still gets facts "unknown").
inline constexpr std::size_t kMaxRequestFactsBytes = kMaxModelBodyBytes;
// OpenAI's documented upper bound of Chat Completions `n`.
inline constexpr std::uint64_t kMaxCompletionsPerRequest = 128;

struct RequestFacts {
    // False: the body was not read (not JSON, not an object, too large);
    // `problem` says why and every fact below is unknown. The policy decides
    // what an unknown request may do; budgets treat it at its policy caps.
    bool parsed = false;
    std::string problem;
    ModelApi api = ModelApi::none;
    std::size_t body_bytes = 0;
    std::optional<std::string> model;
    // The output cap the request names, by API: Anthropic max_tokens;
    // Responses max_output_tokens; Chat Completions max_completion_tokens
    // or the older max_tokens (the larger when both are given).
    std::optional<std::uint64_t> max_output_tokens;
    // How many completions one request asks for, each up to the cap: Chat
    // Completions `n` (1 when absent). An `n` that is not a whole number from
    // 1 to kMaxCompletionsPerRequest counts as that maximum (`problem` says
    // why), so a server that reads it leniently never spends past the worst
    // case reserved.
    std::uint64_t completions = 1;
    std::optional<bool> stream;
    // Chat Completions: stream_options.include_usage (without it a stream
    // carries no usage at all).
    bool include_usage = false;
    // Input the body's size does not bound, and why ("" = none): a
    // Responses previous_response_id, conversation or prompt template (the
    // provider adds stored context), a document or file block (Anthropic
    // `document`, OpenAI `input_file`: each PDF page is also read as an
    // image, so a small file can cost more tokens than it has bytes), an
    // image the provider fetches (Anthropic source type url or file,
    // Responses input_image by file_id or a non-data: URL, Chat image_url
    // with a non-data: URL: up to ~1 600 tokens each for a few bytes).
    std::string unbounded_input;
};

// The fields a request body names its output cap in, by API; when several
// are given the largest counts: Anthropic max_tokens; Responses
// max_output_tokens; Chat Completions max_completion_tokens and the older
// max_tokens. Empty for ModelApi::none. The model policy caps the same fields.
std::vector<const char*> output_cap_fields(ModelApi api);

// The facts of one request body (an HTTP body, or one codex WebSocket
// `response.create` message, whose fields are the same at the top level).
RequestFacts request_facts(ModelApi api, const ModelBody& body);
// The same on the body's text, parsed here if at most `max_bytes` (tests).
RequestFacts request_facts(ModelApi api, std::string_view body, std::size_t max_bytes = kMaxRequestFactsBytes);

}  // namespace corral::gateway::metering
