// gateway/metering/totals.hpp — what one identity's model traffic came to:
// the numbers run.json's "gateway.model" holds, the daemon's counts answer
// carries, and `corral run` sums up in its last line. One JSON shape for all
// three (to_json / totals_from_json).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "base/checked.hpp"

namespace corral::gateway::metering {

struct MeterTotals {
    std::uint64_t requests = 0;            // metered requests (or WebSocket responses) that reached the provider
    std::uint64_t input_tokens = 0;        // as the providers report them (usage.hpp)
    std::uint64_t output_tokens = 0;
    std::uint64_t cache_write_tokens = 0;
    std::uint64_t cache_read_tokens = 0;
    std::uint64_t cached_input_tokens = 0;
    std::uint64_t reasoning_tokens = 0;
    std::uint64_t usd_micros = 0;          // the sum of the costs that were computed
    std::uint64_t cost_unavailable = 0;    // responses with no computed cost (no price, no usage)
    std::uint64_t usage_unavailable = 0;   // responses that ended without usage
    std::uint64_t provider_errors = 0;     // answered with a provider error before any output
    std::uint64_t budget_refusals = 0;
    std::uint64_t policy_refusals = 0;
    std::uint64_t over_reservations = 0;   // responses that used more than their reserved worst case
    bool operator==(const MeterTotals&) const = default;
};

// {"requests":N, "input_tokens":N, ..., "usd":1.234567, "usd_micros":N, ...}:
// every field, `usd` the micro-dollars as a number for people.
nlohmann::json totals_json(const MeterTotals& t);
// The same object read back; the problem for a member missing or not an
// unsigned integer.
Checked<MeterTotals> totals_from_json(const nlohmann::json& j);

// One line for a person: "model traffic: 3 requests, 1234 input + 56 output
// tokens, $0.012345 (2 refused by budget)".
std::string totals_summary(const MeterTotals& t);

}  // namespace corral::gateway::metering
