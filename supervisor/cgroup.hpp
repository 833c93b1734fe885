// supervisor/cgroup.hpp — the run's cgroup(s): limits, membership, usage, kill, removal.
//
// Where a run's cgroups live (paths are found from /proc/self/mountinfo, never assumed):
//   v2:  <cgroup2 mount>/corral/<run-id>
//   v1:  <mount of the hierarchy carrying the controller>/corral/<run-id>
// Both are created relative to the hierarchy's mount root, not relative to the
// cgroup the supervisor itself sits in (on this host corral may run inside
// memory:/process_api/<id>): a run's limits are written on the run's own cgroup,
// so they apply regardless of where the supervisor lives, and stale cleanup can
// find every run's cgroup under one fixed parent per hierarchy.
//
// Per controller the choice is: cgroup v2 if the controller is available there
// (listed in the v2 root's cgroup.controllers), else its v1 hierarchy, else the
// limit cannot be enforced and create() throws UsageError naming the option and
// the controller (fail closed; a limit is never ignored).
//
// On v2 the controllers are enabled in <root>/cgroup.subtree_control and
// <root>/corral/cgroup.subtree_control; no process is ever put in <root>/corral
// itself ("no internal processes" rule), only in <root>/corral/<run-id>.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace corral::supervisor {

struct CgroupLimits {
    std::optional<std::uint64_t> memory_bytes;  // memory.max / memory.limit_in_bytes (+ swap closed)
    std::optional<std::uint64_t> pids;          // pids.max
    std::optional<double> cpus;                 // cpu.max / cfs_quota_us = cpus * period
    // Where the memory controller is on v1: the box's socket buffers
    // (memory.kmem.tcp.limit_in_bytes, which charges TCP and UDP there; v1
    // charges socket memory nowhere without it). Without --memory the run
    // still gets a v1 memory cgroup for this limit alone. Unset: memory_bytes,
    // else no limit. Not used on v2, where socket buffers are charged to
    // memory.current with everything else.
    std::optional<std::uint64_t> socket_memory_bytes;
};

struct CgroupUsage {
    std::optional<std::uint64_t> peak_memory_bytes;  // memory.peak / memory.max_usage_in_bytes
    std::optional<std::uint64_t> peak_pids;          // pids.peak (null where the kernel lacks it)
    bool oom_killed = false;                         // memory.events / memory.oom_control oom_kill > 0
    // Forks refused at the pids limit (pids.events "max"); 0 without a limit.
    std::uint64_t pids_limit_hits = 0;
    // CPU time of everything the run had, user + system (v2 cpu.stat
    // usage_usec, else v1 cpuacct.usage); null where no hierarchy counts it.
    std::optional<std::uint64_t> cpu_usec;
};

// The cgroup hierarchies this host has mounted, as read from /proc/self/mountinfo.
struct CgroupHierarchies {
    std::optional<std::string> v2_mount;                // cgroup2 mount point, if any
    std::vector<std::string> v2_controllers;            // <v2 mount>/cgroup.controllers
    std::map<std::string, std::string> v1_mounts;       // controller -> mount point (e.g. "pids" -> /sys/fs/cgroup/pids)
};
CgroupHierarchies discover_cgroup_hierarchies();
// The mount part of discover_cgroup_hierarchies(), from mountinfo text (v2_controllers
// left empty): first cgroup2 mount, first v1 mount per controller ("cpu,cpuacct"
// mounts serve both).
CgroupHierarchies parse_cgroup_mounts(const std::string& mountinfo);

// Which hierarchy carries each limit: the decision of RunCgroup::create(), separate
// so it can be tested against pure-v2, hybrid and v1-only layouts.
struct CgroupPlan {
    std::optional<std::string> v2_mount;                      // create <v2_mount>/corral/<run-id>
    std::vector<std::string> v2_controllers;                  // limits enforced there
    std::map<std::string, std::vector<std::string>> v1_dirs;  // v1 mount -> limits enforced there (may be empty: tracking only)
    // The v1 memory dir exists only for the socket-buffer limit (no --memory):
    // joining it need not precede the init's setup.
    bool v1_memory_for_sockets_only = false;
    // The v1 pids dir exists only to count the run's processes (pids.peak,
    // no --pids): joining it need not precede the init's setup either.
    bool v1_pids_for_accounting_only = false;
};
// Throws UsageError naming the option and the controller when a limit cannot be enforced.
CgroupPlan plan_run_cgroups(const CgroupHierarchies& hierarchies, const CgroupLimits& limits);

class RunCgroup {
public:
    // Creates the cgroup(s) and writes the limits. Throws UsageError naming the
    // missing controller ("--memory needs the memory cgroup controller, which is
    // neither enabled in cgroup v2 nor mounted as v1: ...") — never silently ignores
    // a limit. With no limits it still creates one cgroup (v2 if mounted, else v1
    // pids, else v1 memory) so teardown can check emptiness. Throws SysError when
    // a cgroup file cannot be written; whatever was created is removed again.
    // run_id must be a plain file name ([A-Za-z0-9_.-], not "." or "..").
    static RunCgroup create(const std::string& run_id, const CgroupLimits& limits);

    RunCgroup(RunCgroup&& other) noexcept;
    RunCgroup& operator=(RunCgroup&& other) noexcept;
    RunCgroup(const RunCgroup&) = delete;
    RunCgroup& operator=(const RunCgroup&) = delete;
    // If remove() did not succeed: best effort kill_all() + remove(), errors
    // swallowed (a destructor cannot report; stale cleanup catches the rest).
    ~RunCgroup();

    // Writes pid into cgroup.procs of every one of the run's cgroups. Call before
    // the process runs anything of the command (its children inherit membership).
    void add_process(pid_t pid);
    // Reads peak memory, peak pids, CPU time, OOM kills and forks refused at
    // the pids limit. Call before remove().
    CgroupUsage usage() const;
    // True if no process is listed in cgroup.procs of any of the run's cgroups
    // (including nested child cgroups).
    bool empty() const;
    // cgroup.kill on v2; on v1 SIGKILL every listed pid, repeated until empty
    // (bounded: gives up after ~2 s and leaves empty() false for the caller to report).
    void kill_all();
    // rmdir every dir (children first); throws SysError (EBUSY) if one is not empty.
    void remove();
    // The run's cgroup directories, one per hierarchy used.
    std::vector<std::string> paths() const;
    const std::string& run_id() const { return run_id_; }

private:
    struct Dir {
        std::string path;  // absolute, <hierarchy mount>/corral/<run-id>
        bool v2 = false;
    };
    RunCgroup() = default;
    void remove_best_effort() noexcept;
    friend std::vector<std::string> remove_run_cgroups(const std::string& run_id);
    std::string run_id_;
    std::vector<Dir> dirs_;  // one per hierarchy used
    bool removed_ = false;
};

// Run ids that have a cgroup directory under corral/ in any mounted hierarchy
// (used by stale cleanup).
std::vector<std::string> list_run_cgroups();

// Kills whatever is left in the cgroups of `run_id` in every hierarchy, then removes
// them (children first). Returns the removed paths. Throws SysError if a cgroup
// cannot be emptied or removed.
std::vector<std::string> remove_run_cgroups(const std::string& run_id);

}  // namespace corral::supervisor
