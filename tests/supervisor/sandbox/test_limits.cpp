// Resource attacks and survival attempts: a fork bomb and a memory hog are
// stopped by the run's cgroup limits, a detached daemon does not outlive the
// run, and the sandbox does not outlive a SIGKILLed supervisor (whose leftovers
// the next corral run removes).
#include <doctest/doctest.h>

#include <algorithm>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "tests/supervisor/sandbox/sandbox_support.hpp"

namespace fs = std::filesystem;

namespace corral::test::sandbox {
namespace {

long long number_field(const std::string& text, const std::string& key) {
    std::string v = field(text, key);
    try {
        return v.empty() ? -1 : std::stoll(v);
    } catch (...) {
        return -1;
    }
}

TEST_CASE("a fork bomb is stopped by --pids 64 and the host stays fine") {
    CorralArgs args;
    // --cpus keeps the spinning bomb from starving the rest of the machine.
    args.flags = {"--pids", "64", "--cpus", "0.5", "--timeout", "60s"};
    // Every bomb process loops forking copies of itself until a fork fails
    // (busybox sh then exits), so the bomb grows to whatever ceiling the kernel
    // enforces and collapses there. The main shell waits 4 s using only
    // builtins (a fifo read with a timeout), because while the bomb holds every
    // pid the shell itself cannot fork either. It then stops every other process
    // of the box (kill -1 skips the caller and init; a fork racing the signal is
    // aborted by the kernel, so the set is frozen) and counts the box's
    // processes by globbing /proc. Counting a live bomb would not be a snapshot:
    // readdir walks /proc while the bomb's processes die and are replaced, so one
    // glob can list a dead pid and its successor both (CI once saw 66 with the
    // cgroup's peak at 64). The cgroup's peak shows how high the bomb got.
    auto run = corral_sh(R"SH(echo START
mkfifo /tmp/clock; exec 3<>/tmp/clock
( b() { while :; do b & done; }; b ) 2>/tmp/bomb.err &
read -t 4 x <&3
kill -STOP -1
set -- /proc/[0-9]*; echo "procs=$#"
kill -KILL -1
read -t 1 x <&3
while read -r l; do case "$l" in *fork*) echo "fork-refused=yes"; break;; esac; done < /tmp/bomb.err
echo DONE
exit 0)SH",
                         args);
    INFO(transcript(run.result));
    REQUIRE(!run.result.timed_out);
    REQUIRE(run.result.out.find("START") != std::string::npos);
    REQUIRE(run.result.out.find("DONE") != std::string::npos);
    CHECK(run.result.exit_code == 0);
    long long procs = number_field(run.result.out, "procs");
    CHECK(procs >= 1);
    CHECK(procs <= 64);
    CHECK(field(run.result.out, "fork-refused") == "yes");
    REQUIRE(run.record.has_value());
    const auto& rec = *run.record;
    CHECK(rec["limits"]["pids"] == 64);
    REQUIRE_MESSAGE(rec["peak_pids"].is_number(), "peak_pids: " << rec["peak_pids"].dump());
    CHECK(rec["peak_pids"].get<long long>() <= 64);
    CHECK(rec["peak_pids"].get<long long>() >= 48);  // the bomb really reached the limit
    CHECK(corral::test::run({"true"}).exit_code == 0);  // the host can still fork
    check_nothing_left(run);
}

TEST_CASE("without --pids the command's UID is still held to min(4096, pid_max/32, threads-max/32) tasks, and cannot raise that") {
    const auto host_number = [](const char* path) { return std::stoull(read_file(path)); };
    const std::string expected = std::to_string(std::max<unsigned long long>(
        64, std::min({4096ULL, host_number("/proc/sys/kernel/pid_max") / 32, host_number("/proc/sys/kernel/threads-max") / 32})));
    auto run = corral_sh(R"SH(echo START
grep '^Max processes' /proc/self/limits | { read -r a b soft hard unit; echo "nproc-soft=$soft"; echo "nproc-hard=$hard"; }
sh -c 'ulimit -u unlimited' 2>/dev/null; echo "raise-rc=$?"
echo DONE)SH");
    INFO(transcript(run.result));
    REQUIRE(run.result.out.find("DONE") != std::string::npos);
    CHECK(field(run.result.out, "nproc-soft") == expected);
    CHECK(field(run.result.out, "nproc-hard") == expected);
    CHECK(field(run.result.out, "raise-rc") != "0");
    check_nothing_left(run);

    CorralArgs with_pids;
    with_pids.flags = {"--pids", "100"};
    auto limited = corral_sh("echo START; grep '^Max processes' /proc/self/limits; echo DONE", with_pids);
    INFO(transcript(limited.result));
    CHECK(limited.result.out.find("Max processes             100                  100") != std::string::npos);
    check_nothing_left(limited);
}

