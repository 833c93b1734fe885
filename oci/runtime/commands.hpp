// oci/runtime/commands.hpp — `corral-oci`: the runc-shaped command line
// (oci/cli_args.hpp) carried out: create, start, state, kill, delete,
// features, --version (docs/oci-runtime.md). tools/oci_main.cpp is its main.
#pragma once

namespace corral::oci {

// Exit status: 0, 1 for a refused or failed command (as runc), 2 for a
// usage error. Messages go to stderr and, with --log, to the log file in
// --log-format (engines read the last error there).
int run_oci_command(int argc, char** argv);

}  // namespace corral::oci
