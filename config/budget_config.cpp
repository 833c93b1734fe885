#include "config/budget_config.hpp"

#include <cmath>
#include <regex>


namespace corral::config {

namespace {

// The largest USD figure accepted anywhere: a million dollars (a budget) or a
// million dollars per million tokens (a rate). Keeps every micro-dollar sum
// far from overflowing.
constexpr double kMaxUsd = 1'000'000.0;

// A dollar figure as integer micro-dollars, rounded to the nearest one.
std::optional<std::uint64_t> usd_value(Table& s, const std::string& k, const toml::value& v,
                                       const std::string& allowed) {
    double d = v.is_floating() ? v.as_floating() : v.is_integer() ? static_cast<double>(v.as_integer()) : -1;
    if (!(v.is_floating() || v.is_integer()) || !std::isfinite(d) || d < 0 || d > kMaxUsd) {
        s.checker().bad(v, s.key(k), v.is_floating() ? toml::format(v) : describe(v), allowed);
        return std::nullopt;
    }
    return static_cast<std::uint64_t>(std::llround(d * 1'000'000.0));
}

BudgetLimits budget_limits(Table& s) {
    BudgetLimits b;
    constexpr std::int64_t kMaxCount = std::int64_t{1} << 53;
    auto count = [&](const char* k, std::optional<std::uint64_t>& out) {
        if (auto n = s.integer(k, 0, kMaxCount)) out = static_cast<std::uint64_t>(*n);
    };
    count("requests", b.requests);
    count("input_tokens", b.input_tokens);
    count("output_tokens", b.output_tokens);
    count("total_tokens", b.total_tokens);
    if (const auto* v = s.find("usd")) b.usd_micros = usd_value(s, "usd", *v, "a number of US dollars 0..1000000 like 5.00");
    return b;
}

std::optional<std::string> date_value(Table& s, const toml::value& v) {
    static const std::regex ok("[0-9]{4}-[0-9]{2}-[0-9]{2}");
    if (v.is_local_date()) return toml::format(v);
    if (v.is_string() && std::regex_match(v.as_string().str, ok)) return v.as_string().str;
    s.bad("date", "the date the price was read, YYYY-MM-DD");
    return std::nullopt;
}

std::optional<ModelPrice> model_price(Checker& c, const std::string& model, const toml::value& v) {
    const std::string prefix = "prices." + quote(model);
    if (!v.is_table()) {
        c.bad_value(v, prefix, "a table with input, output, cache_write, cache_read, source, date");
        return std::nullopt;
    }
    Table s(c, v, prefix, {"input", "output", "cache_write", "cache_read", "source", "date"});
    ModelPrice p;
    p.where = where_of(c.file(), v);
    bool ok = true;
    const std::string rate = "US dollars per million tokens 0..1000000 like 3.75";
    auto usd = [&](const char* k, std::uint64_t& out) {
        const auto* rv = s.find(k);
        if (!rv) {
            ok = s.missing(k, rate + " (every price names all four rates; 0 where the provider charges none)");
            return;
        }
        if (auto x = usd_value(s, k, *rv, rate)) out = *x;
        else ok = false;
    };
    usd("input", p.input);
    usd("output", p.output);
    usd("cache_write", p.cache_write);
    usd("cache_read", p.cache_read);
    const std::string source_allowed = "where the price was read (a URL, a contract)";
    if (auto src = s.string("source", source_allowed); src && !src->empty())
        p.source = *src;
    else if (!src && s.has("source"))
        ok = false;  // its wrong type is recorded
    else
        ok = s.missing("source", source_allowed);
    if (const auto* dv = s.find("date")) {
        if (auto d = date_value(s, *dv)) p.date = *d;
        else ok = false;
    } else {
        ok = s.missing("date", "the date the price was read, YYYY-MM-DD");
    }
    if (model.empty() || model.size() > 128) {
        c.bad(v, prefix, "a model name of " + std::to_string(model.size()) + " bytes",
              "the exact model name the requests send, 1-128 bytes");
        ok = false;
    }
    if (!ok) return std::nullopt;
    return p;
}

}  // namespace

BudgetLimits overlay_budget(const BudgetLimits& base, const BudgetLimits& over) {
    BudgetLimits b = base;
    if (over.requests) b.requests = over.requests;
    if (over.input_tokens) b.input_tokens = over.input_tokens;
    if (over.output_tokens) b.output_tokens = over.output_tokens;
    if (over.total_tokens) b.total_tokens = over.total_tokens;
    if (over.usd_micros) b.usd_micros = over.usd_micros;
    return b;
}

BudgetConfig check_budget_table(const toml::value& v, Checker& c) {
    BudgetConfig out;
    if (!v.is_table()) {
        c.bad_value(v, "budget", "a table: requests, input_tokens, output_tokens, total_tokens, usd, [budget.worker]");
        return out;
    }
    out.where = where_of(c.file(), v);
    Table s(c, v, "budget", {"requests", "input_tokens", "output_tokens", "total_tokens", "usd", "worker"});
    out.run = budget_limits(s);
    if (const auto* w = s.find("worker")) {
        if (!w->is_table()) {
            c.bad_value(*w, "budget.worker", "a table: requests, input_tokens, output_tokens, total_tokens, usd");
        } else {
            Table ws(c, *w, "budget.worker", {"requests", "input_tokens", "output_tokens", "total_tokens", "usd"});
            out.worker = budget_limits(ws);
        }
    }
    return out;
}

PriceList check_prices_table(const toml::value& v, Checker& c) {
    PriceList out;
    if (!v.is_table()) {
        c.bad_value(v, "prices", "a table of [prices.\"MODEL\"] tables");
        return out;
    }
    for (const auto& [model, pv] : v.as_table())
        if (auto p = model_price(c, model, pv)) out.emplace(model, std::move(*p));
    return out;
}

MeteringConfig resolve_metering(const BudgetConfig& org_budget, const PriceList& org_prices,
                                const BudgetConfig& worker_budget, const PriceList& worker_prices) {
    MeteringConfig m;
    m.run = overlay_budget(org_budget.run, worker_budget.run);
    m.worker = overlay_budget(org_budget.worker, worker_budget.worker);
    m.prices = org_prices;
    for (const auto& [model, p] : worker_prices) m.prices[model] = p;
    return m;
}

Problem check_usd_budget(const MeteringConfig& m, const std::string& model) {
    if (!m.run.usd_micros && !m.worker.usd_micros) return std::nullopt;
    if (model.empty())
        return Failed{"a usd budget needs the worker's model named (`model`), so that its price is known: the CLI's "
                      "default model has no price here"};
    if (m.prices.count(model)) return std::nullopt;
    return Failed{"a usd budget and no price for the worker's model " + quote(model) + ", allowed: a [prices." +
                  quote(model) + "] table with input, output, cache_write, cache_read, source, date"};
}

}  // namespace corral::config
