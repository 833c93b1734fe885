// base/strict_json_fast.hpp — the fast half of base/strict_json's reading
// (RapidJSON); base/strict_json.hpp is the interface.
#pragma once

#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/strict_json.hpp"

namespace corral {

// Each object element of the array at `array_pointer` (a JSON pointer of
// object members, "/result/tools") is built with its member `keep` only.
struct FastOutline {
    std::string_view array_pointer;
    std::string_view keep;
};

// `text` into `out` when it is JSON the strict reading accepts, at most
// `max_depth` containers deep; false when this reader does not vouch for it
// (then only the reference reader may judge it, and `out` means nothing).
// With `select`, an object's members outside it are checked, not built
// (base/strict_json.hpp, read_json_selected).
bool read_strict_json_fast(std::string_view text, std::size_t max_depth, const FastOutline* outline,
                           const JsonSelection* select, nlohmann::json& out);

}  // namespace corral
