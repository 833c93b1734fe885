#include "gateway/metering/book.hpp"

#include "base/log.hpp"

namespace corral::gateway::metering {

std::string worker_of(std::string_view identity) {
    return std::string(identity.substr(0, identity.find('/')));
}

PriceTable price_table_of(const config::PriceList& prices) {
    PriceTable t;
    for (const auto& [model, p] : prices) t.add(model, p);
    return t;
}

MeteringBook::MeteringBook(const config::GatewayConfig& cfg)
    : defaults_(cfg.metering), per_worker_(cfg.worker_metering) {
    bool across_runs = defaults_.worker.any();
    for (const auto& [name, m] : per_worker_) across_runs |= m.worker.any();
    if (across_runs) store_ = std::make_unique<BudgetStore>(cfg.gateway.state_dir + "/budgets");
}

MeteringBook::Worker& MeteringBook::worker_locked(const std::string& worker) {
    auto it = workers_.find(worker);
    if (it != workers_.end()) return it->second;
    auto cfg_it = per_worker_.find(worker);
    Worker w;
    w.cfg = cfg_it != per_worker_.end() ? cfg_it->second : defaults_;
    w.prices = price_table_of(w.cfg.prices);
    if (w.cfg.worker.any()) {
        // Go on from what the worker's earlier runs spent; a state that
        // cannot be read refuses its requests (never a fresh budget).
        StoredBudget stored;
        try {
            if (store_) stored = store_->load(worker);
        } catch (const std::exception& e) {
            stored.exhausted = e.what();
        }
        w.across_runs = std::make_unique<BudgetAccount>(w.cfg.worker, stored.spent, stored.exhausted);
    }
    return workers_.emplace(worker, std::move(w)).first->second;
}

MeteringBook::RunEntry& MeteringBook::run_entry_locked(const std::string& identity, Worker& w) {
    // An identity may be known before its first model request (a refusal
    // counted): its account is made on first use either way.
    RunEntry& id = runs_[identity];
    if (!id.run) id.run = std::make_unique<BudgetAccount>(w.cfg.run);
    return id;
}

std::variant<Admission, OverBudget> MeteringBook::admit(const std::string& identity, const RequestFacts& facts) {
    Admission a;
    a.worker = worker_of(identity);
    {
        std::lock_guard lock(mu_);
        Worker& w = worker_locked(a.worker);
        a.run_account = run_entry_locked(identity, w).run.get();
        a.across_account = w.across_runs.get();
        a.claim = worst_case(facts, policy_, w.prices);
    }
    BudgetAccount* run = a.run_account;
    BudgetAccount* across = a.across_account;
    auto r = run->reserve(a.claim);
    if (auto* refusal = std::get_if<OverBudget>(&r)) return *refusal;
    a.run.emplace(std::move(std::get<Reservation>(r)));
    if (across) {
        auto wr = across->reserve(a.claim);
        if (auto* refusal = std::get_if<OverBudget>(&wr)) {
            run->release(*a.run);
            OverBudget out = *refusal;
            out.reason = "worker " + a.worker + " across its runs: " + out.reason;
            return out;
        }
        a.across_runs.emplace(std::move(std::get<Reservation>(wr)));
    }
    return a;
}

Charge MeteringBook::settle(const std::string& identity, Admission& a, const Usage& usage,
                            std::string_view request_model) {
    Charge c;
    c.usage = usage;
    BudgetAccount* run = a.run_account;
    BudgetAccount* across = a.across_account;
    {
        std::lock_guard lock(mu_);
        c.cost = cost_of(usage, worker_locked(a.worker).prices, request_model);
    }
    if (a.run && a.run->open()) c.settlement = run->settle(*a.run, usage, c.cost);
    c.over_reservation = c.settlement.over_reservation;
    if (a.across_runs && a.across_runs->open()) {
        c.over_reservation |= across->settle(*a.across_runs, usage, c.cost).over_reservation;
        persist(a.worker, *across);
    }
    if (run) c.run_state = run->state();
    if (across) c.worker_state = across->state();
    std::lock_guard lock(mu_);
    MeterTotals& t = runs_[identity].totals;
    ++t.requests;
    auto add = [](std::uint64_t& to, const std::optional<std::uint64_t>& n) {
        if (n) to = add_saturating(to, *n);
    };
    add(t.input_tokens, usage.input_tokens);
    add(t.output_tokens, usage.output_tokens);
    add(t.cache_write_tokens, usage.cache_write_tokens);
    add(t.cache_read_tokens, usage.cache_read_tokens);
    add(t.cached_input_tokens, usage.cached_input_tokens);
    add(t.reasoning_tokens, usage.reasoning_tokens);
    if (usage.state == UsageState::unavailable) ++t.usage_unavailable;
    if (usage.state == UsageState::provider_error) ++t.provider_errors;
    if (c.over_reservation) ++t.over_reservations;
    if (c.cost.state == Cost::State::computed) t.usd_micros = add_saturating(t.usd_micros, c.cost.usd_micros);
    else ++t.cost_unavailable;
    return c;
}

void MeteringBook::release(Admission& a) {
    if (a.run && a.run->open()) a.run_account->release(*a.run);
    if (a.across_runs && a.across_runs->open()) a.across_account->release(*a.across_runs);
}

void MeteringBook::persist(const std::string& worker, BudgetAccount& account) {
    if (!store_) return;
    try {
        store_->save(worker, account.state());
    } catch (const std::exception& e) {
        // What was spent could be lost at a restart: stop spending (fail closed).
        log::error(std::string("gateway: worker ") + worker + "'s budget across runs could not be kept: " + e.what() +
                   "; its requests are refused until it is reset");
        account.exhaust(std::string("its budget state could not be written: ") + e.what());
    }
}

std::optional<MeteringBook::WorkerBudget> MeteringBook::worker_budget(const std::string& worker) {
    BudgetAccount* across = nullptr;
    {
        std::lock_guard lock(mu_);
        across = worker_locked(worker).across_runs.get();
    }
    if (!across) return std::nullopt;
    return WorkerBudget{across->limits(), across->state(), store_ ? store_->path_of(worker) : ""};
}

std::optional<MeteringBook::WorkerBudget> MeteringBook::reset_worker_budget(const std::string& worker) {
    BudgetAccount* across = nullptr;
    {
        std::lock_guard lock(mu_);
        across = worker_locked(worker).across_runs.get();
    }
    if (!across) return std::nullopt;
    across->reset();
    persist(worker, *across);
    return WorkerBudget{across->limits(), across->state(), store_ ? store_->path_of(worker) : ""};
}

void MeteringBook::count_budget_refusal(const std::string& identity) {
    std::lock_guard lock(mu_);
    ++runs_[identity].totals.budget_refusals;
}

void MeteringBook::count_policy_refusal(const std::string& identity) {
    std::lock_guard lock(mu_);
    ++runs_[identity].totals.policy_refusals;
}

MeterTotals MeteringBook::totals(const std::string& identity) const {
    std::lock_guard lock(mu_);
    auto it = runs_.find(identity);
    return it == runs_.end() ? MeterTotals{} : it->second.totals;
}

std::optional<AccountState> MeteringBook::run_state(const std::string& identity) const {
    BudgetAccount* run = nullptr;
    {
        std::lock_guard lock(mu_);
        auto it = runs_.find(identity);
        if (it == runs_.end() || !it->second.run) return std::nullopt;
        run = it->second.run.get();
    }
    return run->state();
}

bool MeteringBook::budgeted(const std::string& identity) const {
    std::string worker = worker_of(identity);
    auto it = per_worker_.find(worker);
    const config::MeteringConfig& m = it != per_worker_.end() ? it->second : defaults_;
    return m.run.any() || m.worker.any();
}

}  // namespace corral::gateway::metering