TEST_CASE("a memory hog is killed by --memory 64M") {
    CorralArgs args;
    args.flags = {"--memory", "64M", "--timeout", "60s"};
    // dd with a 256 MiB block mallocs it and fills it from /dev/zero: the
    // command itself is the hog, so its SIGKILL is corral's exit status.
    auto run = corral_sh("echo START; exec dd if=/dev/zero of=/dev/null bs=256M count=1", args);
    INFO(transcript(run.result));
    REQUIRE(!run.result.timed_out);
    REQUIRE(run.result.out.find("START") != std::string::npos);
    CHECK(run.result.exit_code == 137);
    REQUIRE(run.record.has_value());
    const auto& rec = *run.record;
    INFO(rec.dump());
    CHECK(rec["signal"] == 9);
    CHECK(rec["exit_code"].is_null());
    CHECK(rec["status"] == 137);
    CHECK(rec["limits"]["memory_bytes"] == 64LL * 1024 * 1024);
    REQUIRE(rec["peak_memory_bytes"].is_number());
    long long peak = rec["peak_memory_bytes"].get<long long>();
    CHECK(peak >= 48LL * 1024 * 1024);
    CHECK(peak <= 68LL * 1024 * 1024);
    check_nothing_left(run);
}

TEST_CASE("a double-forked, setsid, SIGTERM-ignoring daemon is gone after teardown") {
    std::string ws = fresh_dir("ws", 01777);
    CorralArgs args;
    args.flags = {"--workspace", ws};
    auto run = corral_sh(R"SH(echo START
( setsid /bin/sh -c 'trap "" TERM HUP INT; echo $$ > /workspace/daemon.pid; exec 0</dev/null 1>/dev/null 2>&1; while :; do sleep 1; done' & )
i=0; while [ ! -s /workspace/daemon.pid ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
D=$(cat /workspace/daemon.pid)
kill -0 "$D" && echo "daemon-alive=$D"
echo DONE
exit 0)SH",
                         args);
    INFO(transcript(run.result));
    REQUIRE(!run.result.timed_out);
    REQUIRE(run.result.out.find("DONE") != std::string::npos);
    CHECK(run.result.exit_code == 0);
    CHECK(!field(run.result.out, "daemon-alive").empty());
    check_nothing_left(run);
}

TEST_CASE("the sandbox does not outlive a SIGKILLed supervisor, and the next run removes the leftovers") {
    CorralProcess sup({"/bin/sh", "-c", "echo \"START uid=$(id -u)\"; exec sleep 1000"});
    REQUIRE_MESSAGE(sup.wait_for_out("START uid=", std::chrono::seconds(30)), sup.out() << sup.err());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let `exec sleep` happen
    const std::string uid_text = field(sup.out(), "START uid");
    REQUIRE(!uid_text.empty());
    const uid_t uid = static_cast<uid_t>(std::stoul(uid_text));

    auto sandbox = processes_of_uid(uid);
    REQUIRE_MESSAGE(!sandbox.empty(), "no process of UID " << uid << " while the run is alive");
    // The run id is the name of the run's cgroup, visible in /proc/<pid>/cgroup.
    std::string run_id;
    for (const auto& line : lines(read_file("/proc/" + std::to_string(sandbox.front()) + "/cgroup"))) {
        auto at = line.find("/corral/");
        if (at == std::string::npos) continue;
        run_id = line.substr(at + 8);
        run_id = run_id.substr(0, run_id.find('/'));
        break;
    }
    REQUIRE_MESSAGE(!run_id.empty(), "sandbox process " << sandbox.front() << " is in no corral/<run-id> cgroup:\n"
                                                        << read_file("/proc/" + std::to_string(sandbox.front()) +
                                                                     "/cgroup"));
    MESSAGE("run " << run_id << " uid " << uid << " sandbox processes:\n" << describe_processes(sandbox));

    sup.kill_supervisor_only();  // corral's pid only: the sandbox must die by itself
    auto left = wait_until_no_process_of_uid(uid, std::chrono::seconds(10));
    CHECK_MESSAGE(left.empty(), "sandbox processes survived the supervisor:\n" << describe_processes(left));
    CHECK(sup.wait(std::chrono::seconds(10)) == 128 + SIGKILL);
    // Whatever the dead supervisor left (cgroup dirs, lock, scratch) is the
    // next run's to remove; log it so a failure below is easy to read.
    MESSAGE("left by the killed supervisor: cgroups=" << cgroup_dirs_of_run(run_id).size()
                                                       << " lock=" << fs::exists(lock_path(uid))
                                                       << " scratch=" << fs::exists(scratch_path(run_id)));

    auto next = corral_run({"/bin/true"});
    INFO(transcript(next.result));
    CHECK(next.result.exit_code == 0);
    check_nothing_left(next);
    check_nothing_left(run_id, uid);
    auto cg = cgroup_dirs_of_run(run_id);
    CHECK_MESSAGE(cg.empty(), "stale cgroup " << (cg.empty() ? "" : cg.front()));
}

