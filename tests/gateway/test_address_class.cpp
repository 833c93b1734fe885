#include <doctest/doctest.h>

#include "gateway/address_class.hpp"

using namespace corral::gateway;
using boost::asio::ip::make_address;

namespace {

AddressClass cls(const char* text) { return classify_address(make_address(text)); }

struct Edge {
    const char* first;
    const char* last;
    AddressClass cls;
    const char* before;  // address just below the range (or nullptr)
    const char* after;   // address just above it (or nullptr)
};

void check_range(const Edge& e) {
    CAPTURE(e.first);
    CHECK(to_string(cls(e.first)) == to_string(e.cls));
    CHECK(to_string(cls(e.last)) == to_string(e.cls));
    if (e.before) {
        CAPTURE(e.before);
        CHECK(cls(e.before) != e.cls);
    }
    if (e.after) {
        CAPTURE(e.after);
        CHECK(cls(e.after) != e.cls);
    }
}

}  // namespace

TEST_CASE("every IPv4 special-purpose range, first and last address, and both neighbours") {
    using AC = AddressClass;
    const Edge table[] = {
        {"0.0.0.0", "0.255.255.255", AC::unspecified, nullptr, "1.0.0.0"},
        {"10.0.0.0", "10.255.255.255", AC::private_use, "9.255.255.255", "11.0.0.0"},
        {"100.64.0.0", "100.127.255.255", AC::shared_cgnat, "100.63.255.255", "100.128.0.0"},
        {"127.0.0.0", "127.255.255.255", AC::loopback, "126.255.255.255", "128.0.0.0"},
        {"169.254.0.0", "169.254.255.255", AC::link_local, "169.253.255.255", "169.255.0.0"},
        {"172.16.0.0", "172.31.255.255", AC::private_use, "172.15.255.255", "172.32.0.0"},
        {"192.0.0.0", "192.0.0.255", AC::ietf_protocol, "191.255.255.255", "192.0.1.0"},
        {"192.0.2.0", "192.0.2.255", AC::documentation, "192.0.1.255", "192.0.3.0"},
        {"192.88.99.0", "192.88.99.255", AC::reserved, "192.88.98.255", "192.88.100.0"},
        {"192.168.0.0", "192.168.255.255", AC::private_use, "192.167.255.255", "192.169.0.0"},
        {"198.18.0.0", "198.19.255.255", AC::benchmarking, "198.17.255.255", "198.20.0.0"},
        {"198.51.100.0", "198.51.100.255", AC::documentation, "198.51.99.255", "198.51.101.0"},
        {"203.0.113.0", "203.0.113.255", AC::documentation, "203.0.112.255", "203.0.114.0"},
        {"224.0.0.0", "239.255.255.255", AC::multicast, "223.255.255.255", nullptr},
        {"240.0.0.0", "255.255.255.254", AC::reserved, "239.255.255.255", "255.255.255.255"},
        {"255.255.255.255", "255.255.255.255", AC::broadcast, "255.255.255.254", nullptr},
    };
    for (const auto& e : table) check_range(e);
    // The neighbours that are outside every range are plain public unicast.
    for (const char* pub : {"1.0.0.0", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0",
                            "126.255.255.255", "128.0.0.0", "169.253.255.255", "169.255.0.0", "172.15.255.255",
                            "172.32.0.0", "191.255.255.255", "192.0.1.0", "192.0.3.0", "192.167.255.255",
                            "192.169.0.0", "198.17.255.255", "198.20.0.0", "198.51.99.255", "198.51.101.0",
                            "203.0.112.255", "203.0.114.0", "223.255.255.255", "8.8.8.8", "1.1.1.1"}) {
        CAPTURE(pub);
        CHECK(cls(pub) == AC::public_unicast);
        CHECK_FALSE(is_special_purpose(cls(pub)));
    }
    CHECK(cls("169.254.169.254") == AC::link_local);  // cloud metadata
}

