// config/capacity_config.hpp — how many boxes one state dir runs at once.
//
// STATE/capacity.toml (root's, like everything in the state dir) holds the
// operator's limit for the host:
//
//   max_boxes = 64   # runs, sessions and a run's MCP server boxes together
//
// No file: no limit of corral's own (the UID range and the host's pools
// still bound it). docs/operations.md "Capacity".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace corral::config {

inline constexpr const char* kCapacityFileName = "capacity.toml";
inline constexpr std::int64_t kMaxBoxesCeiling = 1'000'000;

struct CapacityConfig {
    std::optional<std::uint64_t> max_boxes;  // none: unlimited
};

// The limits in `path`; a missing file is no limit. Throws ConfigError
// naming FILE:LINE, the key, what it got and what is allowed.
CapacityConfig load_capacity_config(const std::string& path);

}  // namespace corral::config
