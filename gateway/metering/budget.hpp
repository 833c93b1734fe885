// gateway/metering/budget.hpp — budgets that cannot be overspent by
// concurrent requests: each request reserves its worst case before it is
// sent, and is settled with what it really used when its response ends.
//
// Pure (no I/O) and thread-safe: a BudgetAccount is shared by every
// connection of a run (or of a worker, in daemon mode) on any thread.
//
//   reserve(worst case) ──► Reservation ──► settle(usage, cost)   the response ended
//            │                         └──► release()             nothing was sent
//            └──► OverBudget {limit, what remains}
//
// What is in force at a reserve: for each limit set, spent + reserved +
// this request's worst case ≤ limit. So while every response uses no more
// than its worst case, the spent total never passes a limit, whatever the
// number of requests in flight. A response that reports more (its input
// estimate was low) is charged in full and said so (Settlement); the
// account then has less left, maybe none.
//
// Fail closed: a response whose usage is unavailable, or whose cost is
// unavailable under a USD limit, is charged its whole reservation and, when
// a token or USD limit is in force, exhausts the account: every later
// reserve is refused with that reason until the account is reset by its
// owner (a new run, or the operator's reset of a worker's budget).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <variant>

#include "config/budget_config.hpp"
#include "gateway/metering/prices.hpp"
#include "gateway/metering/request_facts.hpp"
#include "gateway/metering/usage.hpp"

namespace corral::gateway::metering {

// Limits; an unset one is not enforced. usd_micros: micro-dollars. The
// config's own type (config/budget_config.hpp), enforced as parsed.
using Budget = config::BudgetLimits;

// An amount spent, reserved or claimed. total_tokens = input + output.
struct Amount {
    std::uint64_t requests = 0;
    std::uint64_t input_tokens = 0;
    std::uint64_t output_tokens = 0;
    std::uint64_t usd_micros = 0;
    std::uint64_t total_tokens() const { return add_saturating(input_tokens, output_tokens); }
};

// How a request's worst case is estimated.
struct WorstCasePolicy {
    // Output, when the request names no cap (codex sends no max_output_tokens):
    // the largest output of the current models.
    std::uint64_t default_max_output_tokens = 128'000;
    // Input tokens per body byte, as body_bytes / input_bytes_per_token: a
    // token of text, tool definitions or JSON structure is at least one byte
    // of the body (a base64 image is far more bytes than tokens), so 1 is an
    // upper bound for what the body holds.
    std::uint64_t input_bytes_per_token = 1;
    // Tokens the provider adds to every request (its tool-use system prompt,
    // message markers).
    std::uint64_t input_overhead_tokens = 4096;
    // Input when the body does not bound it (RequestFacts::unbounded_input, or
    // a body that could not be read): the largest context window.
    std::uint64_t unbounded_input_tokens = 1'000'000;
};

// A request's worst case. `unpriced` is why it has no USD figure ("" when it
// has one): a USD limit then refuses the request.
struct Claim {
    Amount amount;
    std::string unpriced;
};

// The worst case of one request: one request, the estimated input, its
// output cap, and the cost of both at the request model's price (prices.hpp:
// input at the highest input-side rate). Facts that were not parsed count at
// the policy's unbounded input and default output.
Claim worst_case(const RequestFacts& facts, const WorstCasePolicy& policy, const PriceTable& prices);

struct OverBudget {
    // The limit that refused: "requests", "input_tokens", "output_tokens",
    // "total_tokens", "usd" — or "usage_unavailable" (the account is
    // exhausted) or "no_price" (a USD limit and a request with no price).
    std::string limit;
    std::string reason;       // a sentence for the box and the ledger
    std::uint64_t remaining = 0;  // what that limit has left (0 for the last two)
    std::uint64_t needed = 0;     // what the request's worst case needed of it
};

class BudgetAccount;

// One request's claim on an account. Move-only; settled or released once.
// Dropped while still open (an exchange torn down mid-response), it is
// settled as usage unavailable: whatever was sent may have been billed.
class Reservation {
public:
    Reservation(Reservation&& o) noexcept : account_(o.account_), amount_(o.amount_) { o.account_ = nullptr; }
    Reservation& operator=(Reservation&& o) noexcept;
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    ~Reservation();

    const Amount& amount() const { return amount_; }
    bool open() const { return account_ != nullptr; }

private:
    friend class BudgetAccount;
    Reservation(BudgetAccount* account, Amount amount) : account_(account), amount_(amount) {}
    void drop() noexcept;  // settles an open reservation as usage unavailable
    BudgetAccount* account_;
    Amount amount_;
};

// What a settlement charged.
struct Settlement {
    Amount charged;
    bool over_reservation = false;  // the response used more than its worst case
    std::string exhausted;          // the account became exhausted by this ("" = it did not)
};

struct AccountState {
    Amount spent;
    Amount reserved;
    Budget remaining;       // per limit set: limit - spent - reserved, at least 0
    std::string exhausted;  // why every reserve is refused ("" = it is not)
    Budget overspent;       // per limit spending went past (a response over its reservation): spent - limit
};

class BudgetAccount {
public:
    // `spent` and `exhausted`: a worker's account as it was persisted.
    explicit BudgetAccount(Budget limits, Amount spent = {}, std::string exhausted = {})
        : limits_(limits), spent_(spent), exhausted_(std::move(exhausted)) {}
    BudgetAccount(const BudgetAccount&) = delete;
    BudgetAccount& operator=(const BudgetAccount&) = delete;

    const Budget& limits() const { return limits_; }

    std::variant<Reservation, OverBudget> reserve(const Claim& worst_case);
    // The response ended: charge what it used (usage.hpp, prices.hpp).
    Settlement settle(Reservation& r, const Usage& usage, const Cost& cost);
    // Nothing reached the provider (the request failed before it was sent):
    // the whole claim goes back, the request included.
    void release(Reservation& r);

    // The operator's reset of a worker's budget: nothing spent, not
    // exhausted. Reservations in flight stay (their responses settle here).
    void reset();
    // Every later reserve is refused for `why` (until reset()).
    void exhaust(std::string why);

    AccountState state() const;
    // Per limit set: what is left for new reservations (limit - spent - reserved).
    Budget remaining() const { return state().remaining; }

private:
    friend class Reservation;
    Settlement charge_locked(Reservation& r, const Usage* usage, const Cost* cost);
    void unreserve_locked(const Amount& a);

    mutable std::mutex mu_;
    const Budget limits_;
    Amount spent_;
    Amount reserved_;
    std::string exhausted_;
};

}  // namespace corral::gateway::metering
