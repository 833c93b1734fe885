// supervisor/command_path.hpp — where the command is looked for in the box.
//
// argv[0] is resolved as execvp(3) would, but against the sandbox's PATH
// (command_environment), never the supervisor's own environment: the
// candidates are computed before the clone and the command tries each.
#pragma once

#include <string>
#include <vector>

namespace corral::supervisor {

// The value of the last KEY=... in `env` ("" if none).
std::string env_value(const std::vector<std::string>& env, const std::string& key);

// `cmd` itself if it has a '/', else DIR/cmd for each PATH entry of `env`, in
// order (an empty entry is the working directory, ".").
std::vector<std::string> exec_candidates(const std::string& cmd, const std::vector<std::string>& env);

}  // namespace corral::supervisor
