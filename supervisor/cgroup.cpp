#include "supervisor/cgroup.hpp"
#include "supervisor/sweep.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "base/fd.hpp"
#include "base/log.hpp"
#include "base/mountinfo.hpp"
#include "base/sys_error.hpp"
#include "names/run_id.hpp"

namespace corral::supervisor {
namespace {

constexpr const char* kCorralDir = "corral";
constexpr std::uint64_t kCpuPeriodUs = 100000;  // the kernel's default CFS period
constexpr std::uint64_t kMinCpuQuotaUs = 1000;  // the kernel refuses quotas below 1 ms

bool file_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// Reads a whole (small) cgroup file; nullopt if it does not exist.
std::optional<std::string> read_cgroup_file(const std::string& path) {
    // cgroup.procs of a box at its pids cap is the largest: 4 MiB holds 500k pids.
    return read_whole_file({path, 4u << 20});
}

// One write() of the whole value: cgroup files act on each write call.
void write_cgroup_file(const std::string& path, const std::string& value) {
    Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd.valid()) throw SysError("open", path, errno);
    ssize_t n = ::write(fd.get(), value.data(), value.size());
    if (n < 0) throw SysError("write", path + " <- \"" + value + "\"", errno);
}

std::optional<std::uint64_t> read_number(const std::string& path) {
    auto text = read_cgroup_file(path);
    if (!text) return std::nullopt;
    try {
        std::size_t used = 0;
        auto value = std::stoull(*text, &used);
        return value;
    } catch (const std::exception&) {
        return std::nullopt;  // "max" or unexpected content
    }
}

// Value of "key N" in a flat keyed file (memory.events, memory.oom_control).
std::optional<std::uint64_t> read_keyed(const std::string& path, const std::string& key) {
    auto text = read_cgroup_file(path);
    if (!text) return std::nullopt;
    std::istringstream in(*text);
    std::string k;
    std::uint64_t v = 0;
    while (in >> k >> v)
        if (k == key) return v;
    return std::nullopt;
}

std::vector<std::string> split_words(const std::string& text) {
    std::vector<std::string> words;
    std::istringstream in(text);
    for (std::string w; in >> w;) words.push_back(w);
    return words;
}

bool contains(const std::vector<std::string>& list, const std::string& item) {
    return std::find(list.begin(), list.end(), item) != list.end();
}

// Subdirectories of dir (cgroups nested by whatever ran inside), deepest first, then dir.
void collect_depth_first(const std::string& dir, std::vector<std::string>& out) {
    if (DIR* d = ::opendir(dir.c_str())) {
        std::vector<std::string> children;
        while (dirent* e = ::readdir(d)) {
            std::string name = e->d_name;
            if (name == "." || name == "..") continue;
            if (e->d_type == DT_DIR) children.push_back(dir + "/" + name);
        }
        ::closedir(d);
        for (const auto& child : children) collect_depth_first(child, out);
    }
    out.push_back(dir);
}

std::vector<pid_t> pids_in_tree(const std::string& dir) {
    std::vector<std::string> dirs;
    collect_depth_first(dir, dirs);
    std::vector<pid_t> pids;
    for (const auto& d : dirs) {
        auto text = read_cgroup_file(d + "/cgroup.procs");
        if (!text) continue;  // removed meanwhile
        for (const auto& w : split_words(*text)) pids.push_back(static_cast<pid_t>(std::stol(w)));
    }
    return pids;
}

std::string describe_hierarchies(const CgroupHierarchies& h) {
    std::string out;
    if (h.v2_mount) {
        out += "cgroup2 at " + *h.v2_mount + " offers [";
        for (std::size_t i = 0; i < h.v2_controllers.size(); ++i) out += (i ? " " : "") + h.v2_controllers[i];
        out += "]";
    } else {
        out += "no cgroup2 mount";
    }
    out += "; v1 controllers mounted: [";
    bool first = true;
    for (const auto& [controller, mount] : h.v1_mounts) {
        out += (first ? "" : " ") + controller;
        first = false;
    }
    return out + "]";
}

// Makes `controller` usable in <v2>/corral/<run>: enabled in the root's and corral's
// subtree_control. Throws SysError if the kernel refuses (e.g. EBUSY when the mount
// root is a non-root cgroup holding processes, as inside a container).
void enable_v2_controller(const std::string& v2_mount, const std::string& controller) {
    for (const std::string& parent : {v2_mount, v2_mount + "/" + kCorralDir}) {
        std::string file = parent + "/cgroup.subtree_control";
        auto enabled = read_cgroup_file(file);
        if (enabled && contains(split_words(*enabled), controller)) continue;
        write_cgroup_file(file, "+" + controller);
    }
}

}  // namespace

