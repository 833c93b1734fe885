// supervisor/hostname.hpp — the sandbox's hostname rule (checked by --hostname
// and again by launch_sandbox for a spec built without the command line).
#pragma once

#include <string>

namespace corral::supervisor {

// A hostname the kernel and resolvers accept: 1..64 chars of [A-Za-z0-9-.],
// not starting or ending with '-' or '.'. Throws UsageError naming the text.
void check_hostname(const std::string& name);

}  // namespace corral::supervisor
