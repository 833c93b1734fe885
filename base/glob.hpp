// base/glob.hpp — the one shell-style glob of corral (model names in a
// grant's policy, MCP tool names and string arguments): `*` any run of bytes
// (slashes included), `?` one byte, everything else literal. No classes, no
// escapes. Greedy with one backtrack point: O(|pattern| * |text|) at worst.
#pragma once

#include <string_view>

namespace corral {

bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace corral
