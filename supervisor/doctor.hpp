// supervisor/doctor.hpp — does this kernel/host offer everything corral needs?
//
// Each check probes the feature for real (creates the namespace in a forked
// child, installs a filter, mounts an overlay in a throwaway mount namespace)
// rather than trusting version numbers or config files.
#pragma once

#include <string>
#include <vector>

namespace corral::supervisor {

struct Check {
    std::string feature;  // "pid namespace", "cgroup memory controller", ...
    bool ok = false;
    std::string detail;   // ok: what was found; FAIL: what is missing
    std::string remedy;   // FAIL: what to do
};

std::vector<Check> run_doctor_checks();

// "ok   <feature>: <detail>" or "FAIL <feature>: <detail> — <remedy>"
std::string format_check(const Check& check);

}  // namespace corral::supervisor