CgroupHierarchies parse_cgroup_mounts(const std::string& mountinfo) {
    CgroupHierarchies h;
    std::istringstream in(mountinfo);
    for (std::string line; std::getline(in, line);) {
        // id parent maj:min root mountpoint options [optional...] - fstype source superoptions
        auto sep = line.find(" - ");
        if (sep == std::string::npos) continue;
        auto before = split_words(line.substr(0, sep));
        auto after = split_words(line.substr(sep + 3));
        if (before.size() < 5 || after.size() < 3) continue;
        const std::string& fstype = after[0];
        std::string mount_point = unescape_mountinfo_field(before[4]);
        if (fstype == "cgroup2") {
            if (!h.v2_mount) h.v2_mount = mount_point;
        } else if (fstype == "cgroup") {
            std::stringstream opts(after[2]);
            for (std::string opt; std::getline(opts, opt, ',');)
                if (!h.v1_mounts.count(opt)) h.v1_mounts[opt] = mount_point;
        }
    }
    return h;
}

CgroupHierarchies discover_cgroup_hierarchies() {
    auto text = read_cgroup_file("/proc/self/mountinfo");
    if (!text) throw SysError("open", "/proc/self/mountinfo", ENOENT);
    CgroupHierarchies h = parse_cgroup_mounts(*text);
    if (h.v2_mount) {
        if (auto controllers = read_cgroup_file(*h.v2_mount + "/cgroup.controllers"))
            h.v2_controllers = split_words(*controllers);
    }
    return h;
}

CgroupPlan plan_run_cgroups(const CgroupHierarchies& h, const CgroupLimits& limits) {
    struct Need {
        const char* controller;
        const char* option;
    };
    std::vector<Need> needs;
    if (limits.memory_bytes) needs.push_back({"memory", "--memory"});
    if (limits.pids) needs.push_back({"pids", "--pids"});
    if (limits.cpus) needs.push_back({"cpu", "--cpus"});
    CgroupPlan plan;
    // A v2 dir whenever cgroup2 is mounted: it gives membership, cgroup.kill and an
    // exact emptiness check even when every limit lives on v1 (hybrid hosts).
    plan.v2_mount = h.v2_mount;
    for (const auto& need : needs) {
        if (h.v2_mount && contains(h.v2_controllers, need.controller)) {
            plan.v2_controllers.push_back(need.controller);
        } else if (auto it = h.v1_mounts.find(need.controller); it != h.v1_mounts.end()) {
            plan.v1_dirs[it->second].push_back(need.controller);
        } else {
            throw UsageError(std::string(need.option) + " needs the " + need.controller +
                             " cgroup controller, which is neither enabled in cgroup v2 nor mounted as v1 (" +
                             describe_hierarchies(h) + "); enable or mount it, or run without " + need.option);
        }
    }
    // v1 charges socket buffers to no cgroup unless the memory cgroup has a
    // memory.kmem.tcp limit: every run on a v1 memory controller gets one, so
    // a box cannot fill the host-wide tcp_mem/udp_mem pools.
    if (!contains(plan.v2_controllers, "memory")) {
        if (auto it = h.v1_mounts.find("memory"); it != h.v1_mounts.end()) {
            auto& controllers = plan.v1_dirs[it->second];
            if (!contains(controllers, "memory")) {
                controllers.push_back("memory");
                plan.v1_memory_for_sockets_only = true;
            }
        }
    }
    // Peak pids are recorded for every run, limited or not: where pids is a v1
    // controller, a v1 pids dir without a limit counts them.
    if (!contains(plan.v2_controllers, "pids") && !(h.v2_mount && contains(h.v2_controllers, "pids"))) {
        if (auto it = h.v1_mounts.find("pids"); it != h.v1_mounts.end()) {
            auto& controllers = plan.v1_dirs[it->second];
            if (!contains(controllers, "pids")) {
                controllers.push_back("pids");
                plan.v1_pids_for_accounting_only = true;
            }
        }
    }
    if (!plan.v2_mount && plan.v1_dirs.empty()) {
        // No limits, no cgroup2: still confine the run somewhere teardown can inspect.
        const char* fallback = h.v1_mounts.count("pids") ? "pids" : h.v1_mounts.count("memory") ? "memory" : nullptr;
        if (!fallback)
            throw UsageError("corral needs a cgroup hierarchy to track the sandbox's processes, but neither cgroup2 "
                             "nor a v1 pids or memory hierarchy is mounted (" +
                             describe_hierarchies(h) + "); mount cgroup2 at /sys/fs/cgroup");
        plan.v1_dirs[h.v1_mounts.at(fallback)];
    }
    return plan;
}

