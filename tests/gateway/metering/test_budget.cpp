#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gateway/metering/budget.hpp"

using namespace corral::gateway::metering;

namespace {

Claim claim(std::uint64_t in, std::uint64_t out, std::uint64_t usd = 0) {
    Claim c;
    c.amount = {1, in, out, usd};
    return c;
}

Usage reported(std::uint64_t in, std::uint64_t out) {
    Usage u;
    u.api = ModelApi::anthropic_messages;
    u.state = UsageState::reported;
    u.model = "m";
    u.input_tokens = in;
    u.output_tokens = out;
    return u;
}

Cost computed(std::uint64_t micros) {
    Cost c;
    c.state = Cost::State::computed;
    c.usd_micros = micros;
    return c;
}

Reservation must_reserve(BudgetAccount& a, const Claim& c) {
    auto r = a.reserve(c);
    REQUIRE(std::holds_alternative<Reservation>(r));
    return std::move(std::get<Reservation>(r));
}

OverBudget must_refuse(BudgetAccount& a, const Claim& c) {
    auto r = a.reserve(c);
    REQUIRE(std::holds_alternative<OverBudget>(r));
    return std::get<OverBudget>(r);
}

}  // namespace

TEST_CASE("budget: a reservation counts against the limit until settled with the real usage") {
    Budget b;
    b.output_tokens = 1000;
    BudgetAccount a(b);
    Reservation r1 = must_reserve(a, claim(10, 600));
    CHECK(a.state().remaining.output_tokens == 400u);
    CHECK(a.remaining().output_tokens == 400u);
    // 600 reserved + 600 more would pass 1000: refused, saying what is left.
    OverBudget no = must_refuse(a, claim(10, 600));
    CHECK(no.limit == "output_tokens");
    CHECK(no.remaining == 400u);
    CHECK(no.needed == 600u);
    CHECK(no.reason == "budget output_tokens: this request may use up to 600, 400 of 1000 remain");
    // The response used 100 of its 600: 500 come back.
    Settlement s = a.settle(r1, reported(10, 100), computed(0));
    CHECK_FALSE(r1.open());
    CHECK(s.charged.output_tokens == 100u);
    CHECK_FALSE(s.over_reservation);
    CHECK(s.exhausted == "");
    AccountState st = a.state();
    CHECK(st.spent.output_tokens == 100u);
    CHECK(st.reserved.output_tokens == 0u);
    CHECK(st.remaining.output_tokens == 900u);
    CHECK_FALSE(st.remaining.input_tokens);  // no limit, nothing to say
    Reservation r2 = must_reserve(a, claim(10, 600));
    CHECK_THROWS(a.settle(r1, reported(1, 1), computed(0)));  // settled once only
    a.release(r2);
    CHECK(a.state().reserved.requests == 0u);
    CHECK(a.state().spent.requests == 1u);
}

TEST_CASE("budget: each limit refuses by its own name, in micro-dollars shown as dollars") {
    Budget b;
    b.requests = 2;
    b.input_tokens = 100;
    b.total_tokens = 150;
    b.usd_micros = 1'500'000;
    BudgetAccount a(b);
    CHECK(must_refuse(a, claim(101, 0, 0)).limit == "input_tokens");
    CHECK(must_refuse(a, claim(100, 51, 0)).limit == "total_tokens");
    OverBudget usd = must_refuse(a, claim(1, 1, 1'500'001));
    CHECK(usd.limit == "usd");
    CHECK(usd.reason == "budget usd: this request may use up to $1.500001, $1.500000 of $1.500000 remain");
    Reservation r1 = must_reserve(a, claim(1, 1, 1));
    Reservation r2 = must_reserve(a, claim(1, 1, 1));
    OverBudget req = must_refuse(a, claim(1, 1, 1));
    CHECK(req.limit == "requests");
    CHECK(req.remaining == 0u);
    a.settle(r1, reported(1, 1), computed(1));
    a.settle(r2, reported(1, 1), computed(1));
    CHECK(a.state().spent.requests == 2u);
    CHECK(must_refuse(a, claim(0, 0)).limit == "requests");
}

TEST_CASE("budget: unavailable usage under a token or USD limit exhausts the account (fail closed)") {
    Budget b;
    b.total_tokens = 1'000'000;
    BudgetAccount a(b);
    Reservation r = must_reserve(a, claim(100, 200));
    Usage gone;
    gone.api = ModelApi::openai_chat;
    gone.state = UsageState::unavailable;
    gone.reason = "no usage in the response";
    Settlement s = a.settle(r, gone, Cost{});
    CHECK(s.charged.total_tokens() == 300u);  // the whole worst case is charged
    CHECK(s.exhausted == "usage unavailable: no usage in the response");
    OverBudget next = must_refuse(a, claim(1, 1));
    CHECK(next.limit == "usage_unavailable");
    CHECK(next.reason == "budget exhausted: usage unavailable: no usage in the response");
    CHECK(a.state().exhausted == "usage unavailable: no usage in the response");
    // With only a request limit, usage is not needed: nothing is exhausted.
    Budget only_requests;
    only_requests.requests = 10;
    BudgetAccount c(only_requests);
    Reservation rc = must_reserve(c, claim(1, 1));
    CHECK(c.settle(rc, gone, Cost{}).exhausted == "");
    must_reserve(c, claim(1, 1));  // (released as unavailable when dropped: see below)
}

