// The gateway's book of model traffic: accounts per run and per worker,
// totals per identity, prices per worker.
#include <doctest/doctest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gateway/metering/book.hpp"
#include "gateway/metering/totals.hpp"

using namespace corral;
using namespace corral::gateway::metering;

namespace {

RequestFacts facts(std::string model, std::uint64_t max_out) {
    RequestFacts f;
    f.parsed = true;
    f.api = ModelApi::anthropic_messages;
    f.body_bytes = 100;
    f.model = std::move(model);
    f.max_output_tokens = max_out;
    return f;
}

Usage reported(std::uint64_t in, std::uint64_t out) {
    Usage u;
    u.api = ModelApi::anthropic_messages;
    u.state = UsageState::reported;
    u.model.assign(1, 'm');  // not = "m": GCC 12 warns (-Wrestrict) falsely on that assignment here
    u.input_tokens = in;
    u.output_tokens = out;
    u.cache_write_tokens = 0;
    u.cache_read_tokens = 0;
    return u;
}

// A state dir of the test's own: a worker's budget across runs is kept there.
struct StateDir {
    std::string path;
    StateDir() {
        char tmpl[] = "/tmp/corral-book-XXXXXX";
        path = ::mkdtemp(tmpl) ? tmpl : "";
        REQUIRE_FALSE(path.empty());
    }
    ~StateDir() { std::filesystem::remove_all(path); }
};

config::GatewayConfig with_budgets(const StateDir& state) {
    config::GatewayConfig cfg;
    cfg.gateway.state_dir = state.path;
    cfg.metering.run.requests = 5;  // identities of no listed worker
    config::MeteringConfig w;
    w.run.output_tokens = 250;
    w.worker.requests = 3;
    w.prices["m"] = config::ModelPrice{3'000'000, 15'000'000, 0, 0, "list", "2026-11-30", ""};
    cfg.worker_metering["w"] = w;
    return cfg;
}

}  // namespace

TEST_CASE("book: a refusal counted before an identity's first request leaves it an account") {
    StateDir state;
    MeteringBook book(with_budgets(state));
    book.count_policy_refusal("w/run-1");
    auto a = book.admit("w/run-1", facts("m", 100));
    REQUIRE(std::holds_alternative<Admission>(a));
    CHECK(book.totals("w/run-1").policy_refusals == 1);
}

TEST_CASE("book: each worker's run budget, its budget across runs, and the defaults for others") {
    StateDir state;
    MeteringBook book(with_budgets(state));
    // Worker w: 250 output tokens per run, 3 requests across its runs.
    auto a1 = book.admit("w/run-1", facts("m", 100));
    auto a2 = book.admit("w/run-1", facts("m", 100));
    REQUIRE(std::holds_alternative<Admission>(a1));
    REQUIRE(std::holds_alternative<Admission>(a2));
    auto a3 = book.admit("w/run-1", facts("m", 100));  // 300 > 250 output tokens of this run
    REQUIRE(std::holds_alternative<OverBudget>(a3));
    CHECK(std::get<OverBudget>(a3).limit == "output_tokens");
    Charge c = book.settle("w/run-1", std::get<Admission>(a1), reported(10, 20), "m");
    CHECK(c.cost.state == Cost::State::computed);
    CHECK(c.cost.usd_micros == (10 * 3 + 20 * 15));
    REQUIRE(c.worker_state);
    // Another run of w has its own run budget, but shares the 3 requests.
    auto b1 = book.admit("w/run-2", facts("m", 100));
    REQUIRE(std::holds_alternative<Admission>(b1));
    auto b2 = book.admit("w/run-2", facts("m", 100));
    REQUIRE(std::holds_alternative<OverBudget>(b2));
    CHECK(std::get<OverBudget>(b2).reason.find("worker w across its runs") == 0);
    // The refused across-runs claim gave the run's reservation back.
    CHECK(book.run_state("w/run-2")->reserved.requests == 1);
    book.release(std::get<Admission>(a2));
    book.release(std::get<Admission>(b1));
    // An identity of no listed worker gets the defaults: 5 requests.
    for (int i = 0; i < 5; ++i) {
        auto d = book.admit("other/run-1", facts("m", 100));
        REQUIRE(std::holds_alternative<Admission>(d));
        book.settle("other/run-1", std::get<Admission>(d), reported(1, 1), "m");
    }
    CHECK(std::holds_alternative<OverBudget>(book.admit("other/run-1", facts("m", 100))));
    MeterTotals t = book.totals("other/run-1");
    CHECK(t.requests == 5);
    CHECK(t.input_tokens == 5);
    CHECK(t.cost_unavailable == 5);  // "other" has no prices
    CHECK(book.budgeted("w/run-9"));
    config::GatewayConfig none;
    CHECK_FALSE(MeteringBook(none).budgeted("w/run-1"));
}

TEST_CASE("book: a worker's budget across runs is read back by a new book; an unreadable one refuses") {
    StateDir state;
    {
        MeteringBook book(with_budgets(state));
        auto a = book.admit("w/run-1", facts("m", 10));
        REQUIRE(std::holds_alternative<Admission>(a));
        book.settle("w/run-1", std::get<Admission>(a), reported(5, 5), "m");
    }
    {
        MeteringBook book(with_budgets(state));  // a restarted daemon
        auto wb = book.worker_budget("w");
        REQUIRE(wb);
        CHECK(wb->state.spent.requests == 1);
        CHECK(wb->state.spent.output_tokens == 5);
        auto reset = book.reset_worker_budget("w");
        REQUIRE(reset);
        CHECK(reset->state.spent.requests == 0);
    }
    std::ofstream(state.path + "/budgets/w.json") << "{\"spent\": 3}";
    MeteringBook book(with_budgets(state));
    auto refused = book.admit("w/run-2", facts("m", 10));
    REQUIRE(std::holds_alternative<OverBudget>(refused));
    CHECK(std::get<OverBudget>(refused).reason.find("budgets/w.json") != std::string::npos);
}

TEST_CASE("totals: the JSON shape round-trips and a bad member is refused") {
    MeterTotals t;
    t.requests = 3, t.input_tokens = 40, t.output_tokens = 7, t.usd_micros = 1'234'567, t.budget_refusals = 1;
    auto j = totals_json(t);
    CHECK(j["usd"].get<double>() == doctest::Approx(1.234567));
    auto back = totals_from_json(j);
    REQUIRE(back);
    CHECK(*back == t);
    j["output_tokens"] = -1;
    auto bad = totals_from_json(j);
    REQUIRE_FALSE(bad);
    CHECK(bad.problem().find("output_tokens") != std::string::npos);
    CHECK(totals_summary(t) == "model traffic: 3 requests, 40 input + 7 output tokens, $1.234567, refused: 1 by budget");
}
