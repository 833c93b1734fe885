// base/log.hpp — the one logging entry point.
//
// Library code logs nothing above debug; the caller that decides logs once.
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
