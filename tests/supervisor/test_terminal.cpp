// RawTerminal::restore against a pty pair the test drives as a terminal
// emulator would: answers to queries a box wrote that arrive after the box
// is gone (a cursor position, device attributes) are not left in the
// caller's input for its next program to read as typed.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

#include "base/fd.hpp"
#include "supervisor/terminal.hpp"

using namespace corral;
using namespace corral::supervisor;

namespace {

// The caller's terminal: `slave` is what corral holds, `master` the
// emulator's end.
struct Pty {
    Fd master, slave;
    Pty() {
        master = Fd(posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
        REQUIRE(master.valid());
        REQUIRE(grantpt(master.get()) == 0);
        REQUIRE(unlockpt(master.get()) == 0);
        slave = Fd(::open(ptsname(master.get()), O_RDWR | O_NOCTTY | O_CLOEXEC));
        REQUIRE(slave.valid());
    }
    int pending_input() const {
        int n = -1;
        REQUIRE(ioctl(slave.get(), FIONREAD, &n) == 0);
        return n;
    }
};

// The emulator: answers each cursor-position query (ESC [ 6 n) it reads
// with a position, as a terminal does, until told to stop.
class Emulator {
public:
    explicit Emulator(int master) : master_(master), thread_([this] { run(); }) {}
    ~Emulator() {
        stop_ = true;
        thread_.join();
    }
    int queries() const { return queries_.load(); }

private:
    void run() {
        std::string seen;
        while (!stop_) {
            pollfd p{master_, POLLIN, 0};
            if (poll(&p, 1, 20) <= 0) continue;
            char buf[256];
            ssize_t n = read(master_, buf, sizeof buf);
            if (n <= 0) return;
            seen.append(buf, static_cast<std::size_t>(n));
            for (auto at = seen.find("\033[6n"); at != std::string::npos; at = seen.find("\033[6n")) {
                seen.erase(0, at + 4);
                ++queries_;
                if (write(master_, "\033[5;1R", 6) != 6) return;  // no doctest assertion off the test thread
            }
        }
    }
    int master_;
    std::atomic<bool> stop_{false};
    std::atomic<int> queries_{0};
    std::thread thread_;
};

}  // namespace

TEST_CASE("restoring the terminal discards the answers to the box's queries that came after it") {
    Pty pty;
    RawTerminal raw(pty.slave.get());
    raw.enter_raw();
    // The box is gone; its queries' answers arrive now, in the caller's input.
    const std::string late = "\033[40;121R\033[?1;2c";
    REQUIRE(write(pty.master.get(), late.data(), late.size()) == static_cast<ssize_t>(late.size()));
    Emulator emulator(pty.master.get());
    CHECK(raw.restore() == "");
    CHECK(pty.pending_input() == 0);
    CHECK(emulator.queries() == 1);  // corral's own query, answered and discarded too
    CHECK(!raw.raw());
}

TEST_CASE("restoring a terminal that answers nothing still discards pending input, within the bound") {
    Pty pty;
    RawTerminal raw(pty.slave.get());
    raw.enter_raw();
    REQUIRE(write(pty.master.get(), "\033[?1;2c", 7) == 7);
    CHECK(raw.restore() == "");
    CHECK(pty.pending_input() == 0);
}
