// run/refusal_report.hpp — the operator hears of refusals while the run is
// alive: the first refusal of each host:port becomes one line on corral's
// stderr, with the reason and what would allow it (gateway/refusal.hpp
// what_would_allow). The gateway keeps the refused host:ports per identity
// (gateway::Ledger::refusal_notices, and the daemon's counts answer); the
// run's egress polls them and hands them here.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gateway/ledger.hpp"

namespace corral::run {

// "refused CONNECT example.com:443 (not_granted, 403): no grant covers ..."
std::string refusal_line(const gateway::RefusalNotice& notice);

class RefusalReport {
public:
    // The lines of the host:ports not reported before, in the order given.
    std::vector<std::string> new_lines(const std::vector<gateway::RefusalNotice>& notices);

private:
    std::set<std::pair<std::string, std::uint16_t>> reported_;
};

}  // namespace corral::run
