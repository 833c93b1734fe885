#include "gateway/socket_owner.hpp"

#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "base/sock_diag.hpp"
#include "base/sys_error.hpp"

namespace corral::gateway {

namespace {

namespace ip = boost::asio::ip;

// One answer is one inet_diag_msg and a few attributes; 8 KiB is libmnl's
// recommended receive size and leaves room for any the kernel adds.
constexpr std::size_t kAnswerBytes = 8192;

// A v4-mapped IPv6 endpoint names an IPv4 socket: the kernel files it under AF_INET.
ip::address plain(const ip::address& a) {
    if (a.is_v6() && a.to_v6().is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, a.to_v6());
    return a;
}

void put_address(__be32 (&field)[4], const ip::address& a) {
    if (a.is_v4()) {
        auto b = a.to_v4().to_bytes();
        std::memcpy(field, b.data(), b.size());
    } else {
        auto b = a.to_v6().to_bytes();
        std::memcpy(field, b.data(), b.size());
    }
}

std::string describe(const ip::tcp::endpoint& local, const ip::tcp::endpoint& remote) {
    auto show = [](const ip::tcp::endpoint& ep) {
        auto a = ep.address().to_string();
        return (ep.address().is_v6() ? "[" + a + "]" : a) + ":" + std::to_string(ep.port());
    };
    return "TCP " + show(local) + " -> " + show(remote);
}

// Only a full socket carries its creator's uid. The kernel answers for a
// TIME_WAIT remnant and a half-open request with uid 0, and when no
// connected socket has the four-tuple it may fall back to a listener on the
// same port: none of these is the peer, so none of them is believed.
bool is_live_connection(unsigned state) {
    switch (state) {
        case TCP_ESTABLISHED:
        case TCP_FIN_WAIT1:
        case TCP_FIN_WAIT2:
        case TCP_CLOSE_WAIT:
        case TCP_LAST_ACK:
        case TCP_CLOSING:
            return true;
        default:
            return false;
    }
}

struct AnswerState {
    const inet_diag_req_v2* asked;
    int error = EPROTO;  // until an answer is read
    uid_t uid = 0;
};

int answer_cb(const nlmsghdr* nlh, void* data) {
    auto* st = static_cast<AnswerState*>(data);
    if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY || mnl_nlmsg_get_payload_len(nlh) < sizeof(inet_diag_msg)) {
        st->error = EPROTO;
        return MNL_CB_STOP;
    }
    inet_diag_msg msg;
    std::memcpy(&msg, mnl_nlmsg_get_payload(nlh), sizeof msg);
    const inet_diag_sockid& want = st->asked->id;
    // The cookie is the kernel's to fill in; the ends must be the ones asked for.
    bool same_ends = msg.idiag_family == st->asked->sdiag_family && msg.id.idiag_sport == want.idiag_sport &&
                     msg.id.idiag_dport == want.idiag_dport &&
                     std::memcmp(msg.id.idiag_src, want.idiag_src, sizeof want.idiag_src) == 0 &&
                     std::memcmp(msg.id.idiag_dst, want.idiag_dst, sizeof want.idiag_dst) == 0;
    if (!same_ends || !is_live_connection(msg.idiag_state)) {
        st->error = ESTALE;
        return MNL_CB_STOP;
    }
    st->error = 0;
    st->uid = msg.idiag_uid;
    return MNL_CB_STOP;
}

}  // namespace

nlmsghdr* put_tcp_owner_query(void* buf, const ip::tcp::endpoint& local, const ip::tcp::endpoint& remote,
                              unsigned seq) {
    static_assert(MNL_NLMSG_HDRLEN + MNL_ALIGN(sizeof(inet_diag_req_v2)) <= kTcpOwnerQueryBytes);
    std::memset(buf, 0, kTcpOwnerQueryBytes);
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
    nlh->nlmsg_flags = NLM_F_REQUEST;  // no NLM_F_DUMP: the one socket with exactly these ends
    nlh->nlmsg_seq = seq;
    auto* req = static_cast<inet_diag_req_v2*>(mnl_nlmsg_put_extra_header(nlh, sizeof(inet_diag_req_v2)));
    ip::address src = plain(local.address());
    ip::address dst = plain(remote.address());
    req->sdiag_family = src.is_v4() ? AF_INET : AF_INET6;
    req->sdiag_protocol = IPPROTO_TCP;
    req->idiag_states = ~0u;
    req->id.idiag_sport = htons(local.port());
    req->id.idiag_dport = htons(remote.port());
    put_address(req->id.idiag_src, src);
    put_address(req->id.idiag_dst, dst);
    // No cookie: with one, the kernel would only answer for that very socket.
    req->id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    req->id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    return nlh;
}

int read_tcp_owner_answer(const nlmsghdr* query, const void* answer, std::size_t len, unsigned portid, uid_t* uid) {
    AnswerState st{static_cast<const inet_diag_req_v2*>(mnl_nlmsg_get_payload(query))};
    if (!netlink_messages_fit(answer, len)) return -EPROTO;
    errno = 0;
    // libmnl handles NLMSG_ERROR (errno = the kernel's error) and the sequence/port checks.
    // The error field is the answer's: only an errno value is taken as one
    // (fuzz_sock_diag found INT_MIN, whose negation overflows).
    if (mnl_cb_run(answer, len, query->nlmsg_seq, portid, answer_cb, &st) < 0)
        return errno > 0 && errno < 4096 ? -errno : -EPROTO;
    if (st.error != 0) return -st.error;
    *uid = st.uid;
    return 0;
}

uid_t tcp_socket_owner(int diag_socket, const ip::tcp::endpoint& local, const ip::tcp::endpoint& remote) {
    // Sequence numbers only tell this socket's answers apart; any distinct value will do.
    static std::atomic<unsigned> next_seq{1};
    sockaddr_nl self{};
    socklen_t self_len = sizeof self;
    if (::getsockname(diag_socket, reinterpret_cast<sockaddr*>(&self), &self_len) != 0)
        throw SysError("getsockname(NETLINK_SOCK_DIAG)", errno);
    alignas(nlmsghdr) char query[kTcpOwnerQueryBytes];
    nlmsghdr* nlh = put_tcp_owner_query(query, local, remote, next_seq.fetch_add(1, std::memory_order_relaxed));
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(diag_socket, nlh, nlh->nlmsg_len, 0, reinterpret_cast<const sockaddr*>(&kernel), sizeof kernel) < 0)
        throw SysError("sock_diag", describe(local, remote), errno);
    alignas(nlmsghdr) char answer[kAnswerBytes];
    ssize_t n = ::recv(diag_socket, answer, sizeof answer, 0);
    if (n < 0) throw SysError("sock_diag", describe(local, remote), errno);
    uid_t uid = 0;
    int rc = read_tcp_owner_answer(nlh, answer, static_cast<std::size_t>(n), self.nl_pid, &uid);
    if (rc < 0) throw SysError("sock_diag", describe(local, remote), -rc);
    return uid;
}

uid_t tcp_socket_owner(const ip::tcp::endpoint& local, const ip::tcp::endpoint& remote) {
    Fd diag = open_sock_diag_socket();
    return tcp_socket_owner(diag.get(), local, remote);
}

}  // namespace corral::gateway
