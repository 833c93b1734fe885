// base/strict_json.hpp — JSON read once, the strict way, for documents that
// corral checks and another program then acts on (a model request's body,
// an MCP message). Refused: a key twice in one object at any level, and two
// keys of one object that differ only in ASCII case ("model" and "MODEL"),
// since two readers of such a document can disagree on which value counts
// (corral checks one, an upstream that keeps the first duplicate or matches
// keys without case acts on the other). Size and nesting depth are bounded
// before and while parsing.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace corral {

struct StrictJsonLimits {
    std::size_t max_bytes = 4u << 20;  // the whole document
    std::size_t max_depth = 64;        // objects and arrays nested
};

enum class JsonProblemKind { malformed, duplicate_key, case_variant_key, too_deep, oversize };

struct JsonProblem {
    JsonProblemKind kind = JsonProblemKind::malformed;
    std::string key;     // duplicate_key, case_variant_key: the second key as sent
    std::string detail;  // one line: what and where (the key and its JSON pointer quoted, escaped, cut)
};

struct StrictJson {
    nlohmann::json value;
    std::optional<JsonProblem> problem;
    bool outlined = false;  // parse_strict_json_outline: the outline was applied
    bool ok() const { return !problem; }
};

// Read by RapidJSON's reader into nlohmann's tree; a document that reader
// does not vouch for is read again by the reference reader, whose value or
// refusal is the answer (strict_json_fast.cpp).
StrictJson parse_strict_json(std::string_view text, const StrictJsonLimits& limits = {});

// The same reading, the whole document checked, but each object element of
// the array at `array_pointer` (a JSON pointer of object members only:
// "/result/tools") built with its member `keep` alone: for a caller that
// takes those elements' text from the document and needs one member of
// each. `outlined` is false when the reference reader had to read the
// document: then the value is whole.
StrictJson parse_strict_json_outline(std::string_view text, std::string_view array_pointer, std::string_view keep,
                                     const StrictJsonLimits& limits = {});

// nlohmann's SAX parse with a builder that refuses the second key of a pair
// as it arrives, naming it and its JSON pointer: every refusal's words come
// from here. Exposed so that tests can read documents both ways.
StrictJson parse_strict_json_reference(std::string_view text, const StrictJsonLimits& limits = {});

// Which members of an object to build: each key with what to build of its
// value (`only` nullptr: all of it). A value that is not an object, and each
// element of an array, is built whole.
struct JsonSelection {
    struct Member {
        std::string_view key;
        const JsonSelection* only = nullptr;
    };
    std::vector<Member> members;
    const Member* find(std::string_view key) const;
};

// For a reader that needs a few members of a document it does not police
// (a provider's answer read for its usage): `text` read by the fast reader
// with only the selected members built. True when that reader vouches for
// the text (RapidJSON accepts it, no object has a key twice or two keys
// differing only in case, nesting at most 128, no lone surrogate escape):
// then `out` is what `select_members(nlohmann::json::parse(text), select)`
// would be. False: `out` means nothing, read the text another way.
bool read_json_selected(std::string_view text, const JsonSelection& select, nlohmann::json& out);

// `value` with only the selected members (the reference for read_json_selected).
nlohmann::json select_members(const nlohmann::json& value, const JsonSelection& select);

// `s` as a JSON string, ASCII only (every control and non-ASCII character
// escaped, invalid UTF-8 replaced), cut to `max` bytes of `s` with "...":
// safe for a terminal, a log line and a refusal sent back.
std::string json_quoted(std::string_view s, std::size_t max = 64);

}  // namespace corral
