#include "supervisor/loopback.hpp"

#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "capture/synthetic_addresses.hpp"

namespace corral::supervisor {

namespace {

// 8 KiB is libmnl's recommended receive size (MNL_SOCKET_BUFFER_SIZE's cap);
// a fixed array keeps this allocation-free apart from mnl_socket_open.
constexpr std::size_t kBufSize = 8192;

class NetlinkSocket {
public:
    NetlinkSocket() : nl_(mnl_socket_open(NETLINK_ROUTE)) {
        if (nl_ == nullptr) {
            err_ = errno;
            return;
        }
        if (mnl_socket_bind(nl_, 0, MNL_SOCKET_AUTOPID) < 0) err_ = errno;
    }
    ~NetlinkSocket() {
        if (nl_ != nullptr) mnl_socket_close(nl_);
    }
    NetlinkSocket(const NetlinkSocket&) = delete;
    NetlinkSocket& operator=(const NetlinkSocket&) = delete;
    int error() const { return err_; }
    mnl_socket* get() const { return nl_; }
    unsigned port() const { return mnl_socket_get_portid(nl_); }

    // Sends `nlh` and runs `cb` over replies until the kernel's ACK/DONE.
    int exchange(nlmsghdr* nlh, mnl_cb_t cb, void* data) {
        if (mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) < 0) return -errno;
        char buf[kBufSize];
        for (;;) {
            ssize_t n = mnl_socket_recvfrom(nl_, buf, sizeof buf);
            if (n < 0) return -errno;
            int rc = mnl_cb_run(buf, static_cast<std::size_t>(n), nlh->nlmsg_seq, port(), cb, data);
            if (rc < 0) return -errno;
            if (rc == MNL_CB_STOP) return 0;
        }
    }

private:
    mnl_socket* nl_;
    int err_ = 0;
};

struct ListState {
    LinkInfo* out;
    int max;
    int count;
};

int link_attr_cb(const nlattr* attr, void* data) {
    if (mnl_attr_get_type(attr) == IFLA_IFNAME && mnl_attr_validate(attr, MNL_TYPE_STRING) >= 0)
        *static_cast<const char**>(data) = mnl_attr_get_str(attr);
    return MNL_CB_OK;
}

int link_cb(const nlmsghdr* nlh, void* data) {
    auto* st = static_cast<ListState*>(data);
    const auto* ifm = static_cast<const ifinfomsg*>(mnl_nlmsg_get_payload(nlh));
    const char* name = "";
    mnl_attr_parse(nlh, sizeof(*ifm), link_attr_cb, &name);
    if (st->count < st->max) {
        LinkInfo& li = st->out[st->count];
        li.index = ifm->ifi_index;
        li.flags = ifm->ifi_flags;
        std::strncpy(li.name, name, sizeof li.name - 1);
        li.name[sizeof li.name - 1] = '\0';
    }
    ++st->count;
    return MNL_CB_OK;
}

// What verify_only_loopback reads of each route.
struct RouteCheck {
    int lo_index;
    bool capture;
    int bad;  // routes that lead anywhere but lo's own addresses
};

int route_attr_cb(const nlattr* attr, void* data) {
    auto* tb = static_cast<const nlattr**>(data);
    int type = mnl_attr_get_type(attr);
    if (type >= 0 && type <= RTA_MAX) tb[type] = attr;
    return MNL_CB_OK;
}

// `addr` (the route's RTA_DST, `len` bytes) with prefix `plen` lies inside
// the prefix `base`/`base_len` of the same family.
bool inside(const std::uint8_t* addr, unsigned plen, const std::uint8_t* base, unsigned base_len) {
    if (plen < base_len) return false;
    unsigned full = base_len / 8, rest = base_len % 8;
    if (std::memcmp(addr, base, full) != 0) return false;
    if (rest == 0) return true;
    auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
    return (addr[full] & mask) == (base[full] & mask);
}

bool local_route_allowed(const rtmsg* rt, const std::uint8_t* dst, bool capture) {
    static constexpr std::uint8_t kLoopback4[4] = {127, 0, 0, 0};
    static constexpr std::uint8_t kLoopback6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    if (dst == nullptr) return false;
    if (rt->rtm_family == AF_INET) {
        if (inside(dst, rt->rtm_dst_len, kLoopback4, 8)) return true;
        return capture && rt->rtm_dst_len == capture::kSyntheticV4PrefixLength &&
               inside(dst, rt->rtm_dst_len, capture::kSyntheticV4Base.data(), capture::kSyntheticV4PrefixLength);
    }
    if (rt->rtm_dst_len == 128 && std::memcmp(dst, kLoopback6, 16) == 0) return true;
    return capture && rt->rtm_dst_len == capture::kSyntheticV6PrefixLength &&
           inside(dst, rt->rtm_dst_len, capture::kSyntheticV6Prefix.data(), capture::kSyntheticV6PrefixLength);
}

// A route is lo's own: on lo, local inside loopback (or a capture range), or
// the v4 loopback broadcast. A unicast route (a way out) is never.
int route_cb(const nlmsghdr* nlh, void* data) {
    auto* st = static_cast<RouteCheck*>(data);
    const auto* rt = static_cast<const rtmsg*>(mnl_nlmsg_get_payload(nlh));
    const nlattr* tb[RTA_MAX + 1] = {};
    mnl_attr_parse(nlh, sizeof(*rt), route_attr_cb, tb);
    const bool on_lo = tb[RTA_OIF] != nullptr && static_cast<int>(mnl_attr_get_u32(tb[RTA_OIF])) == st->lo_index;
    const auto* dst = tb[RTA_DST] ? static_cast<const std::uint8_t*>(mnl_attr_get_payload(tb[RTA_DST])) : nullptr;
    const std::size_t want = rt->rtm_family == AF_INET ? 4 : 16;
    if (dst != nullptr && mnl_attr_get_payload_len(tb[RTA_DST]) != want) dst = nullptr;
    bool ok = false;
    if (on_lo && rt->rtm_type == RTN_LOCAL) ok = local_route_allowed(rt, dst, st->capture);
    if (on_lo && rt->rtm_type == RTN_BROADCAST && rt->rtm_family == AF_INET && dst != nullptr)
        ok = dst[0] == 127 && dst[1] == 255 && dst[2] == 255 && dst[3] == 255;
    if (!ok) ++st->bad;
    return MNL_CB_OK;
}

int dump_routes(unsigned char family, RouteCheck& check) {
    NetlinkSocket nl;
    if (nl.error() != 0) return -nl.error();
    char buf[kBufSize];
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_GETROUTE;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    nlh->nlmsg_seq = static_cast<unsigned>(time(nullptr));
    auto* rt = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(rtmsg)));
    rt->rtm_family = family;
    return nl.exchange(nlh, route_cb, &check);
}

