// names/identity.hpp — who a connection belongs to: a worker name, a run id,
// the "worker/run" identity they make, and the globs grants scope them with.
//
// The bridge (or the TCP listener's fixed `tcp_identity`) vouches for an
// identity; the gateway never takes one from anything the client sends.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/checked.hpp"

namespace corral::names {

struct Identity {
    std::string worker;
    std::string run_id;
    // Who in the box, for a session: the role ("agent", "service",
    // "verifier") whose UID owns the connecting socket, as the bridge found
    // it; "" for a run (one UID). Said on every ledger line; not part of
    // str(): grants, budgets and counts stay the session's.
    std::string role;
    // "worker/run" — the form used in the ledger, counters and grant scopes.
    std::string str() const { return worker + "/" + run_id; }
};

// One part of an identity: non-empty, [A-Za-z0-9._-] only.
bool is_identity_part(std::string_view s);

// Parses "worker/run": exactly one '/', both parts is_identity_part.
// nullopt otherwise (the config layer reports where).
std::optional<Identity> parse_identity(std::string_view text);
// What parse_identity accepts, as configuration errors say it.
inline constexpr std::string_view identity_allowed = "\"worker/run\" with each part of [A-Za-z0-9._-]";

// Worker names are directory names that also appear in identities
// ("worker/run") and ledger lines: 1–64 of [A-Za-z0-9._-], starting with a
// letter or digit. The reason when invalid.
Problem check_worker_name(std::string_view name);

// A grant's identity pattern: an fnmatch glob on the worker name when it has
// no '/' ("worker-a", "ci-*"), on "worker/run" when it has one; at most one
// '/', only identity characters and the glob characters *?[]!.
bool is_identity_pattern(std::string_view pattern);
inline constexpr std::string_view identity_pattern_allowed =
    "a glob on the worker name (\"worker-a\", \"ci-*\") or on \"worker/run\"";

// Whether `pattern` (is_identity_pattern) covers this identity.
bool identity_pattern_matches(std::string_view pattern, const Identity& id);

// Whether `pattern` can cover some run of `worker`: for a "worker/run" glob
// its worker part decides.
bool identity_pattern_may_match_worker(std::string_view pattern, std::string_view worker);

}  // namespace corral::names
