// A state dir's max_boxes (STATE/capacity.toml, run/box_slots.hpp): a run
// past it is refused at once naming who holds the boxes, waits with --wait
// (bounded), and a killed supervisor's slot is free again; sessions count.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "tests/supervisor/sandbox/sandbox_support.hpp"

namespace corral::test::sandbox {
namespace {

using namespace std::chrono_literals;

// A state dir of this test's own whose capacity.toml says `max_boxes`.
struct CapacityState {
    std::string path = fresh_dir("capacity-state", 0700);
    explicit CapacityState(int max_boxes) {
        std::ofstream(path + "/capacity.toml") << "max_boxes = " << max_boxes << "\n";
    }
    CorralArgs args(std::vector<std::string> extra = {}) const {
        CorralArgs a;
        a.flags = {"--state-dir", path};
        a.flags.insert(a.flags.end(), extra.begin(), extra.end());
        return a;
    }
};

// "corral run: run ID, run dir ..." -> ID
std::string started_run_id(const std::string& err) {
    const std::string head = "corral run: run ";
    auto at = err.find(head);
    if (at == std::string::npos) return {};
    return err.substr(at + head.size(), err.find(',', at) - at - head.size());
}

}  // namespace

TEST_CASE("max_boxes: a run past it is refused at once, naming the runs that hold the boxes; one ending frees its box") {
    CapacityState st(2);
    CorralProcess a({"/bin/sh", "-c", "echo ready; sleep 600"}, st.args());
    CorralProcess b({"/bin/sh", "-c", "echo ready; sleep 600"}, st.args());
    REQUIRE_MESSAGE(a.wait_for_out("ready", 60s), a.err());
    REQUIRE_MESSAGE(b.wait_for_out("ready", 60s), b.err());

    auto third = corral_sh("echo SHOULD-NOT-RUN", st.args());
    INFO("stderr: " << third.result.err);
    CHECK(third.result.exit_code == 125);
    CHECK(third.result.out.find("SHOULD-NOT-RUN") == std::string::npos);
    CHECK(third.result.err.find("capacity: all 2 boxes of " + st.path) != std::string::npos);
    CHECK(third.result.err.find(started_run_id(a.err()) + " run") != std::string::npos);
    CHECK(third.result.err.find(started_run_id(b.err()) + " run") != std::string::npos);
    CHECK(third.result.err.find("--wait") != std::string::npos);
    REQUIRE(third.record.has_value());
    CHECK((*third.record)["outcome"] == "setup_failed");

    a.signal(SIGTERM);
    CHECK(a.wait() != -1);
    auto fourth = corral_sh("echo RAN", st.args());
    INFO("stderr: " << fourth.result.err);
    CHECK(fourth.result.exit_code == 0);
    CHECK(fourth.result.out.find("RAN") != std::string::npos);
    b.signal(SIGTERM);
    b.wait();
}

TEST_CASE("max_boxes: --wait waits for a box to end, and gives up after its bound") {
    CapacityState st(1);
    CorralProcess holder({"/bin/sh", "-c", "echo ready; sleep 600"}, st.args());
    REQUIRE_MESSAGE(holder.wait_for_out("ready", 60s), holder.err());

    // Bounded: refused after the wait, saying how long it waited.
    auto gave_up = corral_sh("echo SHOULD-NOT-RUN", st.args({"--wait", "300ms"}));
    INFO("stderr: " << gave_up.result.err);
    CHECK(gave_up.result.exit_code == 125);
    CHECK(gave_up.result.err.find("waited 300ms") != std::string::npos);

    // Waiting: starts once the holder has ended, never beside it.
    CorralProcess waiter({"/bin/sh", "-c", "echo started-after-wait"}, st.args({"--wait", "5m"}));
    REQUIRE(waiter.wait_for_err("are in use; waiting up to 300s for one to end", 60s));
    CHECK(waiter.out().find("started-after-wait") == std::string::npos);
    CHECK(process_alive(holder.pid()));
    holder.signal(SIGTERM);
    CHECK(holder.wait() != -1);
    CHECK(waiter.wait() == 0);
    CHECK(waiter.out().find("started-after-wait") != std::string::npos);
}

TEST_CASE("max_boxes: a killed supervisor's box is free again at once; a session holds one for its life") {
    CapacityState st(1);
    {
        CorralProcess crashed({"/bin/sh", "-c", "echo ready; sleep 600"}, st.args());
        REQUIRE_MESSAGE(crashed.wait_for_out("ready", 60s), crashed.err());
        crashed.kill_supervisor_only();
        crashed.wait();
    }
    auto after = corral_sh("echo RAN", st.args());
    INFO("stderr: " << after.result.err);
    CHECK(after.result.exit_code == 0);
    CHECK(after.result.out.find("RAN") != std::string::npos);

    // A session takes the one box until it is stopped.
    const std::string name = "cap-" + std::to_string(::getpid());
    auto start = run({corral_bin(), "session", "start", "--name", name, "--state-dir", st.path, "--rootfs",
                      rootfs(), "--uid-range", uid_range()});
    INFO("session start: " << start.err);
    REQUIRE(start.exit_code == 0);
    auto refused = corral_sh("echo SHOULD-NOT-RUN", st.args());
    CHECK(refused.result.exit_code == 125);
    CHECK(refused.result.err.find(" session") != std::string::npos);
    auto stop = run({corral_bin(), "session", "stop", name, "--state-dir", st.path});
    INFO("session stop: " << stop.err);
    CHECK(stop.exit_code == 0);
    auto last = corral_sh("echo RAN", st.args());
    CHECK(last.result.exit_code == 0);
}

}  // namespace corral::test::sandbox
