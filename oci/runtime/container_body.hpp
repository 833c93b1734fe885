// oci/runtime/container_body.hpp — what a container's supervisor does
// between the box's launch and its teardown (run/run.hpp's body phase):
//
//   1. the process is made, gated: the box's first invocation (the box is a
//      session's, supervisor/invocation.hpp), its command held until start;
//      with a terminal, its pty's master goes to the engine's console socket
//   2. the record says created, the control socket listens, `create` is told
//   3. it waits for `start` (a kill or a signal to the supervisor first ends
//      the box before its process ran: the gate closes unopened)
//   4. start opens the gate; the record says running
//   5. its output to the engine's stdio and the run dir's logs (supervise),
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
    // process.terminal: the engine's --console-socket, which gets the pty's
    // master before `create` returns; "" without a terminal.
    std::string console_socket;
    std::uint16_t console_rows = 0, console_cols = 0;
};

// The body; `launch` must outlive the run.
run::RunBody container_body(ContainerLaunch& launch);

}  // namespace corral::oci
