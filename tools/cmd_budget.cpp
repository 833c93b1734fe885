// tools/cmd_budget.cpp — `corral budget show|reset WORKER [--gateway unix:PATH]`:
// a worker's budget across its runs, as the gateway daemon that keeps it
// has it (its [budget.worker] limits, what was spent, what remains; its
// [mcp.budget] tool_calls_per_worker as "tool_calls"), and the operator's
// reset of them. Prints the daemon's JSON line on stdout.
#include <cstdio>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/org_config.hpp"
#include "names/identity.hpp"
#include "gateway/daemon_protocol.hpp"
#include "run/bridge.hpp"
#include "cli/action_front.hpp"
#include "base/sys_error.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

int cmd_budget(int argc, char** argv) {
    ActionFront front("budget", budget_help());
    if (auto exit = front.take_action(argc, argv, {"show", "reset"})) return *exit;
    const std::string& action = front.action();
    BudgetArgs args;
    try {
        args = parse_budget_args(argc - 1, argv + 1);
    } catch (const UsageError& e) {
        return front.bad_usage(e.what());
    }
    if (args.help) return front.help();
    const std::string& worker = args.worker;
    const std::string& socket = args.socket;
    auto answer = run::ask_daemon(socket, gateway::budget_request(worker, action == "reset"), std::chrono::seconds(5));
    if (!answer || answer->empty()) {
        std::fprintf(stderr,
                     "corral budget: gateway daemon at %s: %s; budgets across runs are kept by the daemon "
                     "(start it with `corral gateway --org DIR`)\n",
                     socket.c_str(), answer ? "closed without an answer" : answer.problem().c_str());
        return 125;
    }
    auto j = nlohmann::json::parse(*answer, nullptr, false);
    if (!j.is_object()) {
        std::fprintf(stderr, "corral budget: gateway daemon at %s: unexpected answer\n", socket.c_str());
        return 125;
    }
    std::fputs(answer->c_str(), stdout);
    if (j.contains("budget") && j["budget"].is_null() && !j.contains("tool_calls")) {
        std::fprintf(stderr,
                     "corral budget: worker %s has no budget across runs ([budget.worker], [mcp.budget] "
                     "tool_calls_per_worker)\n",
                     worker.c_str());
        return 1;
    }
    if (action == "reset") std::fprintf(stderr, "corral budget: worker %s's budget across runs reset\n", worker.c_str());
    return 0;
}

}  // namespace corral::cli
