// oci/runtime/control.hpp — the words between the runtime's commands and a
// container's supervisor, over ROOT/ID/control.sock (root's, 0600, in a
// 0700 directory; the peer must be root too):
//
//   start\n              → ok\n | error TEXT\n
//   kill SIGNO ALL\n     → ok\n | error TEXT\n      (ALL: 0 the process, 1 every process of the box)
//
// One request per connection. A line is at most kMaxControlLine bytes; a
// peer that sends no whole line within 10 s is dropped.
#pragma once

#include <optional>
#include <string>

#include "base/fd.hpp"
#include "oci/runtime/container_dir.hpp"

namespace corral::oci {

inline constexpr std::size_t kMaxControlLine = 256;

struct ControlRequest {
    enum class Kind { start, kill } kind = Kind::start;
    int signal = 0;
    bool all = false;
};

// A request's line, without its newline; nullopt for anything else.
std::optional<ControlRequest> parse_control_line(const std::string& line);
std::string control_line(const ControlRequest& request);

// The supervisor's end: one line from `conn` (bounded), nullopt when the
// peer is not root or sent no request; and the answer.
std::optional<ControlRequest> read_control_request(int conn);
void answer_control(int conn, const std::string& error_or_empty);

// The command's end: the request sent to the container's supervisor, its
// answer waited for (bounded); throws UsageError with the supervisor's
// error, or naming why it could not be asked (the container is not running).
void ask_supervisor(const ContainerDir& container, const ControlRequest& request);

}  // namespace corral::oci