int add_local_route(unsigned char family, const std::uint8_t* prefix, unsigned char prefix_len, int lo_index) {
    NetlinkSocket nl;
    if (nl.error() != 0) return -nl.error();
    char buf[kBufSize];
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_NEWROUTE;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
    nlh->nlmsg_seq = static_cast<unsigned>(time(nullptr));
    auto* rt = static_cast<rtmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(rtmsg)));
    rt->rtm_family = family;
    rt->rtm_dst_len = prefix_len;
    rt->rtm_table = RT_TABLE_LOCAL;  // where `ip route add local` puts it
    rt->rtm_protocol = RTPROT_BOOT;
    rt->rtm_scope = RT_SCOPE_HOST;
    rt->rtm_type = RTN_LOCAL;
    mnl_attr_put(nlh, RTA_DST, family == AF_INET ? 4 : 16, prefix);
    mnl_attr_put_u32(nlh, RTA_OIF, static_cast<std::uint32_t>(lo_index));
    return nl.exchange(nlh, nullptr, nullptr);
}

// A second IPv4 address on lo, 127.0.0.2/32, for getaddrinfo's
// AI_ADDRCONFIG: glibc answers with IPv4 addresses only when the host has an
// IPv4 address other than 127.0.0.1 (check_pf.c), and a box has only lo, so
// every program that passes the flag (node's net.connect and every agent CLI
// on it, getent ahosts, ...) got no address for a granted name. Its local
// route lies inside 127.0.0.0/8: nothing new for verify_only_loopback, and
// nothing it reaches that 127.0.0.1 does not. (No IPv6 one: with the flag
// such programs get the name's IPv4 address, which is captured the same.)
int add_second_loopback_address(int lo_index) {
    NetlinkSocket nl;
    if (nl.error() != 0) return -nl.error();
    char buf[kBufSize];
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_NEWADDR;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
    nlh->nlmsg_seq = static_cast<unsigned>(time(nullptr));
    auto* ifa = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifaddrmsg)));
    ifa->ifa_family = AF_INET;
    ifa->ifa_prefixlen = 32;
    ifa->ifa_scope = RT_SCOPE_HOST;
    ifa->ifa_index = static_cast<unsigned>(lo_index);
    const std::uint8_t addr[4] = {127, 0, 0, 2};
    mnl_attr_put(nlh, IFA_LOCAL, 4, addr);
    mnl_attr_put(nlh, IFA_ADDRESS, 4, addr);
    return nl.exchange(nlh, nullptr, nullptr);
}

}  // namespace

