// tools/session_client.cpp — finding a live session by its id or name, for
// `corral session`, `corral exec` and `corral-exec` (session_client.hpp).
#include "tools/session_client.hpp"

#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "base/sys_error.hpp"
#include "base/terminal_text.hpp"
#include "run/outcome.hpp"

namespace corral::cli {

int usage_error(const char* prefix, const std::string& what) {
    std::fprintf(stderr, "%s: %s\n", prefix, terminal_text(what).c_str());
    return run::kExitUsage;
}

bool is_session(const run::RunEntry& e) { return e.record && e.record->value("kind", std::string()) == "session"; }

// By id first: that reads one run.json, a name reads them all.
run::RunEntry find_session(const std::string& state_dir, const std::string& key) {
    run::RunEntry e;
    try {
        e = run::find_run(state_dir, key);
    } catch (const UsageError& err) {
        for (auto& named : run::list_runs(state_dir))
            if (is_session(named) && named.state == "running" && run::session_name_of(*named.record) == key)
                return named;
        throw std::runtime_error(std::string(err.what()) + "; `corral session ls` lists the sessions");
    }
    if (e.record && !is_session(e))
        throw std::runtime_error(e.id + " is a run, not a session; `corral session ls` lists the sessions");
    if (e.state == "finished")
        throw std::runtime_error("session " + e.id + " has ended (" + e.record->value("outcome", std::string("?")) +
                                 "); start a new one with `corral session start`");
    if (e.state == "lost")
        throw std::runtime_error("session " + e.id +
                                 " is lost: its supervisor died, and the sandbox with it; start a new one");
    if (e.state != "running") throw std::runtime_error("session " + e.id + " is not running (state " + e.state + ")");
    return e;
}

}  // namespace corral::cli
