// Fuzz target: the Unix-socket protocol between a bridge (or a run's
// supervisor) and a `corral gateway` daemon: the first line the daemon reads
// (CORRAL-IDENTITY / CORRAL-MCP / CORRAL-COUNTS / CORRAL-BUDGET[-RESET] /
// CORRAL-GRANTED / CORRAL-CAPTURED / CORRAL-DNS) and the counts answer the supervisor
// reads back. The input up to its first '\n' is the line; all of it is the
// answer. An accepted announcement must be exactly the line the bridge
// writes for that identity (no second spelling of one identity), and an
// accepted answer must read back the same after the daemon writes it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gateway/daemon_protocol.hpp"

using namespace corral;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    std::string_view line = in.substr(0, in.find('\n'));
    if (auto first = gateway::parse_daemon_first_line(line)) {
        std::string written;
        if (first->budget)
            written = gateway::budget_request(first->worker, first->budget_reset);
        else if (first->counts)
            written = gateway::counts_request(first->id);
        else if (first->mcp)
            written = gateway::mcp_announcement(first->id);
        else if (first->granted)
            written = gateway::granted_request(first->id, first->target->host);
        else if (first->captured)
            written = gateway::captured_announcement(first->id, *first->target);
        else if (first->dns)
            written = gateway::dns_refusal_line(first->id, first->qtype, first->name, first->reason).value_or("");
        else
            written = gateway::identity_announcement(first->id);
        if (written != std::string(line) + "\n") std::abort();
    }
    auto counts = gateway::parse_counts_answer(in);
    if (!counts && counts.problem().empty()) std::abort();
    // What is accepted is what the daemon would write for those counts.
    if (counts) {
        auto reread = gateway::parse_counts_answer(gateway::counts_answer(*counts));
        if (!reread || reread->requests != counts->requests || reread->refusals != counts->refusals ||
            reread->secrets_reflected != counts->secrets_reflected || reread->instance != counts->instance ||
            reread->ledger_failure != counts->ledger_failure || reread->model != counts->model)
            std::abort();
    }
    return 0;
}
