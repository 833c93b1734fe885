#include "gateway/metering/totals.hpp"

#include "gateway/metering/prices.hpp"

#include <nlohmann/json.hpp>

namespace corral::gateway::metering {

namespace {

// Every counted member, in the order run.json shows them.
struct Member {
    const char* name;
    std::uint64_t MeterTotals::*field;
};
constexpr Member kMembers[] = {
    {"requests", &MeterTotals::requests},
    {"input_tokens", &MeterTotals::input_tokens},
    {"output_tokens", &MeterTotals::output_tokens},
    {"cache_write_tokens", &MeterTotals::cache_write_tokens},
    {"cache_read_tokens", &MeterTotals::cache_read_tokens},
    {"cached_input_tokens", &MeterTotals::cached_input_tokens},
    {"reasoning_tokens", &MeterTotals::reasoning_tokens},
    {"usd_micros", &MeterTotals::usd_micros},
    {"cost_unavailable", &MeterTotals::cost_unavailable},
    {"usage_unavailable", &MeterTotals::usage_unavailable},
    {"provider_errors", &MeterTotals::provider_errors},
    {"budget_refusals", &MeterTotals::budget_refusals},
    {"policy_refusals", &MeterTotals::policy_refusals},
    {"over_reservations", &MeterTotals::over_reservations},
};

}  // namespace

nlohmann::json totals_json(const MeterTotals& t) {
    nlohmann::ordered_json j;
    for (const auto& m : kMembers) {
        if (std::string_view(m.name) == "usd_micros") j["usd"] = static_cast<double>(t.usd_micros) / 1e6;
        j[m.name] = t.*m.field;
    }
    return nlohmann::json(j);
}

Checked<MeterTotals> totals_from_json(const nlohmann::json& j) {
    if (!j.is_object()) return Failed{"model totals are not a JSON object"};
    MeterTotals t;
    for (const auto& m : kMembers) {
        auto it = j.find(m.name);
        if (it == j.end() || !it->is_number_unsigned())
            return Failed{std::string("model totals: '") + m.name + "' missing or not an unsigned integer"};
        t.*m.field = it->get<std::uint64_t>();
    }
    return t;
}

std::string totals_summary(const MeterTotals& t) {
    std::string s = "model traffic: " + std::to_string(t.requests) + (t.requests == 1 ? " request, " : " requests, ") +
                    std::to_string(t.input_tokens + t.cache_write_tokens + t.cache_read_tokens) + " input + " +
                    std::to_string(t.output_tokens) + " output tokens, " + usd_text(t.usd_micros);
    if (t.cost_unavailable) s += " (" + std::to_string(t.cost_unavailable) + " without a cost)";
    std::string refused;
    if (t.budget_refusals) refused += std::to_string(t.budget_refusals) + " by budget";
    if (t.policy_refusals) refused += (refused.empty() ? "" : ", ") + std::to_string(t.policy_refusals) + " by policy";
    if (!refused.empty()) s += ", refused: " + refused;
    if (t.usage_unavailable) s += ", " + std::to_string(t.usage_unavailable) + " without usage";
    if (t.over_reservations)
        s += ", " + std::to_string(t.over_reservations) + " over their reservation";
    return s;
}

}  // namespace corral::gateway::metering
