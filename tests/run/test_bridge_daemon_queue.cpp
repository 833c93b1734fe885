// The bridge against a loaded gateway daemon: a box's connection that finds
// the daemon's queue of unaccepted connections full waits for room and is
// relayed once the daemon catches up, instead of being dropped (an EAGAIN
// connect that Asio would call connected; found by tools/bench/scale.sh with
// 256 boxes on 2 CPUs).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "run/bridge.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

sockaddr_un address_of(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    return addr;
}

// A non-blocking connect to `path`: the socket, or -1 with errno (EAGAIN: the queue is full).
int try_connect(const std::string& path) {
    int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un addr = address_of(path);
    if (::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return s;
    const int err = errno;
    ::close(s);
    errno = err;
    return -1;
}

// Everything `count` accepted connections send within `wait` each.
std::string accept_and_read(int listener, int count, std::chrono::milliseconds wait) {
    std::string all;
    for (int i = 0; i < count; ++i) {
        pollfd lp{listener, POLLIN, 0};
        if (::poll(&lp, 1, static_cast<int>(wait.count())) != 1) break;
        int c = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) break;
        pollfd p{c, POLLIN, 0};
        char buf[512];
        while (all.find("CONNECT api.example:443") == std::string::npos &&
               ::poll(&p, 1, static_cast<int>(wait.count())) == 1) {
            ssize_t n = ::read(c, buf, sizeof buf);
            if (n <= 0) break;
            all.append(buf, static_cast<std::size_t>(n));
        }
        ::close(c);
    }
    return all;
}

}  // namespace

// The relay checks that the daemon is root's, so the test's listener must be.
TEST_CASE("a box's connection waits for room in a full daemon queue and is relayed once the daemon accepts" *
          doctest::skip(!corral::test::running_as_root())) {
    corral::test::TempDir dir("corral-daemon-queue");
    const std::string path = dir / "gw.sock";
    int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr = address_of(path);
    REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(listener, 1) == 0);

    // The daemon falls behind: its queue fills with connections it has not accepted.
    std::vector<int> fillers;
    for (int i = 0; i < 16; ++i) {
        int s = try_connect(path);
        if (s < 0) break;
        fillers.push_back(s);
    }
    REQUIRE(!fillers.empty());
    REQUIRE(fillers.size() < 16);
    CHECK(try_connect(path) < 0);
    CHECK(errno == EAGAIN);

    asio::io_context ioc;
    tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    tcp::socket box_client(ioc);
    box_client.connect(acceptor.local_endpoint());
    tcp::socket box_side = acceptor.accept();
    asio::write(box_client, asio::buffer(std::string("CONNECT api.example:443 HTTP/1.1\r\nHost: x\r\n\r\n")));
    std::string line = "CORRAL-TEST w1 run-1\n";
    asio::co_spawn(ioc, corral::run::relay_to_daemon(std::move(box_side), path, line), [](std::exception_ptr) {});

    // 300 ms later the daemon catches up: the fillers (gone by then), then the box's connection.
    std::string received;
    std::thread daemon([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        for (int s : fillers) ::close(s);
        received = accept_and_read(listener, static_cast<int>(fillers.size()) + 1, std::chrono::milliseconds(3000));
    });
    ioc.run_for(std::chrono::seconds(5));
    daemon.join();
    ::close(listener);
    CHECK_MESSAGE(received.find("CORRAL-TEST w1 run-1\n") == 0, "the daemon received: " << received);
    CHECK(received.find("CONNECT api.example:443 HTTP/1.1") != std::string::npos);
}
