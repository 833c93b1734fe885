// base/suggest.hpp — "did you mean": the one known name closest to a mistyped one.
//
// Used by every place that refuses an unknown name (`corral SUBCOMMAND`,
// `corral run --OPTION`): one suggestion, and only when it is close, so a
// wrong guess never reads as an instruction.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace corral {

// The optimal-string-alignment distance: insertions, deletions, substitutions
// and swaps of two neighbouring characters each cost 1 ("--memroy" is 1 from
// "--memory").
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate at the smallest edit distance from `typed`, when that distance
// is at most 2 and at most half the typed name's length (leading dashes
// not counted), and no other candidate is as close; nullopt otherwise.
std::optional<std::string> closest_name(std::string_view typed, std::span<const std::string_view> candidates);

}  // namespace corral
