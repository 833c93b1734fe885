// oci/runtime/list.hpp — `corral-oci list`: the containers under --root, as
// runc's list (an operator's look at a node; no engine calls it).
//
// The table (the default) has runc's columns: ID, PID (the supervisor's, 0
// once stopped), STATUS, BUNDLE, CREATED, OWNER. `--format json` prints an
// array of runc's objects (ociVersion, id, pid, status, bundle, rootfs,
// created, owner, annotations); `--quiet` the ids only. A directory whose
// record cannot be read (a create that never finished) is listed as
// "creating" rather than hidden.
#pragma once

#include "oci/cli_args.hpp"

namespace corral::oci {

int cmd_list(const OciArgs& args);

}  // namespace corral::oci
