// oci/runtime/exec.hpp — `corral-oci exec`: one more process in a running
// container's box, as runc's exec (what `podman exec` and containerd's shim
// call: `exec --process FILE --detach --pid-file P ID`, or `exec ID ARGS`).
//
// The process is asked of the container's supervisor (control.hpp's exec),
// with this command's stdin, stdout and stderr: it reads and writes them
// itself. Without --detach this command waits and exits with its status.
// With --detach a waiter is forked that does the waiting: its pid goes to
// --pid-file, and the engine's subreaper reaps the process's status from it
// (as from create's supervisor).
#pragma once

#include "oci/cli_args.hpp"

namespace corral::oci {

int cmd_exec(const OciArgs& args);

}  // namespace corral::oci
