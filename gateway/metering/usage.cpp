#include "gateway/metering/usage.hpp"

#include <limits>

namespace corral::gateway::metering {

Provider provider_of(ModelApi api) {
    switch (api) {
    case ModelApi::anthropic_messages:
    case ModelApi::anthropic_count_tokens: return Provider::anthropic;
    case ModelApi::openai_responses:
    case ModelApi::openai_chat: return Provider::openai;
    case ModelApi::none: break;
    }
    return Provider::none;
}

std::string_view model_api_name(ModelApi api) {
    switch (api) {
    case ModelApi::anthropic_messages: return "anthropic_messages";
    case ModelApi::anthropic_count_tokens: return "anthropic_count_tokens";
    case ModelApi::openai_responses: return "openai_responses";
    case ModelApi::openai_chat: return "openai_chat";
    case ModelApi::none: break;
    }
    return "none";
}

std::string_view usage_state_name(UsageState s) {
    switch (s) {
    case UsageState::reported: return "reported";
    case UsageState::not_metered: return "not_metered";
    case UsageState::provider_error: return "provider_error";
    case UsageState::unavailable: break;
    }
    return "unavailable";
}

std::uint64_t add_saturating(std::uint64_t a, std::uint64_t b) {
    return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max() : a + b;
}

std::uint64_t TokenTotals::total() const { return add_saturating(input, output); }

TokenTotals counted_tokens(const Usage& u) {
    TokenTotals t;
    t.output = u.output_tokens.value_or(0);
    t.input = u.input_tokens.value_or(0);
    if (provider_of(u.api) == Provider::anthropic)
        t.input = add_saturating(add_saturating(t.input, u.cache_write_tokens.value_or(0)),
                                 u.cache_read_tokens.value_or(0));
    return t;
}

}  // namespace corral::gateway::metering
