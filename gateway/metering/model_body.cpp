// gateway/metering/model_body.cpp — see model_body.hpp.
#include "gateway/metering/model_body.hpp"

namespace corral::gateway::metering {

ModelBody parse_model_body(std::string_view body, std::size_t max_bytes) {
    ModelBody b;
    b.bytes = body.size();
    if (body.size() > max_bytes) {
        b.too_large = true;
        return b;
    }
    nlohmann::json d = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (!d.is_discarded() && d.is_object()) b.object = std::move(d);
    return b;
}

}  // namespace corral::gateway::metering
