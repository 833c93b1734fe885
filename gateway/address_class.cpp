#include "gateway/address_class.hpp"

#include <array>
#include <cstdint>

namespace corral::gateway {
namespace {

using AC = AddressClass;

struct V4Range {
    std::uint32_t base;
    int bits;
    AC cls;
};

constexpr std::uint32_t v4(unsigned a, unsigned b, unsigned c, unsigned d) {
    return (a << 24) | (b << 16) | (c << 8) | d;
}

// IANA IPv4 Special-Purpose Address Registry, plus multicast and the reserved
// 240/4 block. The most specific entry is listed first where blocks nest.
constexpr V4Range v4_table[] = {
    {v4(255, 255, 255, 255), 32, AC::broadcast},
    {v4(0, 0, 0, 0), 8, AC::unspecified},
    {v4(10, 0, 0, 0), 8, AC::private_use},
    {v4(100, 64, 0, 0), 10, AC::shared_cgnat},
    {v4(127, 0, 0, 0), 8, AC::loopback},
    {v4(169, 254, 0, 0), 16, AC::link_local},
    {v4(172, 16, 0, 0), 12, AC::private_use},
    {v4(192, 0, 0, 0), 24, AC::ietf_protocol},
    {v4(192, 0, 2, 0), 24, AC::documentation},
    {v4(192, 88, 99, 0), 24, AC::reserved},  // deprecated 6to4 relay anycast
    {v4(192, 168, 0, 0), 16, AC::private_use},
    {v4(198, 18, 0, 0), 15, AC::benchmarking},
    {v4(198, 51, 100, 0), 24, AC::documentation},
    {v4(203, 0, 113, 0), 24, AC::documentation},
    {v4(224, 0, 0, 0), 4, AC::multicast},
    {v4(240, 0, 0, 0), 4, AC::reserved},
};

bool in_v4(std::uint32_t a, std::uint32_t base, int bits) {
    std::uint32_t mask = bits == 0 ? 0 : ~std::uint32_t{0} << (32 - bits);
    return (a & mask) == base;
}

AC classify_v4(std::uint32_t a) {
    for (const auto& r : v4_table)
        if (in_v4(a, r.base, r.bits)) return r.cls;
    return AC::public_unicast;
}

using Bytes = std::array<unsigned char, 16>;

struct V6Range {
    Bytes base;
    int bits;
    AC cls;
};

bool in_v6(const Bytes& a, const Bytes& base, int bits) {
    for (int i = 0; i < 16 && bits > 0; ++i, bits -= 8) {
        unsigned char mask = bits >= 8 ? 0xff : static_cast<unsigned char>(0xff << (8 - bits));
        if ((a[i] & mask) != (base[i] & mask)) return false;
    }
    return true;
}

constexpr Bytes b6(std::initializer_list<unsigned> groups) {
    Bytes b{};
    int i = 0;
    for (unsigned g : groups) {
        b[i++] = static_cast<unsigned char>(g >> 8);
        b[i++] = static_cast<unsigned char>(g & 0xff);
    }
    return b;
}

// IANA IPv6 Special-Purpose Address Registry (most specific first where blocks
// nest), then the blocks that embed IPv4, then multicast and unique-local.
const V6Range v6_table[] = {
    {b6({0, 0, 0, 0, 0, 0xffff}), 96, AC::ipv4_mapped},
    {b6({0, 0, 0, 0, 0xffff, 0}), 96, AC::reserved},  // ::ffff:0:0:0/96 IPv4-translated (SIIT)
    {b6({0x64, 0xff9b}), 96, AC::nat64},
    {b6({0x64, 0xff9b, 1}), 48, AC::nat64},
    {b6({0x100}), 64, AC::reserved},                  // discard-only
    {b6({0x2001, 0}), 32, AC::teredo},
    {b6({0x2001, 2, 0}), 48, AC::benchmarking},
    {b6({0x2001, 0xdb8}), 32, AC::documentation},
    {b6({0x2001}), 23, AC::ietf_protocol},
    {b6({0x2002}), 16, AC::sixto4},
    {b6({0x3fff}), 20, AC::documentation},
    {b6({0x5f00}), 16, AC::reserved},                 // SRv6 SIDs
    {b6({0xfc00}), 7, AC::unique_local},
    {b6({0xfe80}), 10, AC::link_local},
    {b6({0xfec0}), 10, AC::reserved},                 // deprecated site-local
};

AC classify_v6(const boost::asio::ip::address_v6& addr) {
    Bytes a = addr.to_bytes();
    bool first_96_zero = true;
    for (int i = 0; i < 12; ++i)
        if (a[i] != 0) first_96_zero = false;
    if (first_96_zero) {
        if (addr.is_unspecified()) return AC::unspecified;
        if (addr.is_loopback()) return AC::loopback;
        return AC::ipv4_compatible;  // ::a.b.c.d (deprecated; never dialled)
    }
    if (a[0] == 0xff) return AC::multicast;
    for (const auto& r : v6_table)
        if (in_v6(a, r.base, r.bits)) return r.cls;
    // Only 2000::/3 is allocated as global unicast; everything else is reserved by the IETF.
    if ((a[0] & 0xe0) != 0x20) return AC::reserved;
    return AC::public_unicast;
}

}  // namespace

AddressClass classify_address(const boost::asio::ip::address& a) {
    if (a.is_v4()) return classify_v4(a.to_v4().to_uint());
    return classify_v6(a.to_v6());
}

std::string_view to_string(AddressClass c) {
    switch (c) {
        case AC::public_unicast: return "public_unicast";
        case AC::unspecified: return "unspecified";
        case AC::loopback: return "loopback";
        case AC::private_use: return "private_use";
        case AC::shared_cgnat: return "shared_cgnat";
        case AC::link_local: return "link_local";
        case AC::ietf_protocol: return "ietf_protocol";
        case AC::documentation: return "documentation";
        case AC::benchmarking: return "benchmarking";
        case AC::multicast: return "multicast";
        case AC::reserved: return "reserved";
        case AC::broadcast: return "broadcast";
        case AC::unique_local: return "unique_local";
        case AC::ipv4_mapped: return "ipv4_mapped";
        case AC::ipv4_compatible: return "ipv4_compatible";
        case AC::nat64: return "nat64";
        case AC::sixto4: return "sixto4";
        case AC::teredo: return "teredo";
        case AC::gateway_self: return "gateway_self";
    }
    return "unknown";
}

}  // namespace corral::gateway
