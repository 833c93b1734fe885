// gateway/metering/usage.hpp — which model API a request speaks, and the
// usage one response reports, in the provider's own categories.
//
// Pure data and small pure functions: no I/O. The parsers that fill a Usage
// are in usage_meter.hpp, prices and cost in prices.hpp, budgets in budget.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace corral::gateway::metering {

// The model APIs the gateway meters, told apart by route (the paths do not
// overlap between providers). `none`: a route that is not metered at all.
enum class ModelApi {
    none,
    anthropic_messages,      // POST /v1/messages
    anthropic_count_tokens,  // POST /v1/messages/count_tokens: a request, no tokens
    openai_responses,        // POST /v1/responses, /backend-api/codex/responses (HTTP or WebSocket)
    openai_chat,             // POST /v1/chat/completions
};

enum class Provider { none, anthropic, openai };

Provider provider_of(ModelApi api);
std::string_view model_api_name(ModelApi api);

// reported: the provider said how many tokens the response used.
// unavailable: it should have and did not (or said it in a form the meter
//   cannot trust); `reason` says what was missing. Budgets fail closed on it.
// not_metered: a route with nothing to count but the request itself
//   (count_tokens).
// provider_error: the provider answered with an error before any message
//   began (a 429 or 529 JSON body, an `error` event as the first event): it
//   generated nothing, and neither provider bills such a request; `error`
//   says what it was. A request, zero tokens. An error after a message began
//   is `unavailable` (part of it may have been billed).
enum class UsageState { unavailable, reported, not_metered, provider_error };
std::string_view usage_state_name(UsageState s);

// The numbers as the provider reports them (no category is folded into
// another here; counted_tokens() and cost_of() know each provider's rules).
// Anthropic: input_tokens excludes the cache tokens (cache_write_tokens =
//   cache_creation_input_tokens, cache_read_tokens = cache_read_input_tokens).
// OpenAI: input_tokens includes cached_input_tokens
//   (input_tokens_details.cached_tokens / prompt_tokens_details.cached_tokens),
//   output_tokens includes reasoning_tokens.
struct Usage {
    ModelApi api = ModelApi::none;
    UsageState state = UsageState::unavailable;
    std::string reason;  // why unavailable; empty otherwise
    std::string error;   // the provider's error ("overloaded_error: Overloaded"), when it sent one
    std::string model;   // the model that answered (the response's), "" when it did not say
    std::optional<std::uint64_t> input_tokens;
    std::optional<std::uint64_t> output_tokens;
    std::optional<std::uint64_t> cache_write_tokens;   // Anthropic only
    std::optional<std::uint64_t> cache_read_tokens;    // Anthropic only
    std::optional<std::uint64_t> cached_input_tokens;  // OpenAI only
    std::optional<std::uint64_t> reasoning_tokens;     // OpenAI only
};

// Tokens as budgets count them: every input token the provider processed
// (Anthropic: input + cache write + cache read; OpenAI: input_tokens, which
// already holds the cached ones) and every output token (OpenAI's reasoning
// tokens are inside output_tokens already). Saturates instead of wrapping.
struct TokenTotals {
    std::uint64_t input = 0;
    std::uint64_t output = 0;
    std::uint64_t total() const;
};
TokenTotals counted_tokens(const Usage& u);

// Saturating addition and multiplication (token counts come from the
// network; a sum must never wrap into a small number).
std::uint64_t add_saturating(std::uint64_t a, std::uint64_t b);

}  // namespace corral::gateway::metering
