#include "run/refusal_report.hpp"

#include "gateway/refusal.hpp"

namespace corral::run {

std::string refusal_line(const gateway::RefusalNotice& n) {
    // A connection refused before its request was read names no host.
    const std::string what = n.host.empty() ? "a connection"
                                            : (n.method.empty() ? std::string("a request to") : n.method) + " " + n.host +
                                                  ":" + std::to_string(n.port);
    std::string line = "refused " + what + " (" + n.reason + (n.status ? ", " + std::to_string(n.status) : "") + ")";
    if (std::string advice = gateway::what_would_allow(n.reason, n.host, n.port); !advice.empty()) line += ": " + advice;
    return line;
}

std::vector<std::string> RefusalReport::new_lines(const std::vector<gateway::RefusalNotice>& notices) {
    std::vector<std::string> lines;
    for (const auto& n : notices)
        if (reported_.emplace(n.host, n.port).second) lines.push_back(refusal_line(n));
    return lines;
}

}  // namespace corral::run
