// Fuzz target: host names and authorities as clients write them (CONNECT
// authority, Host header, SNI, absolute-form URL host): normalize_host and
// split_authority must never crash, and what they accept must be a fixed
// point (a normalised name normalises to itself), or a grant lookup on it
// could differ from the one the check made.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gateway/host.hpp"

using namespace corral::gateway;

namespace {

void require(bool ok) {
    if (!ok) std::abort();
}

void check_fixed_point(const HostName& h) {
    auto again = normalize_host(h.text);
    require(again.host && again.host->text == h.text && again.host->is_ip_literal == h.is_ip_literal);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    auto h = normalize_host(in);
    require(h.host.has_value() == h.reason.empty());
    if (h.host) check_fixed_point(*h.host);
    for (auto a : {split_authority(in), split_authority(in, 443)}) {
        require(a.authority.has_value() == a.reason.empty());
        if (!a.authority) continue;
        require(a.authority->port != 0);
        check_fixed_point(a.authority->host);
    }
    return 0;
}
