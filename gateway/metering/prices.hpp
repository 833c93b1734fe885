// gateway/metering/prices.hpp — what a response cost, from the usage it
// reported and an operator's price table. Integer arithmetic throughout.
//
// Which rate each reported category is charged at:
//
//   category (usage.hpp)       Anthropic Messages    OpenAI Responses / Chat
//   input_tokens               input                 input, for input_tokens - cached_input_tokens
//   cached_input_tokens        —                     cache_read
//   cache_write_tokens         cache_write           — (OpenAI charges no cache writes)
//   cache_read_tokens          cache_read            —
//   output_tokens              output                output
//   reasoning_tokens           —                     nothing more: already inside output_tokens
//
// Anthropic's input_tokens excludes both cache categories, so the three are
// added; OpenAI's input_tokens includes the cached ones, so they are split
// off and charged at the cache-read rate. OpenAI bills reasoning as output
// tokens and reports them inside output_tokens (output_tokens_details is a
// breakdown), so counting them again would double them.
//
// Not priced here (say so where it matters): Anthropic's 1-hour cache writes
// cost more than the 5-minute ones its usage also counts in
// cache_creation_input_tokens (one cache_write rate applies to both: price
// cache_write at the 1-hour rate when the CLI uses it); provider-hosted tool
// fees (web search per call), which the model policy refuses.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "config/budget_config.hpp"
#include "gateway/metering/usage.hpp"

namespace corral::gateway::metering {

// Rates are integer micro-dollars per million tokens: $3.75 per million
// tokens is 3'750'000, so any price quoted to six decimals of a dollar per
// million is exact. One token at that rate costs 3.75 micro-dollars.
// The config's own type (config/budget_config.hpp ModelPrice): input,
// output, cache_write, cache_read; source (where the operator read it) and
// date (prices change; a ledger line says which one it used).
using Price = config::ModelPrice;

// A USD-per-million-tokens figure as a rate: rounded to the nearest
// micro-dollar per million; throws UsageError naming `what` for a value that
// is negative, not finite or over $1,000,000 per million tokens.
std::uint64_t rate_from_usd_per_million(double usd, std::string_view what);

// Prices by exact model name. No globs and no prefix matching: a name like
// "claude-sonnet-4-5" is an alias the provider may move to a new snapshot at
// a new price, so a price applies only to the name it was written for; give
// the alias and the dated name each their own entry to price both.
class PriceTable {
public:
    // Throws UsageError when `model` is empty or already has a price.
    void add(std::string model, Price price);
    const Price* find(std::string_view model) const;
    bool empty() const { return prices_.empty(); }

private:
    std::map<std::string, Price, std::less<>> prices_;
};

// Micro-dollars as a person reads them: 1234567 → "$1.234567".
std::string usd_text(std::uint64_t micros);

// Micro-dollars for `u` at `p`: the categories above each multiplied by their
// rate, summed exactly (128-bit), then divided by one million once, rounding
// up (a budget never undercounts; the most a response is over-charged is one
// micro-dollar). Saturates at UINT64_MAX.
std::uint64_t cost_micros(const Usage& u, const Price& p);

// The worst case of a request at `p`: input tokens at the highest of the
// input-side rates (the provider decides what is cached), output at output.
std::uint64_t worst_case_micros(std::uint64_t input_tokens, std::uint64_t output_tokens, const Price& p);

struct Cost {
    enum class State { computed, unavailable };
    State state = State::unavailable;
    std::uint64_t usd_micros = 0;
    std::string model;   // the name priced
    std::string reason;  // why unavailable
    std::string source;  // the price's, when computed from one
    std::string date;
};

// The cost of one response. The model priced is the one that answered
// (usage.model); only when the response named none, `request_model`.
// Usage that is not_metered or provider_error costs 0 (computed, no price
// needed); unavailable usage has an unavailable cost.
Cost cost_of(const Usage& u, const PriceTable& prices, std::string_view request_model = {});

}  // namespace corral::gateway::metering
