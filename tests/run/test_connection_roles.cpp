// ConnectionRoles against the kernel: a connection is its socket maker's
// role, and a socket no role made is refused with why (fail closed). On
// loopback connections this test makes in the host's namespace; the box's
// own namespace is the sandbox_sessions suite's (every role's ledger line).
// Needs root (a socket of another uid): exit 77 without it.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <iostream>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "gateway/socket_owner.hpp"
#include "run/egress.hpp"
#include "tests/support/process.hpp"

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

// A connection to `acceptor` from a child running as `uid`, held open until
// the returned pipe end is closed; the child's pid in *pid.
int connect_as(uid_t uid, unsigned short port, pid_t* pid) {
    int hold[2];
    REQUIRE(::pipe(hold) == 0);
    *pid = ::fork();
    REQUIRE(*pid >= 0);
    if (*pid == 0) {
        // Only system calls between fork and _exit.
        ::close(hold[1]);
        if (::setresgid(uid, uid, uid) != 0 || ::setresuid(uid, uid, uid) != 0) ::_exit(2);
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) ::_exit(3);
        char b;
        (void)::read(hold[0], &b, 1);
        ::_exit(0);
    }
    ::close(hold[0]);
    return hold[1];
}

void release(int hold, pid_t pid) {
    ::close(hold);
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

}  // namespace

TEST_CASE("each connection is the role of the uid that made its socket; a socket of no role's uid has none") {
    asio::io_context ioc;
    tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    const auto port = acceptor.local_endpoint().port();
    corral::run::ConnectionRoles roles(corral::gateway::open_sock_diag_socket(),
                                       {{65534, "agent"}, {65533, "service"}, {65532, "verifier"}});
    for (const auto& expected : {std::pair<uid_t, const char*>{65534, "agent"}, {65533, "service"}, {65532, "verifier"}}) {
        const uid_t uid = expected.first;
        const std::string role = expected.second;
        CAPTURE(uid);
        pid_t pid = 0;
        int hold = connect_as(uid, port, &pid);
        tcp::socket accepted = acceptor.accept();
        std::string problem;
        auto found = roles.role_of(accepted, &problem);
        CHECK(found.value_or("none") == role);
        CHECK(problem.empty());
        release(hold, pid);
    }
    pid_t pid = 0;
    int hold = connect_as(65531, port, &pid);
    tcp::socket stranger = acceptor.accept();
    std::string problem;
    CHECK_FALSE(roles.role_of(stranger, &problem).has_value());
    CHECK(problem == "the connecting socket belongs to uid 65531, which is none of the session's roles");
    release(hold, pid);
}

int main(int argc, char** argv) {
    if (!corral::test::running_as_root()) {
        std::cerr << "SKIP: making another uid's socket needs root\n";
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
