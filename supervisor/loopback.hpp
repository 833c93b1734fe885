// supervisor/loopback.hpp — the sandbox's only network interface, over rtnetlink (libmnl).
//
// These run inside the sandbox's fresh network namespace, in corral's init
// between clone3 and the command's execve: they never throw and never log;
// they return 0 / a count, or -errno, and the caller reports the failed step.
#pragma once

#include <net/if.h>

namespace corral::supervisor {

struct LinkInfo {
    int index = 0;
    unsigned flags = 0;          // IFF_* as the kernel reports them
    char name[IF_NAMESIZE] = {};
};

// Sets IFF_UP on `lo` (RTM_NEWLINK, acknowledged). A new network namespace
// starts with lo down, so 127.0.0.1 is unreachable until this runs.
int bring_up_loopback() noexcept;

// Lists the namespace's links (RTM_GETLINK dump) into out[0..max); returns how
// many exist (may exceed max) or -errno.
int list_links(LinkInfo* out, int max) noexcept;

// Transparent capture (docs/capture.md): `local` routes on lo for the
// synthetic ranges (198.18.0.0/15; with `ipv6`, fd63:6f72:7261:6c00::/64),
// RTM_NEWROUTE in the local table, so every address of them is the box's own
// and a connect to one lands on a listener corral holds; and a second IPv4
// address on lo, 127.0.0.2/32, without which glibc's getaddrinfo with
// AI_ADDRCONFIG (node's default) returns no address at all. Call after
// bring_up_loopback (the kernel refuses a route on a down device). With
// `ipv6` and a namespace without IPv6 (-EAFNOSUPPORT, -EACCES from a
// disabled stack) the v6 route is skipped: 1 is returned, else 0 or -errno.
int add_capture_routes(bool ipv6) noexcept;

// 0 iff the namespace has exactly one link, named lo, and it is up, and its
// routes (every table, IPv4 and IPv6) lead nowhere but lo: each is on lo and
// of type local (inside 127.0.0.0/8 or ::1, or, with `capture`, exactly a
// capture range) or broadcast (127.255.255.255). -EEXIST if another link
// exists, -ENETDOWN if lo is down, -EADDRNOTAVAIL for any other route, or -errno.
int verify_only_loopback(bool capture = false) noexcept;

}  // namespace corral::supervisor
