// tools/oci_main.cpp — `corral-oci`: corral as an OCI runtime, the command
// line podman, containerd and CRI-O call (oci/runtime/commands.hpp).
#include "oci/runtime/commands.hpp"

int main(int argc, char** argv) { return corral::oci::run_oci_command(argc, argv); }
