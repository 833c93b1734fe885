// rootfs/box_path.hpp — the two rules for paths in a mount plan, one home.
#pragma once

#include <string_view>

namespace corral::rootfs {

// Absolute, no empty, "." or ".." component, no trailing '/' ("/" itself is).
bool is_normalized_absolute(std::string_view p);

// `path` is `dir` or below it, component-wise (both normalized).
bool is_at_or_below(std::string_view path, std::string_view dir);

}  // namespace corral::rootfs
