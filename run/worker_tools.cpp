#include "run/worker_tools.hpp"

#include <sys/stat.h>

#include <mutex>

#include "base/log.hpp"
#include "gateway/metering/budget_store.hpp"
#include "run/mcp_pin_store.hpp"
#include "run/state_dir.hpp"

namespace corral::run {

namespace {

// The store's trusted digests into the book, below the configuration's pins.
void trust_stored(gateway::McpTools& tools, const PinRecords& records) {
    const auto& config_pins = tools.config().pins;
    tools.with_pins([&](mcp::PinBook& book) {
        for (const auto& [key, p] : records)
            if (!config_pins.count(key)) {
                auto [server, tool] = split_pin_key(key);
                book.pin(server, tool, p.trusted);
            }
    });
}

// Which version of the store's file the daemon last read: a write (the
// daemon's own merge, a run's, `corral mcp trust`) renames a new file in.
struct StoreVersion {
    ino_t ino = 0;
    timespec mtime{};
    off_t size = -1;
    bool operator==(const StoreVersion& o) const {
        return ino == o.ino && mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec && size == o.size;
    }
};
StoreVersion version_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return {};
    return {st.st_ino, st.st_mtim, st.st_size};
}

}  // namespace

std::string load_stored_pins(gateway::McpTools& tools, const std::string& option, const std::string& state_dir,
                             const std::string& worker) {
    const std::string state = make_private_dir(option, state_dir, DirRole::state);
    std::string pin_dir = open_pin_store_dir(option, state, worker, /*create=*/true);
    trust_stored(tools, PinStore(pin_dir).read());
    return pin_dir;
}

void save_sights(gateway::McpTools& tools, const std::string& pin_dir, const std::string& run_id) {
    const auto seen = tools.with_pins([](mcp::PinBook& book) { return book.entries(); });
    PinStore(pin_dir).update([&](PinRecords& records) {
        return merge_sights(records, seen, tools.config().pins, run_id, pin_store_now());
    });
}

std::map<std::string, std::shared_ptr<gateway::McpTools>> daemon_worker_tools(const config::GatewayConfig& cfg) {
    std::map<std::string, std::shared_ptr<gateway::McpTools>> out;
    std::shared_ptr<gateway::metering::BudgetStore> budgets;
    for (const auto& [worker, config] : cfg.worker_tools) {
        if (config.empty()) continue;
        std::shared_ptr<gateway::WorkerCalls> across;
        if (config.budgets.per_worker) {
            if (!budgets) budgets = std::make_shared<gateway::metering::BudgetStore>(cfg.gateway.state_dir + "/budgets");
            across = std::make_shared<gateway::WorkerCalls>(worker, *config.budgets.per_worker, budgets);
            if (!across->broken().empty())
                log::error("gateway: worker " + worker + ": " + across->broken() + "; its tool calls are refused");
        }
        auto tools = std::make_shared<gateway::McpTools>(config, std::move(across));
        std::string pin_dir;
        try {
            pin_dir = load_stored_pins(*tools, "[gateway] state_dir", cfg.gateway.state_dir, worker);
        } catch (const UsageError& e) {
            throw UsageError("worker " + worker + "'s MCP pins: " + e.what());
        }
        // Kept as they happen: the daemon has no end of a run to keep them at,
        // and a restart must not forget a quarantine. The hook runs on the
        // connection's thread; the store's lock orders concurrent writers.
        gateway::McpTools* raw = tools.get();
        const std::string name = worker;   // clang 14 cannot capture a structured binding
        tools->on_sight([raw, pin_dir, name](const std::string& run_id) {
            try {
                save_sights(*raw, pin_dir, run_id);
            } catch (const std::exception& e) {
                log::error("gateway: worker " + name + "'s MCP pins store could not be updated (" + e.what() +
                           "): the first sights and quarantines of run " + run_id + " are not kept for a restart");
            }
        });
        // A trust accepted while the daemon runs: read again when the file changed.
        struct Watch {
            std::mutex mutex;
            StoreVersion last;
        };
        auto watch = std::make_shared<Watch>();
        watch->last = version_of(PinStore(pin_dir).path());
        tools->on_refresh([raw, pin_dir, name, watch] {
            std::lock_guard lock(watch->mutex);
            const PinStore store(pin_dir);
            const StoreVersion now = version_of(store.path());
            if (now == watch->last) return;
            try {
                trust_stored(*raw, store.read());
                watch->last = now;
            } catch (const std::exception& e) {
                // What it trusted before holds (nothing is trusted anew).
                log::error("gateway: worker " + name + "'s MCP pins store could not be read again (" + e.what() +
                           "); what it held at the last read still holds");
            }
        });
        out.emplace(worker, std::move(tools));
    }
    return out;
}

}  // namespace corral::run
