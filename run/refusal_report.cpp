#include "run/refusal_report.hpp"

#include "base/terminal_text.hpp"

namespace corral::run {

std::string refusal_line(const gateway::RefusalNotice& n, gateway::GrantsFrom from) {
    // The host and method are the box's bytes (a refused target is kept as
    // it came): shown escaped, here and in the advice that repeats the host.
    const std::string host = terminal_text(n.host), method = terminal_text(n.method);
    // The box's DNS stub (transparent capture) refused a name: no port to name.
    if (n.mode == "dns") {
        std::string line = "refused DNS " + (method.empty() ? std::string("query") : method) +
                           (host.empty() ? std::string() : " " + host) + " (" + terminal_text(n.reason) + ")";
        if (n.reason == gateway::reason::not_granted)
            line += ": no grant of this run names " + host + " on any port, so the box's DNS answered NXDOMAIN";
        else if (std::string advice = gateway::what_would_allow(n.reason, host, n.port, from); !advice.empty())
            line += ": " + advice;
        return line;
    }
    // A connection refused before its request was read names no host.
    const std::string what = host.empty() ? "a connection"
                                          : (method.empty() ? std::string("a request to") : method) + " " + host + ":" +
                                                std::to_string(n.port);
    std::string line = "refused " + what + " (" + terminal_text(n.reason) +
                       (n.status ? ", " + std::to_string(n.status) : "") + ")";
    if (std::string advice = gateway::what_would_allow(n.reason, host, n.port, from); !advice.empty()) line += ": " + advice;
    return line;
}

std::vector<std::string> RefusalReport::new_lines(const std::vector<gateway::RefusalNotice>& notices,
                                                 gateway::GrantsFrom from) {
    std::vector<std::string> lines;
    for (const auto& n : notices)
        if (reported_.emplace(n.host, n.port).second) lines.push_back(refusal_line(n, from));
    return lines;
}

int RefusalListeners::add(std::string role, Tell tell) {
    std::lock_guard lock(mu_);
    const int id = ++next_id_;
    listeners_.emplace(id, Listener{std::move(role), std::move(tell), RefusalReport{}});
    return id;
}

void RefusalListeners::remove(int id) {
    std::lock_guard lock(mu_);
    listeners_.erase(id);
}

void RefusalListeners::deliver(const std::vector<gateway::RefusalNotice>& notices, gateway::GrantsFrom from) {
    std::lock_guard lock(mu_);
    for (const auto& n : notices) {
        std::uint64_t& seen = counts_[{n.host, n.port}];
        if (n.count <= seen) continue;
        seen = n.count;
        for (auto& [id, l] : listeners_)
            if (n.role.empty() || n.role == l.role)
                for (const auto& line : l.told.new_lines({n}, from)) l.tell(line);
    }
}

}  // namespace corral::run
