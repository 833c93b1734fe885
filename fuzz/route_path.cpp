// Fuzz target: request targets inside an inject tunnel. canonical_route_path
// must never crash, and a path it accepts must be one normalize_route_path
// leaves unchanged (its contract: the path the routes are checked against is
// byte for byte the path the upstream receives).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gateway/grants.hpp"

using namespace corral::gateway;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view target(reinterpret_cast<const char*>(data), size);
    std::string_view why;
    auto canonical = canonical_route_path(target, &why);
    if (canonical.has_value() == !why.empty()) std::abort();  // a refusal always says why
    std::string reason;
    auto normal = normalize_route_path(target, &reason);
    if (canonical) {
        // The query is cut by both; what is left must come out unchanged.
        if (!normal || *normal != *canonical) std::abort();
        if (target.substr(0, canonical->size()) != *canonical) std::abort();
    }
    return 0;
}
