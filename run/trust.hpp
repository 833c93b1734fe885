// run/trust.hpp — what the box trusts and where it sends its traffic: the
// proxy environment (every tool through the bridge) and, when the gateway
// speaks TLS to the box with corral's CA, that CA in every trust store the
// box's rootfs has (in the overlay: the image or host stays untouched).
#pragma once

#include <string>

#include "run/resolve.hpp"

namespace corral::run {

// Where the box finds corral's CA: the full bundle (image's or host's roots
// plus corral's CA) for tools that replace the default store (SSL_CERT_FILE,
// CURL_CA_BUNDLE, ...), the CA alone for Node's "extra" certificates.
inline constexpr const char* kBundleInBox = "/etc/ssl/certs/ca-certificates.crt";
inline constexpr const char* kCaInBox = "/etc/corral/ca.crt";

// The trust files (`ca_pem` empty: none, the box keeps its own store) and
// the proxy environment for `plan`'s box; finish_plan (run/final_plan.hpp)
// puts them into the plan. Reads the image's CA bundles (bounded,
// non-blocking, inside the image) and, without any, the host's; writes nothing.
TrustFiles find_trust_files(const RunPlan& plan, const std::string& ca_pem);

// The whole file, or an empty string when it cannot be opened (a CA or
// bundle that is absent is the callers' ordinary case, not an error).
std::string read_optional_file(const std::string& path);

}  // namespace corral::run
