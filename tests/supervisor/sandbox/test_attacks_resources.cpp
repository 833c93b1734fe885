// Attempts to take more of the host than the box's share: socket buffers
// nobody reads (the host's TCP/UDP pools), an OOM aimed at corral's init, and
// open files beyond the host's file table. Like test_attacks.cpp, every
// script prints START first and its outcome last (require_ran).
#include <doctest/doctest.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/supervisor/sandbox/sandbox_support.hpp"

namespace corral::test::sandbox {
namespace {

std::vector<unsigned long long> host_numbers(const std::string& path) {
    std::vector<unsigned long long> out;
    std::istringstream in(read_file(path));
    for (unsigned long long v; in >> v;) out.push_back(v);
    return out;
}

bool memory_controller_on_v1() {
    for (const auto& line : lines(read_file("/proc/self/mountinfo")))
        if (line.find(" - cgroup ") != std::string::npos && line.find(",memory") != std::string::npos) return true;
    return false;
}

long long kib_field(const std::string& out, const std::string& key) {
    std::string v = field(out, key);
    return v.empty() ? -1 : std::stoll(v);
}

TEST_CASE("socket buffers nobody reads cannot fill the host's TCP/UDP pools: --memory bounds them, and a default does without it") {
    // 60 UDP sockets x an 8 MiB receive buffer, 200 connected loopback TCP
    // pairs written until they block: ~480 MiB UDP and ~1 GiB TCP of the
    // host-wide pools (/proc/net/sockstat "mem") when nothing charges them.
    CorralArgs limited;
    limited.flags = {"--memory", "64M"};
    auto run = corral_sh("echo START; kernel-probe sockets udp 60; kernel-probe sockets tcp 200; echo DONE", limited);
    INFO(transcript(run.result));
    require_ran(run);
    const long long slack_kib = 32 << 10;  // other sockets on the host, the kernel's forced TCP allocations
    CHECK(kib_field(run.result.out, "udp-grew-kib") >= 0);
    CHECK(kib_field(run.result.out, "udp-grew-kib") < (64 << 10) + slack_kib);
    CHECK(kib_field(run.result.out, "tcp-grew-kib") >= 0);
    CHECK(kib_field(run.result.out, "tcp-grew-kib") < (64 << 10) + slack_kib);
    check_nothing_left(run);

    if (!memory_controller_on_v1()) {
        MESSAGE("memory controller on cgroup v2: socket buffers are charged to memory.current (tests/vm); "
                "without --memory nothing bounds them");
        return;
    }
    // Without --memory: 1/8 of the host's socket pressure threshold.
    auto tcp_mem = host_numbers("/proc/sys/net/ipv4/tcp_mem");
    auto udp_mem = host_numbers("/proc/sys/net/ipv4/udp_mem");
    REQUIRE(tcp_mem.size() == 3);
    REQUIRE(udp_mem.size() == 3);
    const long long budget_kib =
        std::max<long long>(16 << 10, static_cast<long long>(std::min(tcp_mem[1], udp_mem[1]) * (sysconf(_SC_PAGESIZE) / 1024) / 8));
    auto open_run = corral_sh("echo START; kernel-probe sockets udp 60; echo DONE");
    INFO(transcript(open_run.result));
    require_ran(open_run);
    INFO("budget KiB " << budget_kib);
    CHECK(kib_field(open_run.result.out, "udp-grew-kib") >= 0);
    CHECK(kib_field(open_run.result.out, "udp-grew-kib") < budget_kib + slack_kib);
    check_nothing_left(open_run);
}

TEST_CASE("an OOM in the box kills the box's processes, never corral's init: exit 137 and the box's OOM reported") {
    CorralArgs args;
    args.flags = {"--memory", "64M", "--timeout", "60s"};
    // tmpfs pages belong to no process: once they fill the cgroup, the OOM
    // killer can only pick among processes that hold little. It must pick the
    // box's (oom_score_adj 1000), never corral-init or the reaper: the
    // command (the last dd, exec'd) dies of SIGKILL and that is the status.
    auto run = corral_sh("echo START; kernel-probe | grep oom-score-adj; i=0; while [ $i -lt 20 ]; do "
                         "dd if=/dev/zero of=/tmp/fill$i bs=1M count=16 2>/dev/null; i=$((i+1)); done; "
                         "exec dd if=/dev/zero of=/tmp/last bs=1M count=64",
                         args);
    INFO(transcript(run.result));
    REQUIRE(!run.result.timed_out);
    REQUIRE(run.result.out.find("START") != std::string::npos);
    CHECK(field(run.result.out, "oom-score-adj") == "1000");
    CHECK(run.result.exit_code == 137);
    CHECK(run.result.err.find("init exited without reporting") == std::string::npos);
    CHECK(run.result.err.find("reached its memory limit") != std::string::npos);
    REQUIRE(run.record.has_value());
    CHECK((*run.record)["oom_killed"] == true);
    check_nothing_left(run);
}

TEST_CASE("the box's open files: a deliberate RLIMIT_NOFILE it cannot raise, and tasks x files below the host's file table") {
    const unsigned long long pid_max = host_numbers("/proc/sys/kernel/pid_max").at(0);
    const unsigned long long threads_max = host_numbers("/proc/sys/kernel/threads-max").at(0);
    const unsigned long long file_max = host_numbers("/proc/sys/fs/file-max").at(0);
    const unsigned long long tasks = std::max(64ULL, std::min({4096ULL, pid_max / 32, threads_max / 32}));
    const unsigned long long files = std::max(64ULL, std::min(1024ULL, file_max / 4 / tasks));
    auto run = corral_sh("echo START; kernel-probe; echo DONE");
    INFO(transcript(run.result));
    require_ran(run);
    CHECK(field(run.result.out, "nproc-soft") == std::to_string(tasks));
    CHECK(field(run.result.out, "nofile-soft") == std::to_string(files));
    CHECK(field(run.result.out, "nofile-hard") == std::to_string(files));
    CHECK(field(run.result.out, "nofile-raise") == "EPERM");
    CHECK(tasks * files + files < file_max / 2);
    check_nothing_left(run);

    CorralArgs explicit_limit;
    explicit_limit.flags = {"--nofile", "100"};
    auto hundred = corral_sh("echo START; kernel-probe; echo DONE", explicit_limit);
    INFO(transcript(hundred.result));
    require_ran(hundred);
    CHECK(field(hundred.result.out, "nofile-soft") == "100");
    CHECK(field(hundred.result.out, "nofile-hard") == "100");
    check_nothing_left(hundred);

    // A limit whose product could take the host's whole table is refused
    // before anything starts.
    CorralArgs too_many;
    too_many.flags = {"--nofile", std::to_string(file_max / tasks + 1)};
    auto refused = corral_sh("echo START", too_many);
    INFO(transcript(refused.result));
    CHECK(refused.result.exit_code == 125);
    CHECK(refused.result.out.find("START") == std::string::npos);
    CHECK(refused.result.err.find("fs.file-max") != std::string::npos);
}

}  // namespace
}  // namespace corral::test::sandbox
