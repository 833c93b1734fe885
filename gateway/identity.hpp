// gateway/identity.hpp — who sent a connection: a worker name and a run id.
//
// The bridge (or the TCP listener's fixed `tcp_identity`) vouches for it; the
// gateway never takes an identity from anything the client sends.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace corral::gateway {

struct Identity {
    std::string worker;
    std::string run_id;
    // "worker/run" — the form used in the ledger, counters and grant scopes.
    std::string str() const { return worker + "/" + run_id; }
};

// Parses "worker/run". Both parts non-empty, made of [A-Za-z0-9._-] only, with
// exactly one '/'. nullopt otherwise (the config layer reports where).
std::optional<Identity> parse_identity(std::string_view text);

}  // namespace corral::gateway
