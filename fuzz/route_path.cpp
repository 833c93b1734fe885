// Fuzz target: request targets inside an inject tunnel. canonical_route_path
// must never crash, and a path it accepts must be one normalize_route_path
// leaves unchanged (its contract: the path the routes are checked against is
// byte for byte the path the upstream receives). Each accepted path is then
// classified (classify_model_route): metered only as an exact metered route
// with its API, and a path whose ASCII-lower-case, trailing-'/'-less form is
// a metered route is metered or non-canonical, never `other` (the budgets'
// fail-closed promise, docs/budgets.md).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "base/parse.hpp"
#include "gateway/grants.hpp"
#include "gateway/metering/model_routes.hpp"

using namespace corral::gateway;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view target(reinterpret_cast<const char*>(data), size);
    auto checked = canonical_route_path(target);
    if (const auto* refused = std::get_if<Refusal>(&checked);
        refused && (refused->reason != reason::non_canonical_path || refused->detail.empty()))
        std::abort();  // a refusal always says why
    const auto* canonical_path = std::get_if<std::string_view>(&checked);
    auto canonical = canonical_path ? std::optional<std::string_view>(*canonical_path) : std::nullopt;
    auto normal = normalize_route_path(target);
    if (canonical) {
        // The query is cut by both; what is left must come out unchanged.
        if (!normal || *normal != *canonical) std::abort();
        if (target.substr(0, canonical->size()) != *canonical) std::abort();
        using namespace corral::gateway::metering;
        for (bool websocket : {false, true}) {
            const RouteVerdict v = classify_model_route(websocket ? "GET" : "POST", *canonical, websocket);
            const ModelApi exact = model_api_for_path(*canonical);
            if ((v.cls == RouteClass::metered) != (exact != ModelApi::none && (!websocket || exact == ModelApi::openai_responses)))
                std::abort();
            if (v.cls == RouteClass::metered && v.api != exact) std::abort();
            std::string fold = corral::ascii_lower(*canonical);
            while (fold.size() > 1 && fold.back() == '/') fold.pop_back();
            if (model_api_for_path(fold) != ModelApi::none && v.cls == RouteClass::other) std::abort();
        }
    }
    return 0;
}
