// journal/canonical.hpp — the one byte form a journal record is signed and
// hashed in (docs/journal.md "Canonical JSON").
//
//   - objects: keys sorted bytewise on their UTF-8 bytes (unsigned), no
//     duplicates, no whitespace anywhere: {"a":1,"b":[true,null]}
//   - numbers: integers only, in decimal without leading zeros, "+" or
//     exponent ("-0" is 0); a float anywhere is refused, so a value never
//     depends on how a reader prints doubles
//   - strings: UTF-8 as is, except '"' -> \" , '\' -> \\ , \b \f \n \r \t,
//     the other bytes below 0x20 as \u00xx (lowercase hex); '/' and DEL are
//     not escaped; invalid UTF-8 is refused
//
// nlohmann/json's object_t is a std::map<std::string, ...>, whose order is
// std::string's compare (char_traits<char>: unsigned bytes), and dump() with
// no indent and ensure_ascii off writes exactly the forms above;
// tests/journal/test_canonical.cpp pins each rule against that library.
#pragma once

#include <string>
#include <string_view>

#include "base/checked.hpp"

#include <nlohmann/json.hpp>

namespace corral::journal {

// The canonical bytes of `value`. Throws UsageError naming the JSON path of a
// float or of a string that is not UTF-8.
std::string canonical_json(const nlohmann::json& value);

// What `text` holds, only if `text` is exactly the canonical form of it;
// otherwise the reason. The check a verifier runs before it trusts any byte
// of a line.
Checked<nlohmann::json> parse_canonical(std::string_view text);

}  // namespace corral::journal
