#include "gateway/metering/prices.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/sys_error.hpp"

namespace corral::gateway::metering {

namespace {

__extension__ typedef unsigned __int128 u128;

constexpr std::uint64_t kPerMillion = 1'000'000;
constexpr double kMaxUsdPerMillion = 1'000'000.0;

std::uint64_t micros_rounded_up(u128 rate_token_products) {
    u128 micros = (rate_token_products + (kPerMillion - 1)) / kPerMillion;
    return micros > std::numeric_limits<std::uint64_t>::max() ? std::numeric_limits<std::uint64_t>::max()
                                                              : static_cast<std::uint64_t>(micros);
}

u128 times(std::uint64_t tokens, std::uint64_t rate) { return static_cast<u128>(tokens) * rate; }

}  // namespace

std::uint64_t rate_from_usd_per_million(double usd, std::string_view what) {
    if (!std::isfinite(usd) || usd < 0 || usd > kMaxUsdPerMillion)
        throw UsageError(std::string(what) + ": " + std::to_string(usd) +
                         " is not a price: give USD per million tokens, from 0 to 1000000");
    return static_cast<std::uint64_t>(std::llround(usd * 1e6));
}

std::string usd_text(std::uint64_t micros) {
    std::string frac = std::to_string(micros % 1'000'000);
    return "$" + std::to_string(micros / 1'000'000) + "." + std::string(6 - frac.size(), '0') + frac;
}

void PriceTable::add(std::string model, Price price) {
    if (model.empty()) throw UsageError("prices: a model name is empty; give the exact name the API uses");
    if (prices_.count(model)) throw UsageError("prices: '" + model + "' has two prices; give one");
    prices_.emplace(std::move(model), std::move(price));
}

const Price* PriceTable::find(std::string_view model) const {
    auto it = prices_.find(model);
    return it == prices_.end() ? nullptr : &it->second;
}

std::uint64_t cost_micros(const Usage& u, const Price& p) {
    const std::uint64_t input = u.input_tokens.value_or(0);
    const std::uint64_t output = u.output_tokens.value_or(0);
    u128 sum = times(output, p.output);
    if (provider_of(u.api) == Provider::anthropic) {
        sum += times(input, p.input);
        sum += times(u.cache_write_tokens.value_or(0), p.cache_write);
        sum += times(u.cache_read_tokens.value_or(0), p.cache_read);
    } else {
        // Cached input is part of input_tokens (usage.hpp); more cached than
        // input is refused as unavailable usage before it gets here.
        const std::uint64_t cached = std::min(u.cached_input_tokens.value_or(0), input);
        sum += times(input - cached, p.input);
        sum += times(cached, p.cache_read);
    }
    return micros_rounded_up(sum);
}

std::uint64_t worst_case_micros(std::uint64_t input_tokens, std::uint64_t output_tokens, const Price& p) {
    const std::uint64_t input_rate = std::max({p.input, p.cache_write, p.cache_read});
    return micros_rounded_up(times(input_tokens, input_rate) + times(output_tokens, p.output));
}

Cost cost_of(const Usage& u, const PriceTable& prices, std::string_view request_model) {
    Cost c;
    c.model = u.model.empty() ? std::string(request_model) : u.model;
    if (u.state == UsageState::not_metered || u.state == UsageState::provider_error) {
        c.state = Cost::State::computed;
        return c;
    }
    if (u.state != UsageState::reported) {
        c.reason = "usage unavailable: " + u.reason;
        return c;
    }
    const Price* p = c.model.empty() ? nullptr : prices.find(c.model);
    if (!p) {
        c.reason = c.model.empty() ? "no model named by the request or the response"
                                   : "no price for model '" + c.model + "'";
        return c;
    }
    c.state = Cost::State::computed;
    c.usd_micros = cost_micros(u, *p);
    c.source = p->source;
    c.date = p->date;
    return c;
}

}  // namespace corral::gateway::metering
