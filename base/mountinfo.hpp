// base/mountinfo.hpp — reading /proc/<pid>/mountinfo fields.
#pragma once

#include <string>
#include <string_view>

namespace corral {

// A mount point or root field as the kernel wrote it, unescaped: mountinfo
// writes space, tab, newline and backslash as a backslash and three octal
// digits ("/a\040b" is "/a b"). Anything else passes through unchanged.
std::string unescape_mountinfo_field(std::string_view field);

}  // namespace corral