TEST_CASE("SIGTERM to corral kills the sandbox and still tears it down verifiably (exit 143)") {
    CorralProcess sup({"/bin/sh", "-c", "echo \"START uid=$(id -u)\"; exec sleep 1000"});
    REQUIRE_MESSAGE(sup.wait_for_out("START uid=", std::chrono::seconds(30)), sup.out() << sup.err());
    const uid_t uid = static_cast<uid_t>(std::stoul(field(sup.out(), "START uid")));
    REQUIRE(!processes_of_uid(uid).empty());
    REQUIRE(kill(sup.pid(), SIGTERM) == 0);
    int code = sup.wait(std::chrono::seconds(30));
    INFO(sup.out() << "--- stderr ---\n" << sup.err());
    CHECK(code == 143);
    CorralRun r;
    r.run_dir = sup.run_dir();
    r.record = read_record(r.run_dir);
    REQUIRE(r.record.has_value());
    CHECK((*r.record)["status"] == 143);
    check_nothing_left(r);  // includes "teardown verdict clean": no help from stale cleanup
}

// Programs that size themselves from cgroups (node's libuv, the JVM, Go) read
// /proc/self/cgroup and /sys/fs/cgroup: the box shows its own cgroups there,
// read-only, and nothing else of /sys (docs/rootfs.md "The box's cgroups").
TEST_CASE("the box sees its own memory and CPU limits at /sys/fs/cgroup, read-only; node reads the memory limit") {
    CorralArgs args;
    args.flags = {"--memory", "96M", "--cpus", "1", "--timeout", "60s"};
    auto run = corral_sh(R"SH(echo START
echo "sys=$(ls /sys | tr '\n' ' ')"
if [ -e /sys/fs/cgroup/memory.max ]; then echo "memory=$(cat /sys/fs/cgroup/memory.max)"
else echo "memory=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes)"; fi
if [ -e /sys/fs/cgroup/cpu.max ]; then echo "cpu=$(cat /sys/fs/cgroup/cpu.max)"
else echo "cpu=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)"; fi
for f in /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes; do
  [ -e "$f" ] && { { echo 1G > "$f"; } 2>/dev/null && echo "WROTE $f"; }
done
mkdir /sys/fs/cgroup/escape 2>/dev/null && echo "MADE a cgroup"
grep -q ' /sys/fs/cgroup[^ ]* ro,' /proc/self/mountinfo && echo "cgroup_ro=yes"
grep ' /sys/fs/cgroup[^ ]* rw' /proc/self/mountinfo
echo DONE)SH",
                         args);
    INFO(transcript(run.result));
    REQUIRE(run.result.exit_code == 0);
    const std::string& out = run.result.out;
    CHECK(out.find("sys=fs \n") != std::string::npos);
    CHECK(out.find("memory=100663296\n") != std::string::npos);  // 96 MiB
    // v2: "100000 100000"; v1: quota and period, one CPU's worth.
    CHECK((out.find("cpu=100000 100000\n") != std::string::npos));
    CHECK(out.find("WROTE") == std::string::npos);
    CHECK(out.find("MADE") == std::string::npos);
    CHECK(out.find("cgroup_ro=yes") != std::string::npos);
    CHECK(out.find(" rw") == std::string::npos);  // no cgroup mount writable
    check_nothing_left(run);

    // node (libuv) reads the limit itself: in a --rootfs host box, where the host's node is.
    if (access("/usr/bin/node", X_OK) != 0) return;
    args.rootfs = "host";
    auto node = corral_run({"/usr/bin/node", "-e",
                            "console.log('node_constrained=' + (process.constrainedMemory ? "
                            "process.constrainedMemory() : 'none'))"},
                           args);
    INFO(transcript(node.result));
    CHECK(node.result.exit_code == 0);
    CHECK(node.result.out.find("node_constrained=100663296\n") != std::string::npos);
    check_nothing_left(node);
}

}  // namespace
}  // namespace corral::test::sandbox