int add_capture_routes(bool ipv6) noexcept {
    unsigned lo = if_nametoindex("lo");
    if (lo == 0) return -errno;
    std::uint8_t v4[4], v6[16] = {};
    std::memcpy(v4, capture::kSyntheticV4Base.data(), 4);
    std::memcpy(v6, capture::kSyntheticV6Prefix.data(), capture::kSyntheticV6Prefix.size());
    if (int rc = add_local_route(AF_INET, v4, capture::kSyntheticV4PrefixLength, static_cast<int>(lo)); rc < 0)
        return rc;
    if (int rc = add_second_loopback_address(static_cast<int>(lo)); rc < 0) return rc;
    if (!ipv6) return 0;
    int rc = add_local_route(AF_INET6, v6, capture::kSyntheticV6PrefixLength, static_cast<int>(lo));
    // No IPv6 in this namespace (disabled on the host): no v6 address can be
    // reached either, and the DNS stub answers AAAA without an address.
    if (rc == -EAFNOSUPPORT || rc == -EACCES || rc == -EOPNOTSUPP) return 1;
    return rc;
}

int bring_up_loopback() noexcept {
    NetlinkSocket nl;
    if (nl.error() != 0) return -nl.error();
    char buf[kBufSize];
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_NEWLINK;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    nlh->nlmsg_seq = static_cast<unsigned>(time(nullptr));
    auto* ifm = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
    ifm->ifi_family = AF_UNSPEC;
    ifm->ifi_change = IFF_UP;
    ifm->ifi_flags = IFF_UP;
    mnl_attr_put_strz(nlh, IFLA_IFNAME, "lo");
    return nl.exchange(nlh, nullptr, nullptr);
}

int list_links(LinkInfo* out, int max) noexcept {
    NetlinkSocket nl;
    if (nl.error() != 0) return -nl.error();
    char buf[kBufSize];
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_GETLINK;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    nlh->nlmsg_seq = static_cast<unsigned>(time(nullptr));
    auto* ifm = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
    ifm->ifi_family = AF_UNSPEC;
    ListState st{out, max, 0};
    if (int rc = nl.exchange(nlh, link_cb, &st); rc < 0) return rc;
    return st.count;
}

int verify_only_loopback(bool capture) noexcept {
    LinkInfo links[4];
    int n = list_links(links, 4);
    if (n < 0) return n;
    if (n != 1 || std::strcmp(links[0].name, "lo") != 0) return -EEXIST;
    if ((links[0].flags & IFF_UP) == 0) return -ENETDOWN;
    RouteCheck check{links[0].index, capture, 0};
    if (int rc = dump_routes(AF_INET, check); rc < 0) return rc;
    // A namespace without IPv6 answers the v6 dump with an error: nothing to check.
    if (int rc = dump_routes(AF_INET6, check); rc < 0 && rc != -EAFNOSUPPORT) return rc;
    return check.bad == 0 ? 0 : -EADDRNOTAVAIL;
}

}  // namespace corral::supervisor
