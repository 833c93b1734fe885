// names/box_hosts.hpp — the names a box resolves to its own loopback, in one
// table: rootfs/ writes it as the box's /etc/hosts, the capture DNS stub
// (capture/resolver.hpp) answers the same names with the same addresses, so
// a program that skips /etc/hosts (its own resolver library) sees no other
// answer than one that reads it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace corral::names {

struct BoxHostsLine {
    std::string address;              // canonical IP literal text ("127.0.0.1", "::1")
    std::vector<std::string> names;   // as written in /etc/hosts, first the canonical one
};

// localhost (v4 and v6, with Debian's ip6-localhost and ip6-loopback) and,
// when `hostname` is not empty, the box's own name on 127.0.1.1 (hostname -f,
// and runtimes that look their host up at start, resolve it without DNS).
std::vector<BoxHostsLine> box_hosts(std::string_view hostname);

// The table in /etc/hosts format: "ADDRESS\tNAME NAME...\n" per line.
std::string box_hosts_text(std::string_view hostname);

}  // namespace corral::names
