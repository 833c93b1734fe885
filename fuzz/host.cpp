// Fuzz target: host names and authorities as clients write them (CONNECT
// authority, Host header, SNI, absolute-form URL host) and as grants write
// them: normalize_host, split_authority and parse_host_pattern must never
// crash, what they accept must be a fixed point (a normalised name
// normalises to itself), or a grant lookup on it could differ from the one
// the check made, and a grant written as a name must match that name.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "names/host.hpp"

using namespace corral::names;

namespace {

void require(bool ok) {
    if (!ok) std::abort();
}

void check_fixed_point(const HostName& h) {
    auto again = normalize_host(h.text());
    require(again.host && *again.host == h);
    require(h.text().find_first_not_of(normalised_host_chars) == std::string_view::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view in(reinterpret_cast<const char*>(data), size);
    auto h = normalize_host(in);
    require(h.host.has_value() == h.reason.empty());
    if (h.host) check_fixed_point(*h.host);
    for (auto a : {split_authority(in), split_authority(in, 443), split_authority(in, std::nullopt, PortZero::allowed)}) {
        require(a.authority.has_value() == a.reason.empty());
        if (!a.authority) continue;
        check_fixed_point(a.authority->host);
    }
    if (auto a = split_authority(in); a.authority) require(a.authority->port != 0);
    // A grant's host: an exact pattern is exactly the normalised name and
    // matches it (and only a name that normalises to it); a wildcard never
    // matches its apex or an address, and its text parses back to itself.
    auto p = parse_host_pattern(in);
    if (p) {
        auto again = parse_host_pattern(p->text());
        require(again && *again == *p);
        if (!p->is_wildcard()) {
            require(h.host && p->text() == h.host->text() && p->match_score(*h.host) != 0);
        } else {
            auto apex = normalize_host(std::string_view(p->text()).substr(2));
            require(apex.host && !apex.host->is_ip_literal() && p->match_score(*apex.host) == 0);
        }
    } else {
        require(!h.host);  // every name a request may use can be granted
    }
    return 0;
}
