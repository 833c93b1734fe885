// base/log.hpp — the one logging entry point.
//
// Library code logs nothing above debug; the caller that decides logs once.
// A step with something to tell the user returns it as data (a TeardownReport's
// notes, a SuperviseResult's notes, a config's warnings) or hands it to the
// caller's supervisor::Tell as it happens; the command prints it once with
// its own prefix ("corral run:", "corral session:"). Three places log here
// because no caller is left to tell: the long-lived loops' own events (the
// gateway, the bridge, a session's server), destructors and noexcept
// cleanups (the last resort), and a journal or ledger that stops working.
// Lines go to stderr prefixed "corral: ". Not for use between clone3() and
// execve() (it allocates).
#pragma once

#include <string_view>

namespace corral::log {

enum class Level { debug, info, warn, error };

void set_level(Level level);
Level level();
void write(Level level, std::string_view message);

inline void debug(std::string_view m) { write(Level::debug, m); }
inline void info(std::string_view m) { write(Level::info, m); }
inline void warn(std::string_view m) { write(Level::warn, m); }
inline void error(std::string_view m) { write(Level::error, m); }

}  // namespace corral::log
