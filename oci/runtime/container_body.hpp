// oci/runtime/container_body.hpp — what a container's supervisor does
// between the box's launch and its teardown (run/run.hpp's body phase):
//
//   1. the record says created, the control socket listens, `create` is told
//   2. it waits for `start` (a kill or a signal to the supervisor first ends
//      the box before its process ran)
//   3. the process: the box's first invocation (the box is a session's,
//      supervisor/invocation.hpp); the record says running
//   4. its output to the engine's stdio and the run dir's logs (supervise),
//      kills and execs served beside it (container_control.hpp), until it
//      ends; then every exec ends with it
//
// The phases before (reserve, slot, journal, resolve, admit, launch) and
// after (teardown, verified; finish, run.json) are the Run's, as for every
// corral run.
#pragma once

#include <vector>

#include "base/fd.hpp"
#include "oci/bundle_config.hpp"
#include "oci/runtime/container_dir.hpp"
#include "run/run.hpp"

namespace corral::oci {

struct ContainerLaunch {
    ContainerDir dir;
    ContainerRecord record;          // id, bundle and annotations set by create
    Fd ready;                        // create waits for "ok\n" (EOF: the box did not start)
    // The engine's stdout and stderr (the container's): the command's output
    // goes there; the supervisor's own lines go to the run dir's oci.log.
    int out_fd = -1;
    int err_fd = -1;
    std::vector<ConfigNote> notes;   // written to RUN_DIR/oci-config.json
};

// The body; `launch` must outlive the run.
run::RunBody container_body(ContainerLaunch& launch);

}  // namespace corral::oci
