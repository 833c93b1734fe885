#include "supervisor/loopback.hpp"

#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

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

}  // namespace

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

int verify_only_loopback() noexcept {
    LinkInfo links[4];
    int n = list_links(links, 4);
    if (n < 0) return n;
    if (n != 1 || std::strcmp(links[0].name, "lo") != 0) return -EEXIST;
    if ((links[0].flags & IFF_UP) == 0) return -ENETDOWN;
    return 0;
}

}  // namespace corral::supervisor