TEST_CASE("budget: a cost unavailable under a USD limit exhausts; no price refuses at reserve") {
    Budget b;
    b.usd_micros = 10'000'000;
    BudgetAccount a(b);
    Claim unpriced = claim(1, 1);
    unpriced.unpriced = "no price for model 'x'";
    OverBudget np = must_refuse(a, unpriced);
    CHECK(np.limit == "no_price");
    CHECK(np.reason == "a USD budget is in force and no price for model 'x'");
    Reservation r = must_reserve(a, claim(1, 1, 50));
    Cost no_cost;
    no_cost.reason = "no price for model 'y'";
    Settlement s = a.settle(r, reported(1, 1), no_cost);
    CHECK(s.charged.usd_micros == 50u);
    CHECK(s.exhausted == "cost unavailable: no price for model 'y'");
    CHECK(must_refuse(a, claim(1, 1, 1)).limit == "usage_unavailable");
}

TEST_CASE("budget: a dropped reservation is settled as unavailable; a provider error costs a request only") {
    Budget b;
    b.output_tokens = 1000;
    BudgetAccount a(b);
    {
        Reservation r = must_reserve(a, claim(5, 10));
        Usage err;
        err.api = ModelApi::anthropic_messages;
        err.state = UsageState::provider_error;
        Settlement s = a.settle(r, err, computed(0));
        CHECK(s.charged.requests == 1u);
        CHECK(s.charged.total_tokens() == 0u);
        CHECK(s.exhausted == "");
    }
    {
        Reservation dropped = must_reserve(a, claim(5, 10));
        Reservation moved = std::move(dropped);
        CHECK_FALSE(dropped.open());
        CHECK(moved.open());
    }
    AccountState st = a.state();
    CHECK(st.spent.requests == 2u);
    CHECK(st.spent.output_tokens == 10u);
    CHECK(st.reserved.requests == 0u);
    CHECK(st.exhausted == "usage unavailable: the request ended before its response was metered");
}

TEST_CASE("budget: usage over the reservation is charged in full and said so") {
    Budget b;
    b.input_tokens = 1000;
    BudgetAccount a(b);
    Reservation r = must_reserve(a, claim(100, 10));
    Settlement s = a.settle(r, reported(1200, 5), computed(0));
    CHECK(s.over_reservation);
    CHECK(a.state().spent.input_tokens == 1200u);
    CHECK(a.state().remaining.input_tokens == 0u);
    CHECK(a.state().overspent.input_tokens == 200u);  // remaining stops at 0; the overshoot is still told
    CHECK_FALSE(a.state().overspent.output_tokens.has_value());  // no output limit: nothing to overspend
    CHECK(must_refuse(a, claim(1, 1)).limit == "input_tokens");
}

TEST_CASE("budget: a persisted account resumes where it was") {
    Budget b;
    b.requests = 5;
    BudgetAccount a(b, Amount{4, 0, 0, 0});
    must_reserve(a, claim(0, 0));
    BudgetAccount e(b, Amount{}, "usage unavailable: x");
    CHECK(must_refuse(e, claim(0, 0)).limit == "usage_unavailable");
}

