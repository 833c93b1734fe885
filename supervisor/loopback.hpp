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

// 0 iff the namespace has exactly one link, named lo, and it is up;
// -EEXIST if another link exists, -ENETDOWN if lo is down, or -errno.
int verify_only_loopback() noexcept;

}  // namespace corral::supervisor
