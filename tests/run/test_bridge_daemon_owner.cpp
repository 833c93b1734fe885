// The bridge talks only to a root gateway daemon: a Unix socket someone else
// put at --gateway's path gets neither the box's bytes nor its identity.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <cstring>
#include <string>

#include "run/bridge.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace asio = boost::asio;
using asio::ip::tcp;

// Root runs the impostor as uid 65534: skipped without root (doctest counts it).
TEST_CASE("a daemon socket that is not root's gets no identity and no bytes; no counts are believed from it" *
          doctest::skip(!corral::test::running_as_root())) {
    corral::test::TempDir dir("corral-daemon-owner");
    REQUIRE(::chmod(dir.path().c_str(), 0777) == 0);
    const std::string path = dir / "gw.sock";
    int report[2];
    REQUIRE(::pipe(report) == 0);

    // The impostor: uid 65534 listening where the daemon should be. It tells
    // the parent how many bytes its first client sent within 2 s.
    pid_t impostor = ::fork();
    REQUIRE(impostor >= 0);
    if (impostor == 0) {
        ::close(report[0]);
        if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) ::_exit(3);
        int l = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
        if (::bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(l, 4) != 0) ::_exit(4);
        ::chmod(path.c_str(), 0666);
        if (::write(report[1], "L", 1) != 1) ::_exit(5);  // listening
        long total = 0;
        for (int clients = 0; clients < 2; ++clients) {
            int c = ::accept(l, nullptr, nullptr);
            if (c < 0) ::_exit(6);
            pollfd p{c, POLLIN, 0};
            char buf[512];
            while (::poll(&p, 1, 2000) == 1) {
                ssize_t n = ::read(c, buf, sizeof buf);
                if (n <= 0) break;
                total += n;
            }
            ::close(c);
        }
        std::string n = std::to_string(total);
        if (::write(report[1], n.data(), n.size()) < 0) ::_exit(7);
        ::_exit(0);
    }
    ::close(report[1]);
    char ready = 0;
    REQUIRE(::read(report[0], &ready, 1) == 1);

    // 1. The bridge's relay for one box connection.
    asio::io_context ioc;
    tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    tcp::socket box_client(ioc);
    box_client.connect(acceptor.local_endpoint());
    tcp::socket box_side = acceptor.accept();
    asio::write(box_client, asio::buffer(std::string("CONNECT api.example:443 HTTP/1.1\r\nHost: x\r\n\r\n")));
    bool relay_ended = false;
    asio::co_spawn(ioc, corral::run::relay_to_daemon(std::move(box_side), path, corral::gateway::Identity{"w1", "run-1"}),
                   [&](std::exception_ptr) { relay_ended = true; });
    ioc.run_for(std::chrono::seconds(5));
    CHECK(relay_ended);

    // 2. The supervisor's count query for run.json.
    CHECK(!corral::run::query_daemon_counts(path, corral::gateway::Identity{"w1", "run-1"}, std::chrono::milliseconds(1000)).has_value());

    std::string received;
    char buf[64];
    for (ssize_t n; (n = ::read(report[0], buf, sizeof buf)) > 0;) received.append(buf, static_cast<std::size_t>(n));
    ::close(report[0]);
    int status = 0;
    REQUIRE(::waitpid(impostor, &status, 0) == impostor);
    CHECK_MESSAGE(WIFEXITED(status), status);
    CHECK_MESSAGE(WEXITSTATUS(status) == 0, "impostor failed at step " << WEXITSTATUS(status));
    CHECK_MESSAGE(received == "0", "bytes the impostor received: " << received);
}
