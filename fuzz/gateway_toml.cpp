// Fuzz target: a stand-alone gateway.toml (`corral gateway --config`), from
// its text through the same parse and checks as load_gateway_config. Bad
// input must be a ConfigError with at least one line, nothing else.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "config/gateway_config.hpp"

using namespace corral::config;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        GatewayConfig cfg = parse_gateway_config(text, "gateway.toml");
        if (cfg.gateway.listen_unix.empty() && cfg.gateway.listen_tcp.empty()) std::abort();
    } catch (const ConfigError& e) {
        if (std::string_view(e.what()).empty()) std::abort();
    }
    return 0;
}
