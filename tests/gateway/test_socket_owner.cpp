// Reading sock_diag answers: only a live socket with exactly the asked-for
// ends counts, and every other answer is an error (fail closed).
#include <doctest/doctest.h>

#include <libmnl/libmnl.h>
#include <linux/inet_diag.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "gateway/socket_owner.hpp"

using corral::gateway::kTcpOwnerQueryBytes;
using corral::gateway::put_tcp_owner_query;
using corral::gateway::read_tcp_owner_answer;
namespace ip = boost::asio::ip;

namespace {

constexpr unsigned kSeq = 4242;
constexpr unsigned kPort = 777;

struct Query {
    alignas(nlmsghdr) char buf[kTcpOwnerQueryBytes];
    nlmsghdr* nlh;
    Query(const char* local, unsigned short lport, const char* remote, unsigned short rport)
        : nlh(put_tcp_owner_query(buf, ip::tcp::endpoint(ip::make_address(local), lport),
                                  ip::tcp::endpoint(ip::make_address(remote), rport), kSeq)) {}
    const inet_diag_req_v2& req() const { return *static_cast<const inet_diag_req_v2*>(mnl_nlmsg_get_payload(nlh)); }
};

// What the kernel sends for a socket: the ends it was asked for, unless changed.
struct Answer {
    alignas(nlmsghdr) char buf[512] = {};
    nlmsghdr* nlh;
    inet_diag_msg* msg;
    explicit Answer(const Query& q, unsigned state = TCP_ESTABLISHED, unsigned uid = 1000) {
        nlh = mnl_nlmsg_put_header(buf);
        nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY;
        nlh->nlmsg_seq = kSeq;
        nlh->nlmsg_pid = kPort;
        msg = static_cast<inet_diag_msg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(inet_diag_msg)));
        msg->idiag_family = q.req().sdiag_family;
        msg->idiag_state = static_cast<std::uint8_t>(state);
        msg->id = q.req().id;
        msg->id.idiag_cookie[0] = 0x1234;  // the kernel fills in the socket's own cookie
        msg->id.idiag_cookie[1] = 0;
        msg->idiag_uid = uid;
    }
    int read(const Query& q, uid_t* uid, unsigned portid = kPort) const {
        return read_tcp_owner_answer(q.nlh, buf, nlh->nlmsg_len, portid, uid);
    }
};

}  // namespace

TEST_CASE("the query names exactly one TCP socket by its four-tuple, without a cookie") {
    Query q("127.0.0.1", 40000, "127.0.0.2", 3128);
    CHECK(q.nlh->nlmsg_type == SOCK_DIAG_BY_FAMILY);
    CHECK(q.nlh->nlmsg_flags == NLM_F_REQUEST);  // not a dump
    CHECK(q.nlh->nlmsg_seq == kSeq);
    CHECK(q.nlh->nlmsg_len == MNL_NLMSG_HDRLEN + MNL_ALIGN(sizeof(inet_diag_req_v2)));
    const auto& r = q.req();
    CHECK(r.sdiag_family == AF_INET);
    CHECK(r.sdiag_protocol == IPPROTO_TCP);
    CHECK(r.id.idiag_sport == htons(40000));
    CHECK(r.id.idiag_dport == htons(3128));
    CHECK(r.id.idiag_src[0] == htonl(0x7f000001));
    CHECK(r.id.idiag_dst[0] == htonl(0x7f000002));
    CHECK(r.id.idiag_src[1] == 0);
    CHECK(r.id.idiag_cookie[0] == INET_DIAG_NOCOOKIE);
    CHECK(r.id.idiag_cookie[1] == INET_DIAG_NOCOOKIE);
}

TEST_CASE("IPv6 ends, and v4-mapped ends asked for as the IPv4 socket they are") {
    Query v6("::1", 40000, "::1", 3128);
    CHECK(v6.req().sdiag_family == AF_INET6);
    unsigned char loop6[16] = {};
    loop6[15] = 1;
    CHECK(std::memcmp(v6.req().id.idiag_src, loop6, 16) == 0);
    CHECK(std::memcmp(v6.req().id.idiag_dst, loop6, 16) == 0);
    Query mapped("::ffff:127.0.0.1", 40000, "::ffff:127.0.0.1", 3128);
    CHECK(mapped.req().sdiag_family == AF_INET);
    CHECK(mapped.req().id.idiag_src[0] == htonl(0x7f000001));
}

TEST_CASE("a live socket with the asked-for ends: its owner") {
    for (unsigned state : {TCP_ESTABLISHED, TCP_FIN_WAIT1, TCP_FIN_WAIT2, TCP_CLOSE_WAIT, TCP_LAST_ACK, TCP_CLOSING}) {
        CAPTURE(state);
        Query q("127.0.0.1", 40000, "127.0.0.1", 3128);
        uid_t uid = 4711;
        CHECK(Answer(q, state, 0).read(q, &uid) == 0);
        CHECK(uid == 0);
        CHECK(Answer(q, state, 65534).read(q, &uid) == 0);
        CHECK(uid == 65534);
    }
    Query v6("::1", 40000, "::1", 3128);
    uid_t uid = 0;
    CHECK(Answer(v6, TCP_ESTABLISHED, 1000).read(v6, &uid) == 0);
    CHECK(uid == 1000);
}

