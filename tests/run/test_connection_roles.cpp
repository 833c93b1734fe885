// ConnectionRoles against the kernel: a connection is its socket maker's
// role, and a socket no role made is refused with why (fail closed). On
// loopback connections this test makes in the host's namespace; the box's
// own namespace is the sandbox_sessions suite's (every role's ledger line).
// Needs root (a socket of another uid): exit 77 without it.
#include <doctest/doctest.h>

#include <iostream>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "gateway/socket_owner.hpp"
#include "run/egress.hpp"
#include "tests/support/process.hpp"

namespace asio = boost::asio;
using asio::ip::tcp;

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
        corral::test::ConnectionAs peer(uid, port);
        tcp::socket accepted = acceptor.accept();
        auto found = roles.role_of(accepted);
        REQUIRE_MESSAGE(found.has_value(), (found ? std::string() : found.problem()));
        CHECK(*found == role);
        CHECK(peer.release() == 0);
    }
    corral::test::ConnectionAs stranger_peer(65531, port);
    tcp::socket stranger = acceptor.accept();
    auto none = roles.role_of(stranger);
    REQUIRE_FALSE(none.has_value());
    CHECK(none.problem() == "the connecting socket belongs to uid 65531, which is none of the session's roles");
    CHECK(stranger_peer.release() == 0);
}

int main(int argc, char** argv) {
    if (!corral::test::running_as_root()) {
        std::cerr << "SKIP: making another uid's socket needs root\n";
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
