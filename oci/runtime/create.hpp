// oci/runtime/create.hpp — `corral-oci create`: the bundle read and mapped,
// the id claimed, then a supervisor forked that outlives this command (as
// `corral session start`'s does) and runs the box as a corral run whose
// body is the container's (container_body.hpp). create returns once the box
// is built and waits for `start`, with the supervisor's PID in --pid-file;
// or with the reason it was not built and nothing left behind.
#pragma once

#include "oci/cli_args.hpp"

namespace corral::oci {

int cmd_create(const OciArgs& args);

}  // namespace corral::oci
