// tools/session_client.hpp — what `corral session`, `corral exec` and the
// run listings share (tools/session_client.cpp): telling a session from a
// run, finding a session by its handle, and the one form of a usage error.
// It needs the run index and nothing of the gateway, so `corral-exec`
// (tools/exec_main.cpp) links it without the rest of corral.
#pragma once

#include <string>

#include "run/run_index.hpp"

namespace corral::cli {

// "PREFIX: WHAT" on stderr (escaped for the terminal); returns exit status 2.
int usage_error(const char* prefix, const std::string& what);

// Whether the run entry is a session's (`corral session start`), by its run.json.
bool is_session(const run::RunEntry& e);

// The run `key` names (its id or a unique prefix), else the running session
// named `key`; throws, naming why, when that is not a live session.
run::RunEntry find_session(const std::string& state_dir, const std::string& key);

}  // namespace corral::cli