namespace {

// --cpus as a CFS quota per kCpuPeriodUs (0: no limit). Throws UsageError for
// a zero --memory or --pids, or a --cpus below 0.01.
std::uint64_t checked_cpu_quota(const CgroupLimits& limits) {
    if (limits.memory_bytes && *limits.memory_bytes == 0)
        throw UsageError("invalid --memory 0: the memory limit must be at least 1 byte (e.g. 512M)");
    if (limits.pids && *limits.pids == 0)
        throw UsageError("invalid --pids 0: the sandbox needs at least 1 process (e.g. --pids 64)");
    if (!limits.cpus) return 0;
    double quota = *limits.cpus * static_cast<double>(kCpuPeriodUs);
    if (!std::isfinite(quota) || quota < static_cast<double>(kMinCpuQuotaUs) || quota > 1e15)
        throw UsageError("invalid --cpus " + std::to_string(*limits.cpus) +
                         ": expected a number of CPUs from 0.01 upward (e.g. 0.5, 2)");
    return static_cast<std::uint64_t>(std::llround(quota));
}

void write_v2_limits(const std::string& dir, const std::vector<std::string>& controllers, const CgroupLimits& limits,
                     std::uint64_t cpu_quota_us) {
    for (const auto& c : controllers) {
        if (c == "memory") {
            write_cgroup_file(dir + "/memory.max", std::to_string(*limits.memory_bytes));
            // Swap must not become a way around the limit.
            if (file_exists(dir + "/memory.swap.max")) write_cgroup_file(dir + "/memory.swap.max", "0");
        } else if (c == "pids") {
            write_cgroup_file(dir + "/pids.max", std::to_string(*limits.pids));
        } else if (c == "cpu") {
            write_cgroup_file(dir + "/cpu.max", std::to_string(cpu_quota_us) + " " + std::to_string(kCpuPeriodUs));
        }
    }
}

void write_v1_memory_limits(const std::string& dir, const CgroupLimits& limits) {
    // Socket buffers first: sockets take their cgroup's limit when they are
    // made, and nothing of the box runs yet.
    const std::string tcp = dir + "/memory.kmem.tcp.limit_in_bytes";
    if (!file_exists(tcp))
        throw UsageError("the v1 memory cgroup has no memory.kmem.tcp.limit_in_bytes, so the box's socket "
                         "buffers could fill the host's; corral needs a kernel with v1 socket accounting "
                         "or the memory controller on cgroup v2");
    std::uint64_t sockets = limits.socket_memory_bytes.value_or(limits.memory_bytes.value_or(0));
    if (sockets > 0) write_cgroup_file(tcp, std::to_string(sockets));
    if (!limits.memory_bytes) return;
    write_cgroup_file(dir + "/memory.limit_in_bytes", std::to_string(*limits.memory_bytes));
    if (file_exists(dir + "/memory.memsw.limit_in_bytes"))
        write_cgroup_file(dir + "/memory.memsw.limit_in_bytes", std::to_string(*limits.memory_bytes));
}

void write_v1_limits(const std::string& dir, const std::vector<std::string>& controllers, const CgroupLimits& limits,
                     std::uint64_t cpu_quota_us) {
    for (const auto& c : controllers) {
        if (c == "memory") {
            write_v1_memory_limits(dir, limits);
        } else if (c == "pids") {
            if (limits.pids) write_cgroup_file(dir + "/pids.max", std::to_string(*limits.pids));
        } else if (c == "cpu") {
            write_cgroup_file(dir + "/cpu.cfs_period_us", std::to_string(kCpuPeriodUs));
            write_cgroup_file(dir + "/cpu.cfs_quota_us", std::to_string(cpu_quota_us));
        }
    }
}

}  // namespace

