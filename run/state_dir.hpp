// run/state_dir.hpp — the state dir (and a given run dir) before any
// command touches what is in it.
//
// Root writes and reads the state dir by path: runs, session names, locks,
// images, journals. If anyone but root could change it or a directory on
// its path, root's writes and locks could be redirected (a symlink), raced
// (a group-writable directory) or held (a lock file someone else opened).
// So every command checks its state dir first, with one of these, before it
// creates, opens or locks anything in it.
#pragma once

#include <string>

namespace corral::run {

// mkdir -p, then require a root-owned real directory: the run dir holds the
// logs and run.json, which the agent must not reach.
// Creates `path` (0700, root's) only inside a tree only root can change,
// checked before anything is created: a symlink planted on the way must not
// make root create or chmod directories elsewhere. An existing directory is
// never chmodded (--state-dir /var/lib must not close /var/lib). An existing
// state dir must be root's and writable by no one else (what it holds is
// private by its own modes: run dirs 0700, the CA key 0600); an existing run
// dir must be root's, 0700 and empty: a reused one would hand the previous
// agent's files to the next.
enum class DirRole { state, run };

// Returns the directory's real path, which the caller uses from then on.
// Throws UsageError naming `option`, the path and what is wrong.
std::string make_private_dir(const std::string& option, const std::string& path, DirRole role);

// For a command that only reads the state dir (ps, logs, stop, inspect,
// session ls/stop, exec, image, journal verify): the same checks as
// make_private_dir's for a state dir, and nothing created; a state dir that
// does not exist yet passes (there is nothing in it to read). Returns the
// path to use (the real one). Throws UsageError.
std::string require_private_state_dir(const std::string& option, const std::string& path);

}  // namespace corral::run
