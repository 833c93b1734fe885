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
    // A check corral can run without (an agent CLI, ID-mapping, which has a
    // fallback): failing, it is a warning ("warn") and leaves the exit status alone.
    bool required = true;
};

std::vector<Check> run_doctor_checks();

// ID-mapped mounts, for real: a detached ID-mapped copy of a fresh directory
// below `where` (the state dir, where the workspace's file system is likely
// to be, else /run/corral), owned by an unprivileged ID, made the way
// --workspace and --bind make theirs (rootfs/idmapped_tree.hpp). Not required:
// without it a workspace is bound as is, with a warning.
Check check_idmapped_mounts(const std::string& where);

// corral's state directory: missing is fine (the first run makes it 0700);
// existing, it must be a directory only root can change, on a path only root
// can redirect (the run dirs and the CA live there).
Check check_state_dir(const std::string& dir);

// "ok   <feature>: <detail>", "FAIL <feature>: <detail> — <remedy>" or, for a
// check that is not required, "warn <feature>: <detail> — <remedy>".
std::string format_check(const Check& check);

// "ok" | "fail" | "warn", as format_check and `corral doctor --json` name it.
const char* check_status(const Check& check);

}  // namespace corral::supervisor
