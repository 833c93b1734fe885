#include "supervisor/socket_sweep.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <stdexcept>
#include <vector>

#include "base/log.hpp"
#include "base/sock_diag.hpp"
#include "base/sys_error.hpp"

namespace corral::supervisor {

namespace {

// A dump answers in datagrams of up to a page or so each; 32 KiB holds any.
constexpr std::size_t kDumpBytes = 32768;
// The kernel makes a dump's next datagram while the reader reads; a dump
// that stops answering is an error, not a wait without end.
constexpr int kDumpWaitMs = 5000;

// A request is one header and one inet_diag_req_v2 or unix_diag_req.
constexpr std::size_t kRequestBytes = 128;
static_assert(MNL_NLMSG_HDRLEN + MNL_ALIGN(sizeof(inet_diag_req_v2)) <= kRequestBytes);
static_assert(MNL_NLMSG_HDRLEN + MNL_ALIGN(sizeof(unix_diag_req)) <= kRequestBytes);

struct Request {
    Request() = default;
    Request(const Request&) = delete;  // `header` points into this one's bytes
    Request& operator=(const Request&) = delete;
    alignas(nlmsghdr) char bytes[kRequestBytes] = {};
    nlmsghdr* header = mnl_nlmsg_put_header(bytes);
};

// The zeroed request body of type T after `r`'s header.
template <class T>
T* put_body(Request& r) {
    return static_cast<T*>(mnl_nlmsg_put_extra_header(r.header, sizeof(T)));
}

unsigned next_seq() {
    static std::atomic<unsigned> seq{1};
    return seq.fetch_add(1, std::memory_order_relaxed);
}

unsigned port_id_of(int diag_fd) {
    sockaddr_nl self{};
    socklen_t len = sizeof self;
    if (::getsockname(diag_fd, reinterpret_cast<sockaddr*>(&self), &len) != 0)
        throw SysError("getsockname(NETLINK_SOCK_DIAG)", errno);
    return self.nl_pid;
}

void send_to_kernel(int diag_fd, const nlmsghdr* nlh, const std::string& what) {
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(diag_fd, nlh, nlh->nlmsg_len, 0, reinterpret_cast<const sockaddr*>(&kernel), sizeof kernel) < 0)
        throw SysError("sock_diag", what, errno);
}

// One datagram of the kernel's answer, waiting a bounded time for it.
std::size_t receive(int diag_fd, char* buf, std::size_t size, const std::string& what) {
    for (;;) {
        ssize_t n = ::recv(diag_fd, buf, size, 0);
        if (n >= 0) {
            if (!netlink_messages_fit(buf, static_cast<std::size_t>(n))) throw SysError("sock_diag", what, EPROTO);
            return static_cast<std::size_t>(n);
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) throw SysError("sock_diag", what, errno);
        pollfd p{diag_fd, POLLIN, 0};
        int r = ::poll(&p, 1, kDumpWaitMs);
        if (r == 0) throw SysError("sock_diag", what + " (no answer within 5 s)", ETIMEDOUT);
        if (r < 0 && errno != EINTR) throw SysError("poll", "sock_diag " + what, errno);
    }
}

using OnSocket = std::function<void(const nlmsghdr*)>;

int call_on_socket(const nlmsghdr* nlh, void* data) {
    (*static_cast<const OnSocket*>(data))(nlh);
    return MNL_CB_OK;
}

// Sends the dump request `nlh` and calls `each` with every socket it lists.
void dump(int diag_fd, nlmsghdr* nlh, const std::string& what, const OnSocket& each) {
    const unsigned portid = port_id_of(diag_fd);
    nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    nlh->nlmsg_seq = next_seq();
    send_to_kernel(diag_fd, nlh, what);
    alignas(nlmsghdr) static thread_local char buf[kDumpBytes];
    for (;;) {
        std::size_t n = receive(diag_fd, buf, sizeof buf, what);
        errno = 0;
        // libmnl turns NLMSG_ERROR into -1 and errno, NLMSG_DONE into MNL_CB_STOP.
        int rc = mnl_cb_run(buf, n, nlh->nlmsg_seq, portid, call_on_socket, const_cast<OnSocket*>(&each));
        if (rc < 0) throw SysError("sock_diag", what, errno != 0 ? errno : EPROTO);
        if (rc == MNL_CB_STOP) return;
    }
}

struct InetSocket {
    std::uint8_t family;
    std::uint8_t protocol;
    std::uint8_t state;
    std::uint32_t inode;
    inet_diag_sockid id;
};

const char* protocol_name(std::uint8_t protocol) {
    switch (protocol) {
        case IPPROTO_TCP: return "TCP";
        case IPPROTO_UDP: return "UDP";
        default: return "UDP-Lite";
    }
}

std::string shown_endpoint(std::uint8_t family, const __be32 (&addr)[4], __be16 port) {
    char text[INET6_ADDRSTRLEN] = "?";
    ::inet_ntop(family, addr, text, sizeof text);
    std::string a = family == AF_INET6 ? "[" + std::string(text) + "]" : std::string(text);
    return a + ":" + std::to_string(ntohs(port));
}

std::string describe(const InetSocket& s) {
    std::string d = std::string(protocol_name(s.protocol)) + " " + shown_endpoint(s.family, s.id.idiag_src, s.id.idiag_sport);
    if (s.id.idiag_dport != 0) d += " -> " + shown_endpoint(s.family, s.id.idiag_dst, s.id.idiag_dport);
    if (s.protocol == IPPROTO_TCP && s.state == TCP_LISTEN) d += " (listening)";
    return d + " inode " + std::to_string(s.inode);
}

// Every socket of (family, protocol) that `uid` created and a file holds.
std::vector<InetSocket> inet_sockets_of_uid(int diag_fd, std::uint8_t family, std::uint8_t protocol, uid_t uid) {
    Request request;
    nlmsghdr* nlh = request.header;
    auto* req = put_body<inet_diag_req_v2>(request);
    req->sdiag_family = family;
    req->sdiag_protocol = protocol;
    req->idiag_states = ~0u;  // every state, bound-only sockets included
    std::vector<InetSocket> found;
    const std::string what = std::string("list ") + protocol_name(protocol) + (family == AF_INET ? " IPv4" : " IPv6") + " sockets";
    dump(diag_fd, nlh, what, [&](const nlmsghdr* m) {
        if (mnl_nlmsg_get_payload_len(m) < sizeof(inet_diag_msg)) throw SysError("sock_diag", what, EPROTO);
        inet_diag_msg msg;
        std::memcpy(&msg, mnl_nlmsg_get_payload(m), sizeof msg);
        if (msg.idiag_uid != uid || msg.idiag_inode == 0) return;
        found.push_back({msg.idiag_family, protocol, msg.idiag_state, msg.idiag_inode, msg.id});
    });
    return found;
}

// 0 when the kernel destroyed the socket or no longer has it, else its errno.
int destroy(int diag_fd, const InetSocket& s) {
    Request request;
    nlmsghdr* nlh = request.header;
    nlh->nlmsg_type = SOCK_DESTROY;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    nlh->nlmsg_seq = next_seq();
    auto* req = put_body<inet_diag_req_v2>(request);
    req->sdiag_family = s.family;
    req->sdiag_protocol = s.protocol;
    req->idiag_states = ~0u;
    req->id = s.id;  // the cookie included: that very socket, not another on its ports
    send_to_kernel(diag_fd, nlh, "destroy " + describe(s));
    alignas(nlmsghdr) char answer[1024];
    std::size_t n = receive(diag_fd, answer, sizeof answer, "destroy " + describe(s));
    errno = 0;
    if (mnl_cb_run(answer, n, nlh->nlmsg_seq, port_id_of(diag_fd), nullptr, nullptr) >= 0) return 0;
    return errno == ENOENT ? 0 : (errno != 0 ? errno : EPROTO);
}

struct Inet {
    std::uint8_t family;
    std::uint8_t protocol;
};
constexpr Inet kSweptProtocols[] = {{AF_INET, IPPROTO_TCP},     {AF_INET6, IPPROTO_TCP},    {AF_INET, IPPROTO_UDP},
                                    {AF_INET6, IPPROTO_UDP},     {AF_INET, IPPROTO_UDPLITE}, {AF_INET6, IPPROTO_UDPLITE}};

// A TCP socket in CLOSE after SOCK_DESTROY accepts, sends and receives
// nothing; an unconnected UDP socket is in CLOSE too and still receives.
bool inert(const InetSocket& s) { return s.protocol == IPPROTO_TCP && s.state == TCP_CLOSE; }

struct UnixSocket {
    std::uint32_t inode;
    std::uint8_t type;
    std::uint8_t state;
    std::string path;  // sun_path as the kernel gives it; abstract starts with '\0'
};

struct UnixAttrs {
    const nlattr* name = nullptr;
    const nlattr* uid = nullptr;
};

int unix_attr(const nlattr* a, void* data) {
    auto* attrs = static_cast<UnixAttrs*>(data);
    if (mnl_attr_get_type(a) == UNIX_DIAG_NAME) attrs->name = a;
    if (mnl_attr_get_type(a) == UNIX_DIAG_UID && mnl_attr_validate(a, MNL_TYPE_U32) == 0) attrs->uid = a;
    return MNL_CB_OK;
}

// Every Unix socket of the namespace that `uid` created.
std::vector<UnixSocket> unix_sockets_of_uid(int diag_fd, uid_t uid) {
    Request request;
    nlmsghdr* nlh = request.header;
    auto* req = put_body<unix_diag_req>(request);
    req->sdiag_family = AF_UNIX;
    req->udiag_states = ~0u;
    req->udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_UID;
    std::vector<UnixSocket> found;
    const std::string what = "list Unix sockets";
    dump(diag_fd, nlh, what, [&](const nlmsghdr* m) {
        if (mnl_nlmsg_get_payload_len(m) < sizeof(unix_diag_msg)) throw SysError("sock_diag", what, EPROTO);
        unix_diag_msg msg;
        std::memcpy(&msg, mnl_nlmsg_get_payload(m), sizeof msg);
        UnixAttrs attrs;
        if (mnl_attr_parse(m, sizeof(unix_diag_msg), unix_attr, &attrs) < 0) throw SysError("sock_diag", what, EPROTO);
        // Without the owner the socket might be the uid's: not known to be gone.
        if (attrs.uid == nullptr)
            throw SysError("sock_diag", what + ": no owner uid for inode " + std::to_string(msg.udiag_ino), EPROTO);
        if (mnl_attr_get_u32(attrs.uid) != uid) return;
        UnixSocket s{msg.udiag_ino, msg.udiag_type, msg.udiag_state, {}};
        if (attrs.name != nullptr)
            s.path.assign(static_cast<const char*>(mnl_attr_get_payload(attrs.name)), mnl_attr_get_payload_len(attrs.name));
        found.push_back(std::move(s));
    });
    return found;
}

std::string describe(const UnixSocket& s) {
    const char* type = s.type == SOCK_STREAM ? "stream" : s.type == SOCK_DGRAM ? "datagram" : "seqpacket";
    std::string d = std::string("Unix ") + type + " " + shown_unix_address(s.path);
    if (s.state == TCP_LISTEN) d += " (listening)";
    return d + " inode " + std::to_string(s.inode);
}

}  // namespace

