// names/gateway_address.hpp — how a command names the `corral gateway`
// daemon it talks to: `--gateway unix:/ABSOLUTE/PATH` (corral run, budget,
// doctor, corral-oci). One rule for every front.
#pragma once

#include <string>
#include <string_view>

namespace corral::names {

// The socket path of `value` ("unix:/run/corral/gateway.sock" gives
// "/run/corral/gateway.sock"). Throws UsageError naming `option` for
// anything else: "--gateway: got "tcp:1", expected unix:/ABSOLUTE/PATH of a
// `corral gateway` socket".
std::string gateway_socket_path(std::string_view option, std::string_view value);

}  // namespace corral::names
