// supervisor/socket_sweep against the kernel: each case moves this (single-
// threaded) test process into a network namespace of its own with
// unshare(CLONE_NEWNET), loopback only. A child running as kUid makes the
// sockets, parks them over SCM_RIGHTS in a Unix listener that never accepts
// (the way an agent can keep them alive after it is killed) and exits; the
// sweep then runs against that namespace. Root only (exit 77 otherwise).
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/fd.hpp"
#include "base/sock_diag.hpp"
#include "supervisor/fd_passing.hpp"
#include "supervisor/loopback.hpp"
#include "supervisor/socket_sweep.hpp"

using namespace corral;

namespace {

// A uid nothing else on a test machine runs as.
constexpr uid_t kUid = 64123;

void enter_fresh_network_namespace() {
    REQUIRE_MESSAGE(unshare(CLONE_NEWNET) == 0, std::strerror(errno));
    REQUIRE(supervisor::bring_up_loopback() == 0);
}

sockaddr_un abstract_address(const std::string& name, socklen_t& len) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path + 1, name.data(), name.size());
    len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    return a;
}

// The root-owned "service": a Unix listener that never accepts.
Fd service_listener(const std::string& name) {
    Fd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    socklen_t len = 0;
    sockaddr_un a = abstract_address(name, len);
    REQUIRE(bind(s.get(), reinterpret_cast<sockaddr*>(&a), len) == 0);
    REQUIRE(listen(s.get(), 8) == 0);
    return s;
}

// 127.0.0.1:port or [::1]:port in `ss`; returns its length.
socklen_t loopback_address(int family, std::uint16_t port, sockaddr_storage& ss) {
    ss = {};
    if (family == AF_INET) {
        auto* a = reinterpret_cast<sockaddr_in*>(&ss);
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a->sin_port = htons(port);
        return sizeof *a;
    }
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_loopback;
    a->sin6_port = htons(port);
    return sizeof *a;
}

// A TCP listener on the loopback address of `family`, any port (in `port`); -1 on failure.
int make_inet_listener(int family, std::uint16_t& port) {
    int s = socket(family, SOCK_STREAM, 0);
    sockaddr_storage ss{};
    socklen_t len = loopback_address(family, 0, ss);
    if (s < 0 || bind(s, reinterpret_cast<sockaddr*>(&ss), len) != 0 || listen(s, 8) != 0) return -1;
    if (getsockname(s, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return -1;
    port = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&ss)->sin_port
                                   : reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
    return s;
}

struct Parked {
    std::uint16_t port4 = 0;
    std::uint16_t port6 = 0;
    std::uint16_t port_udp = 0;
};

// Forks a child that becomes kUid, makes a TCP listener on 127.0.0.1 and one
// on [::1] (and with `unix_name`, an abstract Unix listener), passes them all
// to the service and exits; with `udp`, a UDP socket bound to 127.0.0.1 too.
// Returns the TCP ports once the child is gone.
Parked park_sockets_as_other_uid(const std::string& service, const std::string& unix_name, bool udp = false) {
    int report[2];
    REQUIRE(pipe(report) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(report[0]);
        if (setresgid(kUid, kUid, kUid) != 0 || setresuid(kUid, kUid, kUid) != 0) _exit(10);
        Parked p;
        std::vector<int> fds{make_inet_listener(AF_INET, p.port4), make_inet_listener(AF_INET6, p.port6)};
        if (fds[0] < 0 || fds[1] < 0) _exit(11);
        if (!unix_name.empty()) {
            int u = socket(AF_UNIX, SOCK_STREAM, 0);
            socklen_t len = 0;
            sockaddr_un a = abstract_address(unix_name, len);
            if (u < 0 || bind(u, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(u, 8) != 0) _exit(12);
            fds.push_back(u);
        }
        if (udp) {
            int d = socket(AF_INET, SOCK_DGRAM, 0);
            sockaddr_storage ss{};
            socklen_t alen = loopback_address(AF_INET, 0, ss);
            if (d < 0 || bind(d, reinterpret_cast<sockaddr*>(&ss), alen) != 0 ||
                getsockname(d, reinterpret_cast<sockaddr*>(&ss), &alen) != 0)
                _exit(16);
            p.port_udp = ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
            fds.push_back(d);
        }
        int c = socket(AF_UNIX, SOCK_STREAM, 0);
        socklen_t len = 0;
        sockaddr_un a = abstract_address(service, len);
        if (c < 0 || connect(c, reinterpret_cast<sockaddr*>(&a), len) != 0) _exit(13);
        char byte = 'x';
        if (supervisor::send_with_fds(c, &byte, 1, fds.data(), static_cast<int>(fds.size())) != 0) _exit(14);
        if (write(report[1], &p, sizeof p) != static_cast<ssize_t>(sizeof p)) _exit(15);
        _exit(0);  // every fd closes here; only the queued message holds the sockets
    }
    close(report[1]);
    Parked p;
    REQUIRE(read(report[0], &p, sizeof p) == static_cast<ssize_t>(sizeof p));
    close(report[0]);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), "child status " << status);
    return p;
}

