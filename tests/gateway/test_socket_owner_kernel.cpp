// tcp_socket_owner against the kernel, on loopback connections this test
// makes: the owner of a live peer socket, and errors (never a uid) for a
// peer that is gone.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>

#include <cerrno>

#include "base/sys_error.hpp"
#include "gateway/socket_owner.hpp"
#include "tests/support/process.hpp"

namespace asio = boost::asio;
using asio::ip::tcp;
using corral::gateway::tcp_socket_owner;

namespace {

int lookup_error(const tcp::endpoint& local, const tcp::endpoint& remote) {
    try {
        (void)tcp_socket_owner(local, remote);
        return 0;
    } catch (const corral::SysError& e) {
        return e.error();
    }
}

}  // namespace

TEST_CASE("the owner of both ends of a loopback connection is this process's uid") {
    for (const char* addr : {"127.0.0.1", "::1"}) {
        CAPTURE(addr);
        asio::io_context ioc;
        tcp::acceptor acceptor(ioc);
        boost::system::error_code ec;
        tcp::endpoint ep(asio::ip::make_address(addr), 0);
        acceptor.open(ep.protocol());
        acceptor.bind(ep, ec);
        if (ec) {
            MESSAGE("skipped ", addr, ": ", ec.message());
            continue;
        }
        acceptor.listen();
        tcp::socket client(ioc);
        client.connect(acceptor.local_endpoint());
        tcp::socket accepted = acceptor.accept();
        // As the gateway asks: the peer's own address first, then ours.
        CHECK(tcp_socket_owner(accepted.remote_endpoint(), accepted.local_endpoint()) == ::geteuid());
        CHECK(tcp_socket_owner(accepted.local_endpoint(), accepted.remote_endpoint()) == ::geteuid());
        // The same on one sock_diag socket kept open, asked twice.
        corral::Fd diag = corral::gateway::open_sock_diag_socket();
        CHECK(tcp_socket_owner(diag.get(), accepted.remote_endpoint(), accepted.local_endpoint()) == ::geteuid());
        CHECK(tcp_socket_owner(diag.get(), accepted.local_endpoint(), accepted.remote_endpoint()) == ::geteuid());
    }
}

TEST_CASE("a peer that closed first is in TIME_WAIT (reported as uid 0): refused, not root") {
    asio::io_context ioc;
    tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    tcp::socket client(ioc);
    client.connect(acceptor.local_endpoint());
    tcp::socket accepted = acceptor.accept();
    auto theirs = accepted.remote_endpoint();
    auto ours = accepted.local_endpoint();
    client.close();  // the active closer ends in TIME_WAIT once we close too
    char byte;
    boost::system::error_code ec;
    asio::read(accepted, asio::buffer(&byte, 1), ec);  // EOF: their FIN arrived
    accepted.close();
    ::usleep(50'000);
    int err = lookup_error(theirs, ours);
    CHECK((err == ESTALE || err == ENOENT));
    CHECK(err != 0);
}

TEST_CASE("a four-tuple nobody has: an error, never a uid") {
    asio::io_context ioc;
    tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    // A listener owns the port, and no connection exists: the kernel may
    // answer with the listener (ESTALE) or with nothing (ENOENT).
    int err = lookup_error(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 1),
                           acceptor.local_endpoint());
    CHECK((err == ENOENT || err == ESTALE));
    err = lookup_error(acceptor.local_endpoint(), tcp::endpoint(asio::ip::make_address("127.0.0.1"), 1));
    CHECK((err == ENOENT || err == ESTALE));
}

TEST_CASE("a socket made by uid 65534 is 65534's, whoever accepts it") {
    if (!corral::test::running_as_root()) {
        MESSAGE("skipped: making another uid's socket needs root");
        return;
    }
    asio::io_context ioc;
    tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    auto port = acceptor.local_endpoint().port();
    corral::test::ConnectionAs peer(65534, port);
    tcp::socket accepted = acceptor.accept();
    CHECK(tcp_socket_owner(accepted.remote_endpoint(), accepted.local_endpoint()) == 65534);
    CHECK(peer.release() == 0);
}
