// run/refusal_report.hpp — the operator hears of refusals while the run is
// alive: the first refusal of each host:port becomes one line on corral's
// stderr, with the reason and what would allow it (gateway/refusal.hpp
// what_would_allow). The gateway keeps the refused host:ports per identity
// (gateway::Ledger::refusal_notices, and the daemon's counts answer); the
// run's egress polls them and hands them here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gateway/ledger.hpp"
#include "gateway/refusal.hpp"

namespace corral::run {

// "refused CONNECT example.com:443 (not_granted, 403): no grant covers ..."
// The advice names where the run's grants come from (`from`): worker.toml and
// --allow, or the daemon's organisation under --gateway.
std::string refusal_line(const gateway::RefusalNotice& notice, gateway::GrantsFrom from);

class RefusalReport {
public:
    // The lines of the host:ports not reported before, in the order given.
    std::vector<std::string> new_lines(const std::vector<gateway::RefusalNotice>& notices,
                                       gateway::GrantsFrom from = gateway::GrantsFrom::run);

private:
    std::set<std::pair<std::string, std::uint16_t>> reported_;
};

// A session's refusals told to the execs that were running when they
// happened (corral exec's caller sees them as corral run's does): the
// egress's watcher delivers the notices it polls; a host:port whose count
// grew since the last delivery was refused again just now, and is told
// once to each listener of the refused connection's role (every listener
// when the notice names none: a daemon's counts answer). Thread-safe.
class RefusalListeners {
public:
    using Tell = std::function<void(const std::string& line)>;
    // Until remove(id): `tell` gets each line (from the deliverer's thread).
    int add(std::string role, Tell tell);
    void remove(int id);
    void deliver(const std::vector<gateway::RefusalNotice>& notices, gateway::GrantsFrom from);

private:
    struct Listener {
        std::string role;
        Tell tell;
        RefusalReport told;
    };
    std::mutex mu_;
    int next_id_ = 0;
    std::map<int, Listener> listeners_;
    std::map<std::pair<std::string, std::uint16_t>, std::uint64_t> counts_;  // at the last delivery
};

}  // namespace corral::run
