#include "supervisor/fd_passing.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace corral::supervisor {

int send_with_fds(int sock, const void* data, std::size_t len, const int* fds, int nfds) noexcept {
    if (nfds < 0 || nfds > kMaxPassedFds) return -EINVAL;
    iovec iov{const_cast<void*>(data), len};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (nfds > 0) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * static_cast<std::size_t>(nfds));
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * static_cast<std::size_t>(nfds));
        std::memcpy(CMSG_DATA(c), fds, sizeof(int) * static_cast<std::size_t>(nfds));
    }
    while (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0)
        if (errno != EINTR) return -errno;
    return 0;
}

ssize_t receive_with_fds(int sock, void* buf, std::size_t size, int* fds, int max_fds, int& nfds) noexcept {
    iovec iov{buf, size};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    nfds = 0;
    ssize_t n;
    while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
    }
    if (n < 0) return -errno;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
            int fd = -1;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (nfds < max_fds) fds[nfds++] = fd;
            else close(fd);
        }
    }
    if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) return -EMSGSIZE;
    return n;
}

}  // namespace corral::supervisor
