// config/budget_config.hpp — what a worker's model traffic may spend: the
// [budget] table (per run, and [budget.worker] across a worker's runs) and
// the [prices."MODEL"] tables, in org.toml and worker.toml.
//
//   [budget]                     # each run of the worker
//   requests = 200
//   input_tokens = 2_000_000
//   output_tokens = 100_000
//   total_tokens = 2_100_000
//   usd = 5.00
//   [budget.worker]              # all its runs together (the daemon keeps it)
//   usd = 50
//   [prices."claude-sonnet-4-5-20250929"]   # USD per million tokens
//   input = 3.0
//   output = 15.0
//   cache_write = 3.75
//   cache_read = 0.30
//   source = "https://www.anthropic.com/pricing"
//   date = "2026-11-01"
//
// Resolution per worker: each [budget] key of worker.toml replaces org.toml's
// (the same for [budget.worker]); a worker's price for a model replaces the
// organisation's for that model. Every price needs all four rates, a source
// and a date: a cost is never computed from a rate somebody did not write.
// docs/budgets.md is the reference.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/checked.hpp"
#include "config/checker.hpp"

#include <toml.hpp>

namespace corral::config {

// Limits; an unset one is not enforced. usd_micros: micro-dollars. The one
// type of a budget's limits: the gateway's accounts enforce this value
// (gateway/metering/budget.hpp calls it Budget).
struct BudgetLimits {
    std::optional<std::uint64_t> requests;
    std::optional<std::uint64_t> input_tokens;
    std::optional<std::uint64_t> output_tokens;
    std::optional<std::uint64_t> total_tokens;
    std::optional<std::uint64_t> usd_micros;
    bool any() const { return requests || input_tokens || output_tokens || total_tokens || usd_micros; }
    // A token or USD limit is set (unavailable usage then exhausts the account).
    bool meters_usage() const { return input_tokens || output_tokens || total_tokens || usd_micros; }
};
// Each limit of `over` that is set replaces the one in `base`.
BudgetLimits overlay_budget(const BudgetLimits& base, const BudgetLimits& over);

struct BudgetConfig {
    BudgetLimits run;     // [budget]
    BudgetLimits worker;  // [budget.worker]
    std::string where;    // "FILE:LINE" of [budget], for messages ("" = not written)
};

// One model's rates, integer micro-dollars per million tokens ($3.75 per
// million = 3'750'000). The one type of a price: the gateway's PriceTable
// holds these as the config parsed them (gateway/metering/prices.hpp calls
// it Price).
struct ModelPrice {
    std::uint64_t input = 0;
    std::uint64_t output = 0;
    std::uint64_t cache_write = 0;
    std::uint64_t cache_read = 0;
    std::string source;
    std::string date;   // YYYY-MM-DD
    std::string where;  // "FILE:LINE"
};
using PriceList = std::map<std::string, ModelPrice>;  // exact model name → price

// What the gateway meters and limits for one worker (or, as the defaults,
// for identities no worker's entry names).
struct MeteringConfig {
    BudgetLimits run;
    BudgetLimits worker;
    PriceList prices;
};

// The [budget] table at `v` (key "budget"); records every problem in `c`
// ("FILE:LINE: key 'budget.usd': got -1, allowed: ...").
BudgetConfig check_budget_table(const toml::value& v, Checker& c);
// The [prices] table at `v`.
PriceList check_prices_table(const toml::value& v, Checker& c);

// A worker's metering: the organisation's with the worker's on top.
MeteringConfig resolve_metering(const BudgetConfig& org_budget, const PriceList& org_prices,
                                const BudgetConfig& worker_budget, const PriceList& worker_prices);

// Why a worker whose model is `model` ("" = the CLI's default) cannot have
// `m`'s USD limits; none when it can (no USD limit, or the model has a price).
Problem check_usd_budget(const MeteringConfig& m, const std::string& model);

}  // namespace corral::config
