// oci/state.hpp — a container's state as the runtime spec's `state` command
// prints it, and the container id rule.
//
// Pure: the front keeps the record (under --root) and asks here how it is
// written and read back.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <sys/types.h>

#include "base/checked.hpp"

namespace corral::oci {

// The runtime spec version corral's state and features documents speak.
inline constexpr std::string_view kOciVersion = "1.2.0";

enum class ContainerStatus { creating, created, running, stopped };
std::string_view to_string(ContainerStatus s);
std::optional<ContainerStatus> parse_container_status(std::string_view text);

struct ContainerState {
    std::string oci_version{kOciVersion};
    std::string id;
    ContainerStatus status = ContainerStatus::creating;
    // The container process's PID on the host: required while created or
    // running; the spec leaves it out once stopped.
    std::optional<pid_t> pid;
    std::string bundle;  // absolute
    std::map<std::string, std::string> annotations;
};

// The spec's state JSON, one object, pretty-printed as runc prints it.
std::string state_json(const ContainerState& state);
// Reads one back (the front's record); the problem names the field.
Checked<ContainerState> parse_state_json(std::string_view text);

// A container id: 1 to kMaxContainerIdLength of [A-Za-z0-9_.-], not "." or
// ".." (it names a directory under --root). runc's rule, bounded.
inline constexpr std::size_t kMaxContainerIdLength = 128;
Problem check_container_id(std::string_view id);

}  // namespace corral::oci
