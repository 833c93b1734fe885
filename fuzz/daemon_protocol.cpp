// Fuzz target: the Unix-socket protocol between a bridge (or a run's
// supervisor) and a `corral gateway` daemon: the first line the daemon reads
// (CORRAL-IDENTITY / CORRAL-COUNTS) and the counts answer the supervisor
// reads back. The input up to its first '\n' is the line; all of it is the
// answer. An accepted announcement must be exactly the line the bridge
// writes for that identity (no second spelling of one identity).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gateway/identity.hpp"
#include "shim/bridge.hpp"

using namespace corral;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    std::string_view line = in.substr(0, in.find('\n'));
    if (auto first = gateway::parse_daemon_first_line(line)) {
        std::string written = first->counts ? "CORRAL-COUNTS " + first->id.str() + "\n"
                                            : shim::identity_announcement(first->id.str());
        if (written != std::string(line) + "\n") std::abort();
    }
    std::string problem;
    auto counts = shim::parse_daemon_counts(in, &problem);
    if (counts.has_value() == !problem.empty()) std::abort();
    return 0;
}
