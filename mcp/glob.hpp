// mcp/glob.hpp — shell-style globs for tool names and string arguments:
// `*` any run of characters (slashes included), `?` one byte; everything else
// literal. No classes, no escapes. Linear in practice (one backtrack point).
#pragma once

#include <string_view>

namespace corral::mcp {

bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace corral::mcp
