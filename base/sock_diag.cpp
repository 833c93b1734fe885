#include "base/sock_diag.hpp"

#include <linux/netlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "base/sys_error.hpp"

namespace corral {

Fd open_sock_diag_socket() {
    Fd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_SOCK_DIAG));
    if (!fd.valid()) throw SysError("socket(NETLINK_SOCK_DIAG)", errno);
    sockaddr_nl self{};
    self.nl_family = AF_NETLINK;  // nl_pid 0: the kernel picks this socket's port id
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&self), sizeof self) != 0)
        throw SysError("bind(NETLINK_SOCK_DIAG)", errno);
    return fd;
}

bool netlink_messages_fit(const void* answer, std::size_t len) {
    const auto* p = static_cast<const char*>(answer);
    while (len >= sizeof(nlmsghdr)) {
        nlmsghdr h;
        std::memcpy(&h, p, sizeof h);
        if (h.nlmsg_len < sizeof(nlmsghdr) || h.nlmsg_len > len) return false;
        std::size_t step = NLMSG_ALIGN(h.nlmsg_len);
        if (step >= len) break;
        p += step;
        len -= step;
    }
    return true;
}

}  // namespace corral
