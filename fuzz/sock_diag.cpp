// Fuzz target: the kernel's NETLINK_SOCK_DIAG answer as read_tcp_owner_answer
// reads it (the gateway believes a TCP peer is root's only on its say-so).
// The input's first byte picks the query (IPv4 or IPv6 ends); the rest is the
// datagram, in a buffer of exactly its size so any read past it is caught.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <libmnl/libmnl.h>

#include "gateway/socket_owner.hpp"

using namespace corral::gateway;
namespace ip = boost::asio::ip;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const bool v6 = data[0] & 1;
    alignas(nlmsghdr) char query[kTcpOwnerQueryBytes];
    auto local = ip::tcp::endpoint(ip::make_address(v6 ? "::1" : "127.0.0.1"), 40000);
    auto remote = ip::tcp::endpoint(ip::make_address(v6 ? "::1" : "127.0.0.1"), 443);
    nlmsghdr* q = put_tcp_owner_query(query, local, remote, 4242);
    // new[] of nlmsghdr-sized units is aligned as the kernel's datagram would be.
    std::size_t len = size - 1;
    std::unique_ptr<char[]> answer(new char[len == 0 ? 1 : len]);
    std::memcpy(answer.get(), data + 1, len);
    uid_t uid = 12345;
    int rc = read_tcp_owner_answer(q, answer.get(), len, data[0] & 2 ? 777 : 0, &uid);
    if (rc > 0) std::abort();
    if (rc < 0 && uid != 12345) std::abort();  // no uid without a good answer
    return 0;
}
