// supervisor/loopback against the kernel: each test case moves this (single-
// threaded) test process into a network namespace of its own with
// unshare(CLONE_NEWNET), so what the functions see and change is that fresh
// namespace's links, never the host's. Root only (exit 77 otherwise).
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/fd.hpp"
#include "supervisor/loopback.hpp"
#include "tests/support/process.hpp"

using namespace corral;

namespace {

void enter_fresh_network_namespace() { REQUIRE_MESSAGE(unshare(CLONE_NEWNET) == 0, std::strerror(errno)); }

// A TCP connection to 127.0.0.1 within this namespace: the thing `lo` being
// up is for. Returns 0 or the connect's errno.
int connect_to_own_listener() {
    Fd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    REQUIRE(listener.valid());
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return errno;
    REQUIRE(listen(listener.get(), 1) == 0);
    socklen_t len = sizeof addr;
    REQUIRE(getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    Fd client(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    REQUIRE(client.valid());
    return connect(client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 ? 0 : errno;
}

}  // namespace

TEST_CASE("a new network namespace has only lo, down: list_links sees it, verify_only_loopback says -ENETDOWN") {
    enter_fresh_network_namespace();
    supervisor::LinkInfo links[4];
    REQUIRE(supervisor::list_links(links, 4) == 1);
    CHECK(std::string(links[0].name) == "lo");
    CHECK(links[0].index > 0);
    CHECK((links[0].flags & IFF_UP) == 0);
    CHECK(supervisor::verify_only_loopback() == -ENETDOWN);
    CHECK(connect_to_own_listener() != 0);  // 127.0.0.1 is unreachable while lo is down
}

TEST_CASE("bring_up_loopback sets IFF_UP on lo: 127.0.0.1 works and verify_only_loopback passes") {
    enter_fresh_network_namespace();
    REQUIRE(supervisor::bring_up_loopback() == 0);
    supervisor::LinkInfo links[4];
    REQUIRE(supervisor::list_links(links, 4) == 1);
    CHECK((links[0].flags & IFF_UP) != 0);
    CHECK(supervisor::verify_only_loopback() == 0);
    CHECK(connect_to_own_listener() == 0);
    CHECK(supervisor::bring_up_loopback() == 0);  // idempotent: a second call is acknowledged too
}

// Skipped (and counted so by doctest) without iproute2's ip to add the link.
TEST_CASE("any link beside lo fails verify_only_loopback closed (-EEXIST); list_links counts past its max" *
          doctest::skip(!test::have_program("ip"))) {
    enter_fresh_network_namespace();
    REQUIRE(supervisor::bring_up_loopback() == 0);
    // A veth pair, both ends in this test's own namespace: no traffic leaves it.
    test::Result added = test::run({"ip", "link", "add", "corral-t0", "type", "veth", "peer", "name", "corral-t1"});
    REQUIRE_MESSAGE(added.exit_code == 0, added.err);
    supervisor::LinkInfo one[1];
    CHECK(supervisor::list_links(one, 1) == 3);  // lo + both ends, only one stored
    supervisor::LinkInfo links[4];
    REQUIRE(supervisor::list_links(links, 4) == 3);
    bool saw_t0 = false;
    for (const auto& l : links)
        if (std::string(l.name) == "corral-t0") saw_t0 = true;
    CHECK(saw_t0);
    CHECK(supervisor::verify_only_loopback() == -EEXIST);  // even with lo up and the others down
}

TEST_CASE("add_capture_routes: the synthetic ranges are lo's own; verify_only_loopback accepts them only with capture") {
    enter_fresh_network_namespace();
    REQUIRE(supervisor::bring_up_loopback() == 0);
    CHECK(supervisor::verify_only_loopback(true) == 0);  // capture allows the ranges, needs none
    REQUIRE(supervisor::add_capture_routes(true) == 0);
    CHECK(supervisor::verify_only_loopback(true) == 0);
    CHECK(supervisor::verify_only_loopback(false) == -EADDRNOTAVAIL);  // a run without capture has none
    CHECK(supervisor::add_capture_routes(true) == -EEXIST);           // NLM_F_EXCL: made once
    // A listener on one synthetic address (no FREEBIND: the local route makes it the box's own).
    Fd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(8443);
    a.sin_addr.s_addr = htonl(0xC6120001);  // 198.18.0.1
    REQUIRE(bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(listen(listener.get(), 1) == 0);
    Fd client(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    CHECK(connect(client.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    Fd other(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    a.sin_addr.s_addr = htonl(0xC6120002);  // 198.18.0.2: routed locally, nobody listens
    CHECK(connect(other.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0);
    CHECK(errno == ECONNREFUSED);
}

// Skipped (and counted so by doctest) without iproute2's ip to add the route.
TEST_CASE("a route beside lo's own fails verify_only_loopback closed (-EADDRNOTAVAIL), even with capture" *
          doctest::skip(!test::have_program("ip"))) {
    enter_fresh_network_namespace();
    REQUIRE(supervisor::bring_up_loopback() == 0);
    // Another local range on lo: not one capture uses.
    test::Result added = test::run({"ip", "route", "add", "local", "192.0.2.0/24", "dev", "lo"});
    REQUIRE_MESSAGE(added.exit_code == 0, added.err);
    CHECK(supervisor::verify_only_loopback(true) == -EADDRNOTAVAIL);
}

int main(int argc, char** argv) {
    if (geteuid() != 0) {
        std::puts("SKIP: the loopback tests create network namespaces and need root");
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