TEST_CASE("worst case: body bytes plus overhead as input, the request's cap or the policy's as output") {
    PriceTable prices;
    prices.add("claude-sonnet-4-5-20250929", Price{3'000'000, 15'000'000, 3'750'000, 300'000, "s", "d"});
    WorstCasePolicy policy;
    RequestFacts f;
    f.api = ModelApi::anthropic_messages;
    f.parsed = true;
    f.body_bytes = 10'000;
    f.model = "claude-sonnet-4-5-20250929";
    f.max_output_tokens = 32'000;
    Claim c = worst_case(f, policy, prices);
    CHECK(c.amount.requests == 1u);
    CHECK(c.amount.input_tokens == 10'000u + policy.input_overhead_tokens);
    CHECK(c.amount.output_tokens == 32'000u);
    // (14096 * 3.75 + 32000 * 15) micro-dollars per token-million: 52860 + 480000.
    CHECK(c.amount.usd_micros == 532'860u);
    CHECK(c.unpriced == "");
    f.max_output_tokens.reset();
    CHECK(worst_case(f, policy, prices).amount.output_tokens == policy.default_max_output_tokens);
    f.unbounded_input = "document block";
    CHECK(worst_case(f, policy, prices).amount.input_tokens == policy.unbounded_input_tokens);
    f.unbounded_input.clear();
    f.parsed = false;
    CHECK(worst_case(f, policy, prices).amount.input_tokens == policy.unbounded_input_tokens);
    f.parsed = true;
    f.model = "claude-sonnet-4-5";
    CHECK(worst_case(f, policy, prices).unpriced == "no price for model 'claude-sonnet-4-5'");
    f.model.reset();
    CHECK(worst_case(f, policy, prices).unpriced == "the request names no model");
    policy.input_bytes_per_token = 4;
    f.body_bytes = 10'001;
    CHECK(worst_case(f, policy, prices).amount.input_tokens == 2501u + policy.input_overhead_tokens);
    // Chat Completions n: each completion may use the whole cap.
    f.api = ModelApi::openai_chat;
    f.max_output_tokens = 1000;
    f.completions = 4;
    CHECK(worst_case(f, policy, prices).amount.output_tokens == 4000u);
    f.max_output_tokens = UINT64_MAX / 2;
    CHECK(worst_case(f, policy, prices).amount.output_tokens == UINT64_MAX);  // saturates, never wraps
    f.completions = 1;
    f.api = ModelApi::anthropic_count_tokens;
    Claim count = worst_case(f, policy, prices);
    CHECK(count.amount.total_tokens() == 0u);
    CHECK(count.unpriced == "");
}

TEST_CASE("budget: 8 threads reserving and settling never spend past the limits") {
    Budget b;
    b.total_tokens = 200'000;
    b.usd_micros = 3'000'000;
    b.requests = 5000;
    BudgetAccount a(b);
    std::atomic<std::uint64_t> settled_tokens{0}, settled_usd{0}, settled_requests{0}, refusals{0};
    std::atomic<bool> over{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&, t] {
            std::mt19937 rng(static_cast<unsigned>(t) + 1);
            for (int i = 0; i < 2000; ++i) {
                const std::uint64_t in = std::uniform_int_distribution<std::uint64_t>(10, 400)(rng);
                const std::uint64_t out = std::uniform_int_distribution<std::uint64_t>(10, 600)(rng);
                const std::uint64_t usd = (in * 3 + out * 15);  // $3 / $15 per million, in micro-dollars
                auto r = a.reserve(claim(in, out, usd));
                if (std::holds_alternative<OverBudget>(r)) {
                    ++refusals;
                    continue;
                }
                auto& res = std::get<Reservation>(r);
                // The response streams for a while: the other threads reserve meanwhile.
                std::this_thread::sleep_for(std::chrono::microseconds(20));
                // A response uses at most its worst case: every other one all of it.
                const bool all = i % 2 == 0;
                const std::uint64_t used_in = all ? in : std::uniform_int_distribution<std::uint64_t>(0, in)(rng);
                const std::uint64_t used_out = all ? out : std::uniform_int_distribution<std::uint64_t>(0, out)(rng);
                const std::uint64_t used_usd = used_in * 3 + used_out * 15;
                if (i % 7 == 1) {
                    a.release(res);
                } else {
                    a.settle(res, reported(used_in, used_out), computed(used_usd));
                    settled_tokens += used_in + used_out;
                    settled_usd += used_usd;
                    ++settled_requests;
                }
                AccountState st = a.state();
                if (st.spent.total_tokens() > *b.total_tokens || st.spent.usd_micros > *b.usd_micros ||
                    st.spent.requests > *b.requests ||
                    st.spent.total_tokens() + st.reserved.total_tokens() > *b.total_tokens ||
                    st.spent.usd_micros + st.reserved.usd_micros > *b.usd_micros)
                    over = true;
            }
        });
    }
    for (auto& th : threads) th.join();
    AccountState st = a.state();
    CHECK_FALSE(over.load());
    CHECK(st.spent.total_tokens() == settled_tokens.load());  // every settlement counted, exactly once
    CHECK(st.spent.usd_micros == settled_usd.load());
    CHECK(st.spent.requests == settled_requests.load());
    CHECK(st.reserved.requests == 0u);
    CHECK(st.reserved.total_tokens() == 0u);
    CHECK(st.spent.total_tokens() <= *b.total_tokens);
    CHECK(st.spent.usd_micros <= *b.usd_micros);
    CHECK(refusals.load() > 0u);  // the budget was really reached
    // Reached, not merely approached: what is left is less than the largest worst case.
    CHECK((*st.remaining.total_tokens < 1000u || *st.remaining.usd_micros < 10'200u || *st.remaining.requests == 0u));
}
