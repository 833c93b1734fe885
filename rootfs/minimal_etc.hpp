// rootfs/minimal_etc.hpp — the /etc that host mode generates instead of showing the host's.
//
// The sandbox sees none of the host's accounts, keys or configuration: only
// what these functions write (plus the CA trust store, the alternatives links
// and ld.so.cache, bound read-only; see docs/rootfs.md). Each returns the
// whole file's content.
#pragma once

#include <string>

#include "rootfs/mount_plan.hpp"

namespace corral::rootfs {

// "NAME:x:UID:GID:corral agent:/home/NAME:/bin/sh\n" — also appended to an image's passwd.
std::string agent_passwd_line(const RootfsSpec& spec);
// "NAME:x:GID:\n"
std::string agent_group_line(const RootfsSpec& spec);
// The agent's home directory in the box: /home/<agent_name>.
std::string agent_home(const RootfsSpec& spec);

std::string passwd_file(const RootfsSpec& spec);   // root, the agent, nobody
std::string group_file(const RootfsSpec& spec);    // root, the agent's group, nogroup
std::string hosts_file(const RootfsSpec& spec);    // localhost (v4 and v6) and the sandbox's hostname
std::string resolv_conf();                          // no DNS inside the box: a nameserver that refuses at once
std::string nsswitch_conf();                        // files everywhere, dns for hosts
std::string hostname_file(const RootfsSpec& spec);

}  // namespace corral::rootfs
