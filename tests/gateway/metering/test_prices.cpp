#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "base/sys_error.hpp"
#include "gateway/metering/prices.hpp"

using namespace corral::gateway::metering;

namespace {

Price price(double in, double out, double cw, double cr) {
    return {rate_from_usd_per_million(in, "in"), rate_from_usd_per_million(out, "out"),
            rate_from_usd_per_million(cw, "cw"), rate_from_usd_per_million(cr, "cr"), "https://example.test/pricing",
            "2026-11-01"};
}

Usage anthropic(std::uint64_t in, std::uint64_t cw, std::uint64_t cr, std::uint64_t out) {
    Usage u;
    u.api = ModelApi::anthropic_messages;
    u.state = UsageState::reported;
    u.model = "claude-sonnet-4-5-20250929";
    u.input_tokens = in;
    u.cache_write_tokens = cw;
    u.cache_read_tokens = cr;
    u.output_tokens = out;
    return u;
}

Usage openai(std::uint64_t in, std::uint64_t cached, std::uint64_t out, std::uint64_t reasoning) {
    Usage u;
    u.api = ModelApi::openai_responses;
    u.state = UsageState::reported;
    u.model = "gpt-5";
    u.input_tokens = in;
    u.cached_input_tokens = cached;
    u.output_tokens = out;
    u.reasoning_tokens = reasoning;
    return u;
}

}  // namespace

TEST_CASE("rates: USD per million tokens as integer micro-dollars per million, bad values refused") {
    CHECK(rate_from_usd_per_million(3, "x") == 3'000'000u);
    CHECK(rate_from_usd_per_million(3.75, "x") == 3'750'000u);
    CHECK(rate_from_usd_per_million(0.075, "x") == 75'000u);
    CHECK(rate_from_usd_per_million(0.1, "x") == 100'000u);  // 0.1 is not exact in binary; rounded to nearest
    CHECK(rate_from_usd_per_million(0, "x") == 0u);
    CHECK_THROWS_AS(rate_from_usd_per_million(-1, "prices.m.input"), corral::UsageError);
    CHECK_THROWS_AS(rate_from_usd_per_million(std::nan(""), "x"), corral::UsageError);
    CHECK_THROWS_AS(rate_from_usd_per_million(1e7, "x"), corral::UsageError);
    try {
        rate_from_usd_per_million(-1, "prices.m.input");
    } catch (const corral::UsageError& e) {
        CHECK(std::string(e.what()).find("prices.m.input") != std::string::npos);
    }
}

TEST_CASE("cost: Anthropic adds input, cache write, cache read and output, each at its rate") {
    // $3 in, $15 out, $3.75 cache write, $0.30 cache read per million:
    // 25*3 + 1200*3.75 + 3400*0.30 + 15*15 = 75 + 4500 + 1020 + 225 = 5820 micro-dollars.
    CHECK(cost_micros(anthropic(25, 1200, 3400, 15), price(3, 15, 3.75, 0.30)) == 5820u);
    // A million of each at once: 3 + 3.75 + 0.30 + 15 dollars.
    CHECK(cost_micros(anthropic(1'000'000, 1'000'000, 1'000'000, 1'000'000), price(3, 15, 3.75, 0.30)) ==
          22'050'000u);
}

TEST_CASE("cost: OpenAI charges cached input at the cache-read rate, reasoning not again") {
    // $1.25 in, $10 out, $0.125 cached: (9120-8064)*1.25 + 8064*0.125 + 310*10 = 1320 + 1008 + 3100.
    const Price p = price(1.25, 10, 0, 0.125);
    CHECK(cost_micros(openai(9120, 8064, 310, 192), p) == 5428u);
    CHECK(cost_micros(openai(9120, 8064, 310, 0), p) == 5428u);  // reasoning is inside output already
    CHECK(cost_micros(openai(9120, 0, 310, 0), p) == 11400u + 3100u);
    Usage chat = openai(9120, 8064, 310, 192);
    chat.api = ModelApi::openai_chat;
    CHECK(cost_micros(chat, p) == 5428u);
    // A cache-write rate has no effect for OpenAI (it charges no writes).
    CHECK(cost_micros(openai(9120, 8064, 310, 192), price(1.25, 10, 99, 0.125)) == 5428u);
}

TEST_CASE("cost: the sum is rounded up once, to the micro-dollar, and saturates") {
    const Price p = price(0.075, 0, 0, 0);
    CHECK(cost_micros(openai(1, 0, 0, 0), p) == 1u);    // 0.075 → 1
    CHECK(cost_micros(openai(13, 0, 0, 0), p) == 1u);   // 0.975 → 1
    CHECK(cost_micros(openai(14, 0, 0, 0), p) == 2u);   // 1.05 → 2
    CHECK(cost_micros(openai(40, 0, 0, 0), p) == 3u);   // exactly 3
    CHECK(cost_micros(openai(0, 0, 0, 0), p) == 0u);
    // Rounded once over the sum, not per category: 1 + 1 tokens at $0.5 = 1 micro-dollar, not 2.
    CHECK(cost_micros(anthropic(1, 0, 0, 1), price(0.5, 0.5, 0, 0)) == 1u);
    const auto max = std::numeric_limits<std::uint64_t>::max();
    CHECK(cost_micros(anthropic(max, max, max, max), price(1e6, 1e6, 1e6, 1e6)) == max);
}

TEST_CASE("worst case: input at the highest input-side rate") {
    const Price p = price(3, 15, 3.75, 0.30);
    CHECK(worst_case_micros(1000, 100, p) == 3750u + 1500u);
}

TEST_CASE("price table: exact names only; the responding model is priced; no price, no cost") {
    PriceTable t;
    t.add("claude-sonnet-4-5-20250929", price(3, 15, 3.75, 0.30));
    CHECK_THROWS_AS(t.add("claude-sonnet-4-5-20250929", price(1, 1, 1, 1)), corral::UsageError);
    CHECK_THROWS_AS(t.add("", price(1, 1, 1, 1)), corral::UsageError);
    CHECK(t.find("claude-sonnet-4-5-20250929"));
    CHECK_FALSE(t.find("claude-sonnet-4-5"));
    CHECK_FALSE(t.find("claude-sonnet-4-5-2025092"));
    Cost c = cost_of(anthropic(25, 1200, 3400, 15), t, "claude-sonnet-4-5");
    CHECK(c.state == Cost::State::computed);
    CHECK(c.usd_micros == 5820u);
    CHECK(c.model == "claude-sonnet-4-5-20250929");
    CHECK(c.source == "https://example.test/pricing");
    CHECK(c.date == "2026-11-01");
    Usage other = anthropic(25, 0, 0, 15);
    other.model = "claude-opus-4-1";
    Cost none = cost_of(other, t, "claude-sonnet-4-5-20250929");  // the response's model is what was used
    CHECK(none.state == Cost::State::unavailable);
    CHECK(none.reason == "no price for model 'claude-opus-4-1'");
    other.model = "";
    Cost from_request = cost_of(other, t, "claude-sonnet-4-5-20250929");
    CHECK(from_request.state == Cost::State::computed);
    CHECK(cost_of(other, t).reason == "no model named by the request or the response");
    Usage gone = anthropic(1, 1, 1, 1);
    gone.state = UsageState::unavailable;
    gone.reason = "no usage in the response";
    CHECK(cost_of(gone, t).reason == "usage unavailable: no usage in the response");
    Usage err;
    err.state = UsageState::provider_error;
    Cost zero = cost_of(err, PriceTable{});
    CHECK(zero.state == Cost::State::computed);
    CHECK(zero.usd_micros == 0u);
}