RunCgroup RunCgroup::create(const std::string& run_id, const CgroupLimits& limits) {
    names::require_run_id(run_id, "cgroup name");
    const std::uint64_t cpu_quota_us = checked_cpu_quota(limits);
    CgroupHierarchies h = discover_cgroup_hierarchies();
    CgroupPlan plan = plan_run_cgroups(h, limits);
    const auto& v2_controllers = plan.v2_controllers;
    // Accounting for run.json (peak memory/pids) where v2 offers it for free; a
    // refusal here only costs the statistics, never a limit.
    std::vector<std::string> v2_optional;
    if (h.v2_mount)
        for (const char* c : {"memory", "pids"})
            if (contains(h.v2_controllers, c) && !contains(v2_controllers, c)) v2_optional.push_back(c);

    RunCgroup cg;
    cg.run_id_ = run_id;
    auto make_dir = [&](const std::string& mount, bool v2) {
        std::string parent = mount + "/" + kCorralDir;
        if (::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) throw SysError("mkdir", parent, errno);
        if (v2) {
            for (const auto& c : v2_controllers) enable_v2_controller(mount, c);
            for (const auto& c : v2_optional) {
                try {
                    enable_v2_controller(mount, c);
                } catch (const SysError& e) {
                    log::debug(std::string("cgroup accounting unavailable: ") + e.what());
                }
            }
        }
        std::string dir = parent + "/" + run_id;
        if (::mkdir(dir.c_str(), 0755) != 0) throw SysError("mkdir", dir, errno);
        cg.dirs_.push_back(Dir{dir, v2});
        return dir;
    };
    if (plan.v2_mount) write_v2_limits(make_dir(*plan.v2_mount, true), v2_controllers, limits, cpu_quota_us);
    for (const auto& [mount, controllers] : plan.v1_dirs)
        write_v1_limits(make_dir(mount, false), controllers, limits, cpu_quota_us);
    return cg;
}

RunCgroup::RunCgroup(RunCgroup&& other) noexcept
    : run_id_(std::move(other.run_id_)), dirs_(std::move(other.dirs_)), removed_(other.removed_) {
    other.dirs_.clear();
    other.removed_ = true;
}

RunCgroup& RunCgroup::operator=(RunCgroup&& other) noexcept {
    if (this != &other) {
        remove_best_effort();
        run_id_ = std::move(other.run_id_);
        dirs_ = std::move(other.dirs_);
        removed_ = other.removed_;
        other.dirs_.clear();
        other.removed_ = true;
    }
    return *this;
}

RunCgroup::~RunCgroup() { remove_best_effort(); }

void RunCgroup::remove_best_effort() noexcept {
    if (removed_ || dirs_.empty()) return;
    try {
        kill_all();
        remove();
    } catch (const std::exception& e) {
        log::warn(std::string("leaving cgroup of run ") + run_id_ + " for stale cleanup: " + e.what());
    }
}

void RunCgroup::add_process(pid_t pid) {
    for (const auto& d : dirs_) write_cgroup_file(d.path + "/cgroup.procs", std::to_string(pid));
}

CgroupUsage RunCgroup::usage() const {
    CgroupUsage u;
    for (const auto& d : dirs_) {
        if (!u.peak_memory_bytes)
            u.peak_memory_bytes = d.v2 ? read_number(d.path + "/memory.peak") : read_number(d.path + "/memory.max_usage_in_bytes");
        if (!u.peak_pids) u.peak_pids = read_number(d.path + "/pids.peak");
        if (auto hits = read_keyed(d.path + "/pids.events", "max")) u.pids_limit_hits += *hits;
        if (!u.cpu_usec) {
            if (d.v2) {
                u.cpu_usec = read_keyed(d.path + "/cpu.stat", "usage_usec");
            } else if (auto ns = read_number(d.path + "/cpuacct.usage")) {
                u.cpu_usec = *ns / 1000;
            }
        }
        auto ooms = d.v2 ? read_keyed(d.path + "/memory.events", "oom_kill") : read_keyed(d.path + "/memory.oom_control", "oom_kill");
        if (ooms && *ooms > 0) u.oom_killed = true;
    }
    return u;
}

