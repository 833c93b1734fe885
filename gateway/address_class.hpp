// gateway/address_class.hpp — which addresses the gateway may dial.
//
// The table follows the IANA IPv4 and IPv6 special-purpose address registries
// (see docs/gateway.md), not an "is global" library call. Anything that is not
// plain global unicast is special-purpose and refused unless a grant sets
// allow_private. IPv6 forms that embed an IPv4 address (mapped, compatible,
// NAT64, 6to4, Teredo) are special whatever the embedded address is: the
// gateway dials the vetted address itself and never needs these forms.
#pragma once

#include <string_view>

#include <boost/asio/ip/address.hpp>

namespace corral::gateway {

enum class AddressClass {
    public_unicast,
    unspecified,      // 0.0.0.0/8 ("this network"), ::/128
    loopback,         // 127/8, ::1
    private_use,      // 10/8, 172.16/12, 192.168/16
    shared_cgnat,     // 100.64/10
    link_local,       // 169.254/16 (incl. cloud metadata), fe80::/10
    ietf_protocol,    // 192.0.0/24, 2001::/23 outside Teredo/benchmarking/documentation
    documentation,    // 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20
    benchmarking,     // 198.18/15, 2001:2::/48
    multicast,        // 224/4, ff00::/8
    reserved,         // 240/4 (minus broadcast), 192.88.99/24, 100::/64, fec0::/10, ::ffff:0:0:0/96,
                      // 5f00::/16, and every IPv6 address outside 2000::/3 not listed elsewhere
    broadcast,        // 255.255.255.255
    unique_local,     // fc00::/7 (incl. fd00:ec2::254)
    ipv4_mapped,      // ::ffff:0:0/96
    ipv4_compatible,  // ::a.b.c.d (::/96 except :: and ::1)
    nat64,            // 64:ff9b::/96, 64:ff9b:1::/48
    sixto4,           // 2002::/16
    teredo,           // 2001::/32
    gateway_self,     // never returned by classify_address; vet_addresses reports the gateway's own addresses with it
};

// Pure function of the address; total (every address gets a class).
AddressClass classify_address(const boost::asio::ip::address& a);

// "public_unicast", "loopback", ... (the enumerator's name).
std::string_view to_string(AddressClass c);

// Everything except public_unicast.
inline bool is_special_purpose(AddressClass c) { return c != AddressClass::public_unicast; }

}  // namespace corral::gateway
