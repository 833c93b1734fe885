// gateway/identity.hpp — who sent a connection: a worker name and a run id.
//
// The rule (what an identity may contain, "worker/run") is names/identity.hpp;
// the bridge (or the TCP listener's fixed `tcp_identity`) vouches for an
// identity, the gateway never takes one from anything the client sends.
#pragma once

#include "names/identity.hpp"

namespace corral::gateway {

using names::Identity;
using names::is_identity_part;
using names::parse_identity;

}  // namespace corral::gateway