bool RunCgroup::empty() const {
    for (const auto& d : dirs_)
        if (!pids_in_tree(d.path).empty()) return false;
    return true;
}

void RunCgroup::kill_all() {
    for (const auto& d : dirs_) {
        // cgroup.kill is atomic against forks; without it (v1, or v2 before 5.14) we race
        // forks by repeating below until the lists stay empty.
        if (d.v2 && file_exists(d.path + "/cgroup.kill")) write_cgroup_file(d.path + "/cgroup.kill", "1");
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    auto pause = std::chrono::microseconds(100);
    for (;;) {
        std::vector<pid_t> left;
        for (const auto& d : dirs_) {
            auto pids = pids_in_tree(d.path);
            left.insert(left.end(), pids.begin(), pids.end());
        }
        if (left.empty()) return;
        if (std::chrono::steady_clock::now() >= deadline) return;  // caller sees !empty() and reports it
        // Pinned and re-checked: a listed pid reused by a process outside the
        // run (after the one listed exited) is never signalled.
        for (pid_t pid : left) kill_if_in_cgroup(pid, "/corral/" + run_id_);
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(20000));
    }
}

void RunCgroup::remove() {
    for (const auto& d : dirs_) {
        std::vector<std::string> tree;
        collect_depth_first(d.path, tree);
        for (const auto& dir : tree) {
            if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) continue;
            int err = errno;
            std::string detail = dir;
            if (err == EBUSY) {
                auto text = read_cgroup_file(dir + "/cgroup.procs");
                if (text && !text->empty()) detail += " (still holds pids: " + split_words(*text).front() + (split_words(*text).size() > 1 ? " ..." : "") + ")";
            }
            throw SysError("rmdir", detail, err);
        }
    }
    removed_ = true;
}

std::vector<std::string> RunCgroup::paths() const {
    std::vector<std::string> out;
    for (const auto& d : dirs_) out.push_back(d.path);
    return out;
}

namespace {
// Every distinct hierarchy mount point with whether it is cgroup2.
std::vector<std::pair<std::string, bool>> hierarchy_mounts(const CgroupHierarchies& h) {
    std::vector<std::pair<std::string, bool>> out;
    if (h.v2_mount) out.emplace_back(*h.v2_mount, true);
    std::set<std::string> seen;
    for (const auto& [controller, mount] : h.v1_mounts)
        if (seen.insert(mount).second) out.emplace_back(mount, false);
    return out;
}
}  // namespace

std::vector<std::string> list_run_cgroups() {
    std::set<std::string> ids;
    for (const auto& [mount, v2] : hierarchy_mounts(discover_cgroup_hierarchies())) {
        std::string parent = mount + "/" + kCorralDir;
        DIR* d = ::opendir(parent.c_str());
        if (!d) continue;
        while (dirent* e = ::readdir(d)) {
            std::string name = e->d_name;
            if (e->d_type == DT_DIR && names::is_run_id(name)) ids.insert(name);
        }
        ::closedir(d);
    }
    return {ids.begin(), ids.end()};
}

std::vector<std::string> remove_run_cgroups(const std::string& run_id) {
    names::require_run_id(run_id, "cgroup name");
    RunCgroup cg;
    cg.run_id_ = run_id;
    for (const auto& [mount, v2] : hierarchy_mounts(discover_cgroup_hierarchies())) {
        std::string dir = mount + "/" + kCorralDir + "/" + run_id;
        struct stat st {};
        if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) cg.dirs_.push_back(RunCgroup::Dir{dir, v2});
    }
    cg.kill_all();
    auto removed = cg.paths();
    cg.remove();
    return removed;
}

}  // namespace corral::supervisor
