// oci/runtime/runtime_log.hpp — the runtime's own messages as engines read
// them: --log FILE in --log-format (json: one {"level","msg","time"} object
// per line; text: logrus's key=value line, as runc writes them). conmon and
// containerd's shim take the last error line of the file for the reason a
// command failed.
#pragma once

#include <string>
#include <string_view>

#include "oci/cli_args.hpp"

namespace corral::oci {

// An error: on stderr ("corral-oci: MSG") and in --log.
void log_error(const GlobalArgs& global, const std::string& message);

// A warning (what the supervisor said while it built the box): in --log
// when there is one, else on stderr; an engine shows create's stderr to
// its user on every container, a log is read when something failed.
void log_warning(const GlobalArgs& global, const std::string& message);

}  // namespace corral::oci