TEST_CASE("every IPv6 special-purpose range, edges and neighbours") {
    using AC = AddressClass;
    const Edge table[] = {
        {"::", "::", AC::unspecified, nullptr, "::1"},
        {"::1", "::1", AC::loopback, "::", "::2"},
        {"::2", "::ffff:ffff", AC::ipv4_compatible, "::1", "::1:0:0"},
        {"::ffff:0:0", "::ffff:ffff:ffff", AC::ipv4_mapped, "::fffe:ffff:ffff", "::1:0:0:0"},
        {"::ffff:0:0:0", "::ffff:0:ffff:ffff", AC::reserved, nullptr, nullptr},
        {"64:ff9b::", "64:ff9b::ffff:ffff", AC::nat64, "64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", "64:ff9b::1:0:0"},
        {"64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", AC::nat64, "64:ff9b:0:ffff:ffff:ffff:ffff:ffff",
         "64:ff9b:2::"},
        {"100::", "100::ffff:ffff:ffff:ffff", AC::reserved, nullptr, nullptr},
        {"2001::", "2001:0:ffff:ffff:ffff:ffff:ffff:ffff", AC::teredo, "2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
         "2001:1::"},
        {"2001:1::", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", AC::ietf_protocol, nullptr, "2001:200::"},
        {"2001:2::", "2001:2:0:ffff:ffff:ffff:ffff:ffff", AC::benchmarking, "2001:1:ffff:ffff:ffff:ffff:ffff:ffff",
         "2001:2:1::"},
        {"2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", AC::documentation,
         "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db9::"},
        {"2002::", "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", AC::sixto4, "2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
         "2003::"},
        {"3fff::", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", AC::documentation, "3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
         "3fff:1000::"},
        {"fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", AC::unique_local, nullptr, nullptr},
        {"fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", AC::link_local, "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
         "fec0::"},
        {"ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", AC::multicast, "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
         nullptr},
    };
    for (const auto& e : table) check_range(e);
    for (const char* pub : {"2001:200::", "2001:4860:4860::8888", "2003::", "2606:4700::1111", "2001:db9::",
                            "3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff:1000::", "2000::1"}) {
        CAPTURE(pub);
        CHECK(cls(pub) == AC::public_unicast);
    }
    CHECK(cls("fd00:ec2::254") == AC::unique_local);  // AWS metadata over IPv6
    // Outside 2000::/3 nothing is allocated as global unicast.
    for (const char* res : {"4000::1", "1000::", "e000::1", "fec0::1", "5f00::1", "8000::"}) {
        CAPTURE(res);
        CHECK(cls(res) == AC::reserved);
    }
}

TEST_CASE("IPv6 forms embedding an IPv4 address are special even when the embedded address is public") {
    using AC = AddressClass;
    CHECK(cls("::ffff:8.8.8.8") == AC::ipv4_mapped);
    CHECK(cls("::ffff:127.0.0.1") == AC::ipv4_mapped);
    CHECK(cls("::8.8.8.8") == AC::ipv4_compatible);
    CHECK(cls("::127.0.0.1") == AC::ipv4_compatible);
    CHECK(cls("64:ff9b::8.8.8.8") == AC::nat64);
    CHECK(cls("64:ff9b::a9fe:a9fe") == AC::nat64);   // 169.254.169.254 through NAT64
    CHECK(cls("64:ff9b:1::808:808") == AC::nat64);
    CHECK(cls("2002:0808:0808::1") == AC::sixto4);   // 6to4 of 8.8.8.8
    CHECK(cls("2002:7f00:1::") == AC::sixto4);       // 6to4 of 127.0.0.1
    CHECK(cls("2001:0:4136:e378:8000:63bf:3fff:fdd2") == AC::teredo);
    for (const char* s : {"::ffff:8.8.8.8", "::8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1", "2001::1"})
        CHECK(is_special_purpose(cls(s)));
}

TEST_CASE("to_string names every class") {
    for (int i = 0; i <= static_cast<int>(AddressClass::gateway_self); ++i) {
        auto name = to_string(static_cast<AddressClass>(i));
        CHECK_FALSE(name.empty());
        CHECK(name != "unknown");
    }
    CHECK(to_string(AddressClass::shared_cgnat) == "shared_cgnat");
}
