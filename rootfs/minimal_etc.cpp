#include "rootfs/minimal_etc.hpp"

#include "names/box_hosts.hpp"

namespace corral::rootfs {

std::string agent_home(const RootfsSpec& spec) { return "/home/" + spec.agent_name; }

std::string agent_passwd_line(const RootfsSpec& spec) {
    return spec.agent_name + ":x:" + std::to_string(spec.agent_uid) + ":" +
           std::to_string(spec.agent_gid) + ":corral agent:" + agent_home(spec) + ":/bin/sh\n";
}

std::string agent_group_line(const RootfsSpec& spec) {
    return spec.agent_name + ":x:" + std::to_string(spec.agent_gid) + ":\n";
}

std::string passwd_file(const RootfsSpec& spec) {
    return "root:x:0:0:root:/root:/bin/sh\n" + agent_passwd_line(spec) +
           "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
}

std::string group_file(const RootfsSpec& spec) {
    return "root:x:0:\n" + agent_group_line(spec) + "nogroup:x:65534:\n";
}

std::string hosts_file(const RootfsSpec& spec) { return names::box_hosts_text(spec.hostname); }

std::string resolv_conf() {
    // Only lo exists in the box. With transparent capture (docs/capture.md)
    // corral's DNS stub answers on 127.0.0.1:53 from outside the box: a
    // granted name gets a synthetic address, any other NXDOMAIN at once.
    // Without it nothing listens on port 53, so a lookup is refused
    // immediately instead of timing out. Real names are resolved on the host
    // side by corral's gateway either way.
    return "# corral: 127.0.0.1:53 is corral's stub (granted names only), or nothing; the gateway resolves names.\n"
           "nameserver 127.0.0.1\n"
           "options timeout:1 attempts:1\n";
}

std::string nsswitch_conf() {
    return "passwd:    files\n"
           "group:     files\n"
           "shadow:    files\n"
           "hosts:     files dns\n"
           "networks:  files\n"
           "protocols: files\n"
           "services:  files\n"
           "ethers:    files\n"
           "rpc:       files\n"
           "netgroup:  files\n";
}

std::string hostname_file(const RootfsSpec& spec) { return spec.hostname + "\n"; }

}  // namespace corral::rootfs
