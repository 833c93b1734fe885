// supervisor/stale_cleanup.hpp — removing what a killed supervisor left behind.
//
// Called at every corral start (before acquiring a UID). A run is dead when its
// lock file's flock can be taken (see the scheme in uid_lease.hpp). For
//   - every cgroup dir <hierarchy>/corral/<run-id> and
//   - every scratch dir /run/corral/scratch/<run-id>
// whose run id is not recorded in a lock that is currently held, leftovers are
// killed, mounts under the scratch dir are detached and the dirs removed; then
// every lock file whose flock can be taken is unlinked (while holding its flock).
// Dirs are listed before the live locks are read, so a run that starts meanwhile
// (it records its id in its lock before creating any dir) is never touched.
// Cgroups are host-wide: lock_dir must be the lock dir every corral on the host
// uses (a private lock dir would make every other run's cgroups look stale).
// A run that is alive keeps its lock's flock only through the supervisor's fd:
// processes forked from the supervisor must close it (see uid_lease.hpp).
#pragma once

#include <string>
#include <vector>

namespace corral::supervisor {

inline constexpr const char* kDefaultScratchRoot = "/run/corral/scratch";

// Returns one line per thing removed ("cgroup /sys/fs/cgroup/pids/corral/<id>",
// "scratch /run/corral/scratch/<id>", "lock /run/corral/uids/<uid>.lock").
// Failures to remove one item are logged (warn) and reported as "failed: ..."
// lines; they never stop the cleanup of the others.
std::vector<std::string> remove_stale_runs();
std::vector<std::string> remove_stale_runs(const std::string& lock_dir, const std::string& scratch_root);

}  // namespace corral::supervisor