// 0 when a connection to [loopback]:port is accepted, else connect's errno.
int connect_to(int family, std::uint16_t port) {
    Fd c(socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    REQUIRE(c.valid());
    sockaddr_storage ss{};
    socklen_t len = loopback_address(family, port, ss);
    return connect(c.get(), reinterpret_cast<sockaddr*>(&ss), len) == 0 ? 0 : errno;
}

}  // namespace

TEST_CASE("parked TCP listeners of a uid whose processes are gone are destroyed: connections to them are refused") {
    enter_fresh_network_namespace();
    Fd service = service_listener("corral-sweep-service");
    Parked p = park_sockets_as_other_uid("corral-sweep-service", "");
    // The defect: the dead uid's listeners still accept.
    REQUIRE(connect_to(AF_INET, p.port4) == 0);
    REQUIRE(connect_to(AF_INET6, p.port6) == 0);
    Fd diag = open_sock_diag_socket();
    CHECK(supervisor::leave_no_socket_of_uid(diag.get(), kUid) == 2);
    CHECK(connect_to(AF_INET, p.port4) == ECONNREFUSED);
    CHECK(connect_to(AF_INET6, p.port6) == ECONNREFUSED);
    // Nothing of the uid is left: a second sweep finds nothing to do.
    CHECK(supervisor::leave_no_socket_of_uid(diag.get(), kUid) == 0);
}

TEST_CASE("a parked Unix listener of the uid is an error naming its address and inode; its TCP listeners are destroyed all the same") {
    enter_fresh_network_namespace();
    Fd service = service_listener("corral-sweep-service");
    Parked p = park_sockets_as_other_uid("corral-sweep-service", "corral-parked\x1b[0m");
    Fd diag = open_sock_diag_socket();
    std::string error;
    try {
        supervisor::leave_no_socket_of_uid(diag.get(), kUid);
    } catch (const std::runtime_error& e) {
        error = e.what();
    }
    INFO(error);
    CHECK(error.find("1 socket of uid 64123 outlived its processes") != std::string::npos);
    // The box's name, escaped: no control byte reaches the operator's terminal.
    CHECK(error.find("Unix stream @corral-parked\\x1b[0m (listening) inode ") != std::string::npos);
    CHECK(error.find("the kernel cannot destroy a Unix socket") != std::string::npos);
    CHECK(error.find("TCP") == std::string::npos);
    CHECK(connect_to(AF_INET, p.port4) == ECONNREFUSED);
    CHECK(connect_to(AF_INET6, p.port6) == ECONNREFUSED);
}

// 0 when a UDP socket can be bound to 127.0.0.1:port, else bind's errno.
int bind_udp(std::uint16_t port) {
    Fd d(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    REQUIRE(d.valid());
    sockaddr_storage ss{};
    socklen_t len = loopback_address(AF_INET, port, ss);
    return bind(d.get(), reinterpret_cast<sockaddr*>(&ss), len) == 0 ? 0 : errno;
}

TEST_CASE("a parked UDP socket bound to a port is destroyed: the port is free again, nothing receives on it") {
    enter_fresh_network_namespace();
    Fd service = service_listener("corral-sweep-service");
    Parked p = park_sockets_as_other_uid("corral-sweep-service", "", true);
    REQUIRE(bind_udp(p.port_udp) == EADDRINUSE);  // the parked socket holds it
    Fd diag = open_sock_diag_socket();
    CHECK(supervisor::leave_no_socket_of_uid(diag.get(), kUid) == 3);
    CHECK(bind_udp(p.port_udp) == 0);
}

TEST_CASE("sockets of other uids are left alone") {
    enter_fresh_network_namespace();
    Fd service = service_listener("corral-sweep-service");  // root's
    std::uint16_t port = 0;
    Fd mine(make_inet_listener(AF_INET, port));
    REQUIRE(mine.valid());
    Fd diag = open_sock_diag_socket();
    CHECK(supervisor::leave_no_socket_of_uid(diag.get(), kUid) == 0);
    CHECK(connect_to(AF_INET, port) == 0);
}

TEST_CASE("shown_unix_address: path as is, abstract as @name, bytes outside printable ASCII as \\xNN") {
    CHECK(supervisor::shown_unix_address("/tmp/s") == "/tmp/s");
    CHECK(supervisor::shown_unix_address(std::string("\0ab\\\n", 5)) == "@ab\\x5c\\x0a");
    CHECK(supervisor::shown_unix_address("") == "(unnamed)");
    CHECK(supervisor::shown_unix_address("\xc2\x9b") == "\\xc2\\x9b");
}

int main(int argc, char** argv) {
    if (geteuid() != 0) {
        std::fprintf(stderr, "skipped: needs root (network namespaces of its own, a child of another uid)\n");
        return 77;
    }
    doctest::Context ctx(argc, argv);
    return ctx.run();
}
