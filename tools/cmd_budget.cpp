// tools/cmd_budget.cpp — `corral budget show|reset WORKER [--gateway unix:PATH]`:
// a worker's budget across its runs, as the gateway daemon that keeps it
// has it (its [budget.worker] limits, what was spent, what remains), and the
// operator's reset of it. Prints the daemon's JSON line on stdout.
#include <cstdio>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/org_config.hpp"
#include "names/identity.hpp"
#include "gateway/daemon_protocol.hpp"
#include "run/bridge.hpp"
#include "tools/action_front.hpp"
#include "tools/commands.hpp"

namespace corral::cli {

namespace {

void usage(std::FILE* out) {
    std::fprintf(out,
                 "usage: corral budget show WORKER [--gateway unix:PATH]\n"
                 "       corral budget reset WORKER [--gateway unix:PATH]\n"
                 "\n"
                 "A worker's budget across its runs ([budget.worker] in its worker.toml or org.toml)\n"
                 "is kept by the gateway daemon (`corral gateway --org DIR`) in STATE_DIR/budgets/WORKER.json\n"
                 "and survives its restarts. show prints it as one JSON line (limits, spent, remaining,\n"
                 "exhausted); reset sets what was spent back to zero and prints the result.\n"
                 "  --gateway unix:PATH   the daemon's socket (default %s)\n",
                 std::string(config::default_gateway_socket).c_str());
}

}  // namespace

int cmd_budget(int argc, char** argv) {
    ActionFront front("budget", usage);
    if (auto exit = front.take_action(argc, argv, {"show", "reset"})) return *exit;
    const std::string& action = front.action();
    std::string worker;
    std::string socket(config::default_gateway_socket);
    for (int i = 2; i < argc; ++i) {
        std::string_view a = argv[i];
        if (ActionFront::is_help(a)) return front.help();
        if (a == "--gateway" || a.rfind("--gateway=", 0) == 0) {
            std::string v;
            if (a == "--gateway") {
                if (i + 1 >= argc) return front.bad_usage("--gateway: missing value; expected --gateway unix:PATH");
                v = argv[++i];
            } else {
                v = std::string(a.substr(10));
            }
            if (v.rfind("unix:/", 0) != 0) return front.bad_usage("--gateway: got \"" + v + "\", expected unix:/ABSOLUTE/PATH");
            socket = v.substr(5);
            continue;
        }
        if (!worker.empty() || a.empty() || a.front() == '-')
            return front.bad_usage("unexpected argument \"" + std::string(a) + "\"; expected: WORKER [--gateway unix:PATH]");
        worker = std::string(a);
    }
    if (worker.empty()) return front.bad_usage("missing WORKER");
    if (auto why = names::worker_name_problem(worker); !why.empty())
        return front.bad_usage("invalid worker name \"" + worker + "\": " + why);
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
    if (j.contains("budget") && j["budget"].is_null()) {
        std::fprintf(stderr, "corral budget: worker %s has no budget across runs ([budget.worker])\n", worker.c_str());
        return 1;
    }
    if (action == "reset") std::fprintf(stderr, "corral budget: worker %s's budget across runs reset\n", worker.c_str());
    return 0;
}

}  // namespace corral::cli