std::string shown_unix_address(const std::string& sun_path) {
    if (sun_path.empty()) return "(unnamed)";
    std::string out = sun_path[0] == '\0' ? "@" : "";
    for (std::size_t i = sun_path[0] == '\0' ? 1 : 0; i < sun_path.size(); ++i) {
        const auto c = static_cast<unsigned char>(sun_path[i]);
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out += static_cast<char>(c);
        } else {
            static const char hex[] = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xf];
        }
    }
    return out;
}

int leave_no_socket_of_uid(int diag_fd, uid_t uid) {
    int destroyed = 0;
    std::vector<std::string> left;
    std::set<std::uint32_t> refused;  // inodes already named in `left`
    for (const Inet& p : kSweptProtocols)
        for (const InetSocket& s : inet_sockets_of_uid(diag_fd, p.family, p.protocol, uid)) {
            int err = destroy(diag_fd, s);
            if (err != 0) {
                left.push_back(describe(s) + " (SOCK_DESTROY: " + errno_text(err) + ")");
                refused.insert(s.inode);
                continue;
            }
            ++destroyed;
        }
    for (const Inet& p : kSweptProtocols)
        for (const InetSocket& s : inet_sockets_of_uid(diag_fd, p.family, p.protocol, uid))
            if (!inert(s) && !refused.contains(s.inode)) left.push_back(describe(s) + " (still there after SOCK_DESTROY)");
    for (const UnixSocket& s : unix_sockets_of_uid(diag_fd, uid))
        left.push_back(describe(s) + " (the kernel cannot destroy a Unix socket)");
    if (left.empty()) return destroyed;
    std::string msg = std::to_string(left.size()) + " socket" + (left.size() == 1 ? "" : "s") + " of uid " +
                      std::to_string(uid) + " outlived its processes: ";
    for (std::size_t i = 0; i < left.size(); ++i) msg += (i ? "; " : "") + left[i];
    throw std::runtime_error(msg);
}

Fd open_sock_diag_socket_in(int netns_fd) {
    Fd home(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!home.valid()) throw SysError("open", "/proc/thread-self/ns/net", errno);
    if (::setns(netns_fd, CLONE_NEWNET) != 0) throw SysError("setns", "CLONE_NEWNET (the sandbox's network namespace)", errno);
    Fd diag;
    std::string problem;
    try {
        diag = open_sock_diag_socket();
    } catch (const std::exception& e) {
        problem = e.what();
    }
    // Back before anything else runs on this thread; failing that, nothing may.
    if (::setns(home.get(), CLONE_NEWNET) != 0) {
        log::error("socket sweep: setns back to the host's network namespace failed: " + errno_text(errno));
        std::abort();
    }
    if (!problem.empty()) throw std::runtime_error(problem + " (in the sandbox's network namespace)");
    return diag;
}

}  // namespace corral::supervisor
