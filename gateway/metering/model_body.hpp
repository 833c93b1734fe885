// gateway/metering/model_body.hpp — a model request's body, parsed once.
//
// Two readers decide on it: the grant's model policy (model_policy.hpp) and
// the facts a budget reserves on (request_facts.hpp). Both read this one
// value, so a body is parsed once per request and both decide on the same
// document (a parser that two callers ran separately could be given two
// different views of one body by a later change to either).
//
// Read strictly (base/strict_json.hpp): a body in which two readers could
// see different requests is marked `ambiguous` and not given as an object:
// a key twice in one object or two keys differing only in case, at any
// level (an upstream that keeps the first duplicate, or matches keys
// without case, would act on a value the checks never saw), and an upper
// case letter in a key of the request's own structure (the top level, each
// tools[], messages[] and input[] entry and each content block in them):
// every key the APIs define there is lower case, so `MODEL` or `Tools` can
// only be meant for a reader that ignores case.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/strict_json.hpp"

namespace corral::gateway::metering {

// Bodies above this are not parsed: the policy refuses them as unreadable
// when it reads bodies, the facts are "unknown" (the gateway's
// max_body_bytes, 1 MiB by default, bounds them long before).
inline constexpr std::size_t kMaxModelBodyBytes = 8 * 1024 * 1024;

struct ModelBody {
    std::size_t bytes = 0;                  // the body's size, parsed or not
    bool too_large = false;                 // over the bound it was parsed under: not parsed
    std::optional<nlohmann::json> object;   // the body as a JSON object; nullopt when it is not one
    std::optional<JsonProblem> ambiguous;   // duplicate_key or case_variant_key: object is nullopt
};

// Parses `body` once if it is at most `max_bytes`.
ModelBody parse_model_body(std::string_view body, std::size_t max_bytes = kMaxModelBodyBytes);

}  // namespace corral::gateway::metering
