// gateway/metering/book.hpp — the gateway's book of model traffic: for each
// identity ("worker/run") its run's budget account and the totals run.json
// reports, for each worker its account across runs, and the prices each
// worker's costs are computed at.
//
// Thread-safe: every connection of every identity on every event loop asks
// the one book. Accounts are made on an identity's first model request.
//
//   admit(identity, facts)  ──► Admission (reservations on the run's and the
//                               worker's accounts) or an OverBudget (the limit that refused)
//   settle(admission, usage) ─► what was charged, the cost, what remains
//   release(admission)        nothing reached the provider
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>

#include "config/gateway_config.hpp"
#include "gateway/metering/budget.hpp"
#include "gateway/metering/budget_store.hpp"
#include "gateway/metering/prices.hpp"
#include "gateway/metering/request_facts.hpp"
#include "gateway/metering/totals.hpp"
#include "gateway/metering/usage.hpp"

namespace corral::gateway::metering {

// A forwarded request's claims, until its response is settled.
struct Admission {
    Claim claim;
    std::string worker;
    std::optional<Reservation> run;
    std::optional<Reservation> across_runs;
    // The accounts they are on (the book's, which never goes away before it).
    BudgetAccount* run_account = nullptr;
    BudgetAccount* across_account = nullptr;
};

struct Charge {
    Usage usage;
    Cost cost;
    Settlement settlement;          // on the run's account
    bool over_reservation = false;  // the response used more than it reserved, on either account
    AccountState run_state;         // after it
    std::optional<AccountState> worker_state;
};

// The part of an identity a worker's budget and prices belong to.
std::string worker_of(std::string_view identity);

class MeteringBook {
public:
    // With a budget across runs for any worker, those are kept in
    // cfg.gateway.state_dir/budgets (budget_store.hpp) and read back from
    // there when a worker's first request comes.
    explicit MeteringBook(const config::GatewayConfig& cfg);
    MeteringBook(const MeteringBook&) = delete;
    MeteringBook& operator=(const MeteringBook&) = delete;

    // Reserves the request's worst case on the run's account and, when the
    // worker has a budget across runs, on that one too (both or neither).
    std::variant<Admission, OverBudget> admit(const std::string& identity, const RequestFacts& facts);
    // The response ended with `usage` (the request's model prices it when the
    // response named none).
    Charge settle(const std::string& identity, Admission& a, const Usage& usage, std::string_view request_model);
    // The request never reached the provider: every claim goes back.
    void release(Admission& a);

    void count_budget_refusal(const std::string& identity);
    void count_policy_refusal(const std::string& identity);

    MeterTotals totals(const std::string& identity) const;

    // A worker's budget across its runs (nullopt: it has none): its limits
    // and state, and the operator's reset of it (kept on disk at once).
    struct WorkerBudget {
        Budget limits;
        AccountState state;
        std::string file;  // where it is kept
    };
    std::optional<WorkerBudget> worker_budget(const std::string& worker);
    std::optional<WorkerBudget> reset_worker_budget(const std::string& worker);
    // The run account's state, nullopt before its first model request.
    std::optional<AccountState> run_state(const std::string& identity) const;
    // Whether the identity's worker has any budget in force (run or across runs).
    bool budgeted(const std::string& identity) const;

private:
    struct Worker {
        config::MeteringConfig cfg;
        PriceTable prices;
        std::unique_ptr<BudgetAccount> across_runs;  // null: no budget across runs
    };
    struct RunEntry {  // one run (an identity "worker/run"): its account and totals
        std::unique_ptr<BudgetAccount> run;
        MeterTotals totals;
    };
    Worker& worker_locked(const std::string& worker);
    void persist(const std::string& worker, BudgetAccount& account);
    RunEntry& run_entry_locked(const std::string& identity, Worker& w);

    WorstCasePolicy policy_;
    config::MeteringConfig defaults_;
    std::map<std::string, config::MeteringConfig> per_worker_;
    std::unique_ptr<BudgetStore> store_;  // null: no worker has a budget across runs
    mutable std::mutex mu_;
    std::map<std::string, Worker, std::less<>> workers_;
    std::map<std::string, RunEntry, std::less<>> runs_;
};

// The config's prices as a table (the same Price values, indexed; each name checked once).
PriceTable price_table_of(const config::PriceList& prices);

}  // namespace corral::gateway::metering
