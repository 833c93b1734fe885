// base/parse.hpp — parsing of the small value forms users type: sizes and durations.
//
// Each parser either returns a value or throws UsageError whose message names
// the offending text and the accepted form, e.g.
//   invalid size "12XB": expected a number with an optional unit K, M, G, T (powers of 1024), KiB/MiB/GiB/TiB, or B
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace corral {

// "512", "512B", "64K", "64k", "64KiB", "1.5G", "2MiB", "1M". Powers of 1024.
// Rejects negatives, empty text, overflow and unknown units.
std::uint64_t parse_size(std::string_view text);

// "250ms", "30s", "5m", "1h", "1h30m", "90" (seconds), "1.5s".
// Rejects negatives, empty text, unknown units and overflow.
std::chrono::milliseconds parse_duration(std::string_view text);

// "KEY=VALUE" where KEY is [A-Za-z_][A-Za-z0-9_]*; VALUE may be empty.
std::pair<std::string, std::string> parse_env_pair(std::string_view text);

// ASCII upper case letters made lower case; every other byte unchanged
// (protocol tokens: keys, paths, header values; never locale-dependent).
std::string ascii_lower(std::string_view s);

// Renders sizes and durations the way the parsers accept them ("64MiB", "1500ms").
std::string format_size(std::uint64_t bytes);
std::string format_duration(std::chrono::milliseconds d);

}  // namespace corral
