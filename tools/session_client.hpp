// tools/session_client.hpp — what `corral session` and `corral exec` share
// (tools/cmd_session.cpp, tools/cmd_exec.cpp): finding a session by its
// handle, and the one form of a usage error.
#pragma once

#include <string>

#include "run/run_index.hpp"

namespace corral::cli {

// "PREFIX: WHAT" on stderr (escaped for the terminal); returns exit status 2.
int usage_error(const char* prefix, const std::string& what);

// The run `key` names (its id or a unique prefix), else the running session
// named `key`; throws, naming why, when that is not a live session.
run::RunEntry find_session(const std::string& state_dir, const std::string& key);

}  // namespace corral::cli