TEST_CASE("remnants and listeners report uid 0 but are not the peer: ESTALE") {
    // TIME_WAIT and request sockets (TCP_NEW_SYN_RECV = 12) always say uid 0;
    // a listener is what the kernel may fall back to for a closed four-tuple.
    for (unsigned state : {unsigned(TCP_TIME_WAIT), unsigned(TCP_LISTEN), 12u, unsigned(TCP_SYN_RECV),
                           unsigned(TCP_SYN_SENT), unsigned(TCP_CLOSE), 0u, 200u}) {
        CAPTURE(state);
        Query q("127.0.0.1", 40000, "127.0.0.1", 3128);
        uid_t uid = 4711;
        CHECK(Answer(q, state, 0).read(q, &uid) == -ESTALE);
        CHECK(uid == 4711);  // untouched on failure
    }
}

TEST_CASE("an answer for other ends or another family: ESTALE") {
    Query q("127.0.0.1", 40000, "127.0.0.1", 3128);
    uid_t uid = 4711;
    {
        Answer a(q, TCP_ESTABLISHED, 0);
        a.msg->id.idiag_sport = htons(40001);
        CHECK(a.read(q, &uid) == -ESTALE);
    }
    {
        Answer a(q, TCP_ESTABLISHED, 0);
        a.msg->id.idiag_dport = htons(3129);
        CHECK(a.read(q, &uid) == -ESTALE);
    }
    {
        Answer a(q, TCP_ESTABLISHED, 0);
        a.msg->id.idiag_src[0] = htonl(0x7f000002);
        CHECK(a.read(q, &uid) == -ESTALE);
    }
    {
        // A listener's answer: its peer address is all zeros.
        Answer a(q, TCP_ESTABLISHED, 0);
        std::memset(a.msg->id.idiag_dst, 0, sizeof a.msg->id.idiag_dst);
        CHECK(a.read(q, &uid) == -ESTALE);
    }
    {
        Answer a(q, TCP_ESTABLISHED, 0);
        a.msg->idiag_family = AF_INET6;
        CHECK(a.read(q, &uid) == -ESTALE);
    }
    CHECK(uid == 4711);
}

TEST_CASE("the kernel's error is passed on") {
    Query q("127.0.0.1", 40000, "127.0.0.1", 3128);
    alignas(nlmsghdr) char buf[256] = {};
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = NLMSG_ERROR;
    nlh->nlmsg_seq = kSeq;
    nlh->nlmsg_pid = kPort;
    auto* err = static_cast<nlmsgerr*>(mnl_nlmsg_put_extra_header(nlh, sizeof(nlmsgerr)));
    err->error = -ENOENT;
    err->msg = *q.nlh;
    uid_t uid = 4711;
    CHECK(read_tcp_owner_answer(q.nlh, buf, nlh->nlmsg_len, kPort, &uid) == -ENOENT);
    CHECK(uid == 4711);
}

TEST_CASE("unreadable or unrelated answers are errors, never a uid") {
    Query q("127.0.0.1", 40000, "127.0.0.1", 3128);
    uid_t uid = 4711;
    Answer a(q, TCP_ESTABLISHED, 0);
    SUBCASE("nothing") { CHECK(read_tcp_owner_answer(q.nlh, a.buf, 0, kPort, &uid) == -EPROTO); }
    SUBCASE("cut short") {
        a.nlh->nlmsg_len = MNL_NLMSG_HDRLEN + 8;
        CHECK(a.read(q, &uid) == -EPROTO);
    }
    SUBCASE("another message type") {
        a.nlh->nlmsg_type = SOCK_DIAG_BY_FAMILY + 1;
        CHECK(a.read(q, &uid) == -EPROTO);
    }
    SUBCASE("another sequence number") {
        a.nlh->nlmsg_seq = kSeq + 1;
        CHECK(a.read(q, &uid) == -EPROTO);
    }
    SUBCASE("addressed to another port id") { CHECK(a.read(q, &uid, kPort + 1) == -ESRCH); }
    SUBCASE("a length of 2^31 or more (libmnl's own check takes it as negative, so it fits)") {
        std::size_t real = a.nlh->nlmsg_len;
        a.nlh->nlmsg_len = 0x80000000u | static_cast<std::uint32_t>(real);
        CHECK(read_tcp_owner_answer(q.nlh, a.buf, real, kPort, &uid) == -EPROTO);
    }
    SUBCASE("a second message longer than what is left") {
        std::size_t real = a.nlh->nlmsg_len;
        auto* second = reinterpret_cast<nlmsghdr*>(a.buf + MNL_ALIGN(real));
        *second = *a.nlh;
        second->nlmsg_len = 0xffffff00u;
        CHECK(read_tcp_owner_answer(q.nlh, a.buf, MNL_ALIGN(real) + sizeof(nlmsghdr), kPort, &uid) == -EPROTO);
    }
    SUBCASE("a done message and no answer") {
        a.nlh->nlmsg_type = NLMSG_DONE;
        CHECK(a.read(q, &uid) == -EPROTO);
    }
    CHECK(uid == 4711);
}
