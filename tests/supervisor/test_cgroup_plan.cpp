// Where each limit is enforced, for the layouts users run: pure v2, hybrid, v1 only.
// (The real cgroups are exercised in cgroup_integration.cpp.)
#include <doctest/doctest.h>

#include "base/sys_error.hpp"
#include "supervisor/cgroup.hpp"

using namespace corral::supervisor;

namespace {

// This machine's layout (hybrid: v1 controllers, an almost empty cgroup2).
const char* kHybrid =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

// A systemd pure-v2 host.
const char* kPureV2 =
    "22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:5 - proc proc rw\n"
    "26 21 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

// Older distributions: v1 only, cpu and cpuacct co-mounted, a space in a mount point.
const char* kV1Only =
    "30 25 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n"
    "31 25 0:27 / /sys/fs/cgroup/my\\040memory rw,nosuid - cgroup cgroup rw,memory\n";

CgroupLimits all_limits() {
    CgroupLimits l;
    l.memory_bytes = 64ull << 20;
    l.pids = 32;
    l.cpus = 1.5;
    return l;
}

std::string usage_error(const CgroupHierarchies& h, const CgroupLimits& l) {
    try {
        plan_run_cgroups(h, l);
    } catch (const corral::UsageError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("mountinfo: hybrid layout") {
    auto h = parse_cgroup_mounts(kHybrid);
    REQUIRE(h.v2_mount.has_value());
    CHECK(*h.v2_mount == "/sys/fs/cgroup/unified");
    CHECK(h.v1_mounts.at("memory") == "/sys/fs/cgroup/memory");
    CHECK(h.v1_mounts.at("pids") == "/sys/fs/cgroup/pids");
    CHECK(h.v1_mounts.at("cpu") == "/sys/fs/cgroup/cpu");
    CHECK(h.v1_mounts.count("hugetlb") == 0);
}

TEST_CASE("mountinfo: pure v2 and v1-only layouts, co-mounted controllers, escaped paths") {
    auto v2 = parse_cgroup_mounts(kPureV2);
    REQUIRE(v2.v2_mount.has_value());
    CHECK(*v2.v2_mount == "/sys/fs/cgroup");
    CHECK(v2.v1_mounts.empty());
    auto v1 = parse_cgroup_mounts(kV1Only);
    CHECK_FALSE(v1.v2_mount.has_value());
    CHECK(v1.v1_mounts.at("cpu") == "/sys/fs/cgroup/cpu,cpuacct");
    CHECK(v1.v1_mounts.at("cpuacct") == "/sys/fs/cgroup/cpu,cpuacct");
    CHECK(v1.v1_mounts.at("memory") == "/sys/fs/cgroup/my memory");
}

TEST_CASE("plan: pure v2 puts every limit in one v2 cgroup") {
    auto h = parse_cgroup_mounts(kPureV2);
    h.v2_controllers = {"cpuset", "cpu", "io", "memory", "hugetlb", "pids", "rdma", "misc"};
    auto plan = plan_run_cgroups(h, all_limits());
    REQUIRE(plan.v2_mount.has_value());
    CHECK(*plan.v2_mount == "/sys/fs/cgroup");
    CHECK(plan.v2_controllers == std::vector<std::string>{"memory", "pids", "cpu"});
    CHECK(plan.v1_dirs.empty());
    auto none = plan_run_cgroups(h, CgroupLimits{});
    CHECK(none.v2_mount == h.v2_mount);
    CHECK(none.v2_controllers.empty());
    CHECK(none.v1_dirs.empty());
}

TEST_CASE("plan: hybrid puts limits on v1 and keeps a v2 cgroup for membership and cgroup.kill") {
    auto h = parse_cgroup_mounts(kHybrid);
    h.v2_controllers = {"hugetlb"};
    auto plan = plan_run_cgroups(h, all_limits());
    CHECK(plan.v2_mount == h.v2_mount);
    CHECK(plan.v2_controllers.empty());
    REQUIRE(plan.v1_dirs.size() == 3);
    CHECK(plan.v1_dirs.at("/sys/fs/cgroup/memory") == std::vector<std::string>{"memory"});
    CHECK(plan.v1_dirs.at("/sys/fs/cgroup/pids") == std::vector<std::string>{"pids"});
    CHECK(plan.v1_dirs.at("/sys/fs/cgroup/cpu") == std::vector<std::string>{"cpu"});
    // A controller on v2 wins over v1 when both exist.
    h.v2_controllers = {"pids"};
    CgroupLimits pids_only;
    pids_only.pids = 10;
    auto mixed = plan_run_cgroups(h, pids_only);
    CHECK(mixed.v2_controllers == std::vector<std::string>{"pids"});
    // Memory on v1 without --memory: a v1 memory cgroup all the same, for the
    // socket-buffer limit (memory.kmem.tcp) alone.
    REQUIRE(mixed.v1_dirs.size() == 1);
    CHECK(mixed.v1_dirs.at("/sys/fs/cgroup/memory") == std::vector<std::string>{"memory"});
    CHECK(mixed.v1_memory_for_sockets_only);
    CHECK_FALSE(plan.v1_memory_for_sockets_only);
}

TEST_CASE("plan: v1 only, co-mounted cpu; with no limits the run is still tracked in v1") {
    auto h = parse_cgroup_mounts(kV1Only);
    CgroupLimits l;
    l.cpus = 0.5;
    auto plan = plan_run_cgroups(h, l);
    CHECK_FALSE(plan.v2_mount.has_value());
    CHECK(plan.v1_dirs.at("/sys/fs/cgroup/cpu,cpuacct") == std::vector<std::string>{"cpu"});
    auto none = plan_run_cgroups(h, CgroupLimits{});
    REQUIRE(none.v1_dirs.size() == 1);
    CHECK(none.v1_dirs.begin()->first == "/sys/fs/cgroup/my memory");  // no pids hierarchy: memory
    // ... where the socket-buffer limit is set (memory.kmem.tcp), not a memory limit.
    CHECK(none.v1_dirs.begin()->second == std::vector<std::string>{"memory"});
    CHECK(none.v1_memory_for_sockets_only);
}

TEST_CASE("plan: a limit whose controller is nowhere is an error naming option and controller") {
    auto h = parse_cgroup_mounts(kV1Only);  // no pids anywhere
    CgroupLimits l;
    l.pids = 64;
    std::string msg = usage_error(h, l);
    CHECK(msg.rfind("--pids needs the pids cgroup controller, which is neither enabled in cgroup v2 nor mounted as v1", 0) == 0);
    CHECK(msg.find("run without --pids") != std::string::npos);

    auto v2 = parse_cgroup_mounts(kPureV2);
    v2.v2_controllers = {"cpu", "pids"};  // memory not delegated
    CgroupLimits m;
    m.memory_bytes = 1 << 20;
    msg = usage_error(v2, m);
    CHECK(msg.rfind("--memory needs the memory cgroup controller", 0) == 0);
    CHECK(msg.find("cgroup2 at /sys/fs/cgroup offers [cpu pids]") != std::string::npos);

    CHECK(usage_error(CgroupHierarchies{}, CgroupLimits{}).find("neither cgroup2 nor a v1 pids or memory hierarchy") !=
          std::string::npos);
}
