// oci/runtime/ps.hpp — `corral-oci ps`: a container's processes, as runc's
// ps (what containerd's shim calls for a task's pids: `ps --format json ID`).
//
// The processes are the box's cgroup's, but corral's own init (the set
// `kill --all` signals), asked of the container's supervisor, which holds
// the cgroup. --format json prints their host pids as a JSON array; the
// table format (the default) runs the host's `ps` with the options after
// ID (default -ef) and keeps its header and the lines of those pids.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "oci/cli_args.hpp"

namespace corral::oci {

int cmd_ps(const OciArgs& args);

// `ps` output (a header with a PID column, then one line per process)
// reduced to the header and the lines whose PID is one of `pids`. Throws
// UsageError when the header has no PID column (ps options that drop it).
std::string keep_ps_lines(std::string_view table, const std::vector<long>& pids);

}  // namespace corral::oci
