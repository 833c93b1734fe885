// run/agent_run.hpp — the worker's agent CLI as a run's command: its prompt,
// its profile (agents/agent_profile.hpp), its home in the run dir, and the
// checks that refuse the run before anything is built.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "agents/agent_profile.hpp"
#include "base/sys_error.hpp"
#include "run/resolve.hpp"

namespace corral::run {

// The agent's program is not in the rootfs the box would see (corral run
// exits 127, as for a command not found, but before anything is built).
struct AgentProgramNotFound : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The agent's prompt cannot be handed to its CLI as it is (empty, a NUL
// byte, longer than one command-line argument may be): bad input, corral run
// exits 2 before anything is built.
struct PromptError : UsageError {
    using UsageError::UsageError;
};

struct AgentRun {
    agents::AgentProfile profile;
    // The box's command (the CLI's, or an interactive run's); unset for a
    // session, whose init starts no command of its own.
    std::optional<std::vector<std::string>> argv;
    agents::AgentInputs inputs;              // what the profile was made from (a session's: no prompt)
    std::optional<std::string> cli_version;  // the installed CLI's; unset = unknown (run.json: null)
    std::vector<std::string> messages;       // what to tell the operator (e.g. why cli_version is null)
};

// Single-threaded, before launch_sandbox, for an agent run (request.agent(),
// or interactive_agent_run: then no prompt, and the CLI gets the caller's
// arguments instead of its non-interactive ones; or a session of a worker
// with an agent: no prompt and no command, agent_prompt_argv makes each
// `corral exec --prompt`'s): reads the prompt files,
// makes the agent's profile, checks its command line
// fits execve and its CLI is in the plan's rootfs, and writes its home
// (root's until hand_agent_home). The plan is not changed: finish_plan
// (run/final_plan.hpp) takes the argv and environment from the result.
// Throws PromptError, AgentProgramNotFound, UsageError, SysError.
AgentRun prepare_agent_run(const RunRequest& request, const RunInputs& inputs, const RunPlan& plan);

// A session's agent on `prompt`: the CLI's non-interactive command line, as
// `corral run --prompt` would run it (the session's home, credentials and
// system prompt). Throws PromptError for a prompt its CLI cannot take.
std::vector<std::string> agent_prompt_argv(const AgentRun& agent, const std::string& prompt);

// A prompt file as --prompt-file reads it (no symlinks, no FIFO, at most
// 4 MiB, no NUL, not blank). Throws UsageError / PromptError naming `option`.
std::string read_prompt_file(const std::string& option, const std::string& path);

// At the hook point: the agent's home (the plan's spec.rootfs.home_dir)
// becomes the leased UID's. Never follows a symlink.
void hand_agent_home(const std::string& home_dir, uid_t uid, gid_t gid);

}  // namespace corral::run
