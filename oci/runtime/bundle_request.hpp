// oci/runtime/bundle_request.hpp — a bundle's mapped config (oci/
// bundle_config.hpp) as the run request `corral run` would have been given
// (run/request.hpp): the one place the OCI front's box is described in
// corral's terms, so that the box is built, recorded and torn down by the
// same Run as every other (docs/oci-runtime.md "From config.json to a run").
//
// Pure: the caller reads the bundle; the host decides the state dir.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "oci/bundle_config.hpp"
#include "run/request.hpp"

namespace corral::oci {

struct BundleRequest {
    run::RunRequest request;
    // The config's notes plus the front's own (what the request cannot say
    // and the box therefore does differently), for the run dir's record.
    std::vector<ConfigNote> notes;
    // process.terminal: the process's 0/1/2 are a pty of the box, whose
    // master goes to the engine's --console-socket; its window size
    // (process.consoleSize), 0 when not given.
    bool terminal = false;
    std::uint16_t console_rows = 0, console_cols = 0;
};

// `state_dir`: corral's (the boxes are `corral ps`'s too); empty: corral's
// default. `uid_range`: the node's range for OCI boxes. Throws UsageError
// naming the config field for what the front cannot build yet (a tmpfs
// other than /tmp and /dev/shm, a noexec bind).
BundleRequest bundle_request(const BundleConfig& config, const std::string& state_dir);

}  // namespace corral::oci
