#include "gateway/metering/budget.hpp"

#include <stdexcept>

namespace corral::gateway::metering {

namespace {

std::uint64_t sub_floor(std::uint64_t a, std::uint64_t b) { return a > b ? a - b : 0; }

std::uint64_t mul_saturating(std::uint64_t a, std::uint64_t b) {
    std::uint64_t out = 0;
    return __builtin_mul_overflow(a, b, &out) ? UINT64_MAX : out;
}

Amount plus(const Amount& a, const Amount& b) {
    return {add_saturating(a.requests, b.requests), add_saturating(a.input_tokens, b.input_tokens),
            add_saturating(a.output_tokens, b.output_tokens), add_saturating(a.usd_micros, b.usd_micros)};
}

std::string quantity(std::string_view limit, std::uint64_t n) {
    return limit == "usd" ? usd_text(n) : std::to_string(n);
}

}  // namespace

Claim worst_case(const RequestFacts& facts, const WorstCasePolicy& policy, const PriceTable& prices) {
    Claim c;
    c.amount.requests = 1;
    if (facts.api == ModelApi::anthropic_count_tokens || facts.api == ModelApi::none) return c;  // no tokens
    if (facts.parsed && facts.unbounded_input.empty()) {
        const std::uint64_t per = policy.input_bytes_per_token ? policy.input_bytes_per_token : 1;
        c.amount.input_tokens = add_saturating((facts.body_bytes + per - 1) / per, policy.input_overhead_tokens);
    } else {
        c.amount.input_tokens = policy.unbounded_input_tokens;
    }
    const std::uint64_t per_completion = facts.max_output_tokens.value_or(policy.default_max_output_tokens);
    c.amount.output_tokens = mul_saturating(per_completion, facts.completions);
    if (!facts.model || facts.model->empty()) {
        c.unpriced = "the request names no model";
    } else if (const Price* p = prices.find(*facts.model)) {
        c.amount.usd_micros = worst_case_micros(c.amount.input_tokens, c.amount.output_tokens, *p);
    } else {
        c.unpriced = "no price for model '" + *facts.model + "'";
    }
    return c;
}

void Reservation::drop() noexcept {
    if (!account_) return;
    std::lock_guard lock(account_->mu_);
    account_->charge_locked(*this, nullptr, nullptr);
}

Reservation& Reservation::operator=(Reservation&& o) noexcept {
    if (this != &o) {
        drop();
        account_ = o.account_;
        amount_ = o.amount_;
        o.account_ = nullptr;
    }
    return *this;
}

Reservation::~Reservation() { drop(); }

std::variant<Reservation, OverBudget> BudgetAccount::reserve(const Claim& claim) {
    std::lock_guard lock(mu_);
    if (!exhausted_.empty())
        return OverBudget{"usage_unavailable", "budget exhausted: " + exhausted_, 0, 0};
    if (limits_.usd_micros && !claim.unpriced.empty())
        return OverBudget{"no_price", "a USD budget is in force and " + claim.unpriced, 0, 0};
    const Amount& w = claim.amount;
    struct Check {
        const char* name;
        std::optional<std::uint64_t> limit;
        std::uint64_t used;  // spent + reserved
        std::uint64_t need;
    };
    const Check checks[] = {
        {"requests", limits_.requests, add_saturating(spent_.requests, reserved_.requests), w.requests},
        {"input_tokens", limits_.input_tokens, add_saturating(spent_.input_tokens, reserved_.input_tokens),
         w.input_tokens},
        {"output_tokens", limits_.output_tokens, add_saturating(spent_.output_tokens, reserved_.output_tokens),
         w.output_tokens},
        {"total_tokens", limits_.total_tokens, add_saturating(spent_.total_tokens(), reserved_.total_tokens()),
         w.total_tokens()},
        {"usd", limits_.usd_micros, add_saturating(spent_.usd_micros, reserved_.usd_micros), w.usd_micros},
    };
    for (const Check& check : checks) {
        const char* name = check.name;
        const std::uint64_t used = check.used, need = check.need;
        const auto& limit = check.limit;
        if (!limit || add_saturating(used, need) <= *limit) continue;
        const std::uint64_t left = sub_floor(*limit, used);
        return OverBudget{name,
                       std::string("budget ") + name + ": this request may use up to " + quantity(name, need) +
                           ", " + quantity(name, left) + " of " + quantity(name, *limit) + " remain",
                       left, need};
    }
    reserved_ = plus(reserved_, w);
    return Reservation(this, w);
}

void BudgetAccount::unreserve_locked(const Amount& a) {
    reserved_.requests = sub_floor(reserved_.requests, a.requests);
    reserved_.input_tokens = sub_floor(reserved_.input_tokens, a.input_tokens);
    reserved_.output_tokens = sub_floor(reserved_.output_tokens, a.output_tokens);
    reserved_.usd_micros = sub_floor(reserved_.usd_micros, a.usd_micros);
}

Settlement BudgetAccount::charge_locked(Reservation& r, const Usage* usage, const Cost* cost) {
    const Amount claim = r.amount_;
    r.account_ = nullptr;
    unreserve_locked(claim);
    Settlement s;
    s.charged.requests = 1;
    std::string exhaust;
    const UsageState state = usage ? usage->state : UsageState::unavailable;
    switch (state) {
    case UsageState::reported: {
        const TokenTotals t = counted_tokens(*usage);
        s.charged.input_tokens = t.input;
        s.charged.output_tokens = t.output;
        if (cost && cost->state == Cost::State::computed) {
            s.charged.usd_micros = cost->usd_micros;
        } else {
            s.charged.usd_micros = claim.usd_micros;
            if (limits_.usd_micros)
                exhaust = "cost unavailable: " + (cost ? cost->reason : std::string("no cost given"));
        }
        s.over_reservation = t.input > claim.input_tokens || t.output > claim.output_tokens ||
                             (limits_.usd_micros && s.charged.usd_micros > claim.usd_micros);
        break;
    }
    case UsageState::not_metered:
    case UsageState::provider_error: break;
    case UsageState::unavailable:
        s.charged = claim;
        s.charged.requests = 1;
        if (limits_.meters_usage())
            exhaust = "usage unavailable: " +
                      (usage ? usage->reason : std::string("the request ended before its response was metered"));
        break;
    }
    spent_ = plus(spent_, s.charged);
    if (!exhaust.empty() && exhausted_.empty()) {
        exhausted_ = exhaust;
        s.exhausted = exhaust;
    }
    return s;
}

Settlement BudgetAccount::settle(Reservation& r, const Usage& usage, const Cost& cost) {
    if (r.account_ != this) throw std::logic_error("BudgetAccount::settle: a reservation not open on this account");
    std::lock_guard lock(mu_);
    return charge_locked(r, &usage, &cost);
}

void BudgetAccount::release(Reservation& r) {
    if (r.account_ != this) throw std::logic_error("BudgetAccount::release: a reservation not open on this account");
    std::lock_guard lock(mu_);
    r.account_ = nullptr;
    unreserve_locked(r.amount_);
}

void BudgetAccount::reset() {
    std::lock_guard lock(mu_);
    spent_ = Amount{};
    exhausted_.clear();
}

void BudgetAccount::exhaust(std::string why) {
    std::lock_guard lock(mu_);
    if (exhausted_.empty()) exhausted_ = std::move(why);
}

AccountState BudgetAccount::state() const {
    std::lock_guard lock(mu_);
    AccountState st{spent_, reserved_, {}, exhausted_};
    const Amount used = plus(spent_, reserved_);
    auto left = [](const std::optional<std::uint64_t>& limit, std::uint64_t u) -> std::optional<std::uint64_t> {
        if (!limit) return std::nullopt;
        return sub_floor(*limit, u);
    };
    st.remaining.requests = left(limits_.requests, used.requests);
    st.remaining.input_tokens = left(limits_.input_tokens, used.input_tokens);
    st.remaining.output_tokens = left(limits_.output_tokens, used.output_tokens);
    st.remaining.total_tokens = left(limits_.total_tokens, used.total_tokens());
    st.remaining.usd_micros = left(limits_.usd_micros, used.usd_micros);
    // Only a response that used more than it reserved spends past a limit:
    // shown, so that `remaining` stopping at 0 does not hide by how much.
    auto over = [](const std::optional<std::uint64_t>& limit, std::uint64_t spent) -> std::optional<std::uint64_t> {
        if (!limit || spent <= *limit) return std::nullopt;
        return spent - *limit;
    };
    st.overspent.requests = over(limits_.requests, spent_.requests);
    st.overspent.input_tokens = over(limits_.input_tokens, spent_.input_tokens);
    st.overspent.output_tokens = over(limits_.output_tokens, spent_.output_tokens);
    st.overspent.total_tokens = over(limits_.total_tokens, spent_.total_tokens());
    st.overspent.usd_micros = over(limits_.usd_micros, spent_.usd_micros);
    return st;
}

}  // namespace corral::gateway::metering
