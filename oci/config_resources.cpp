// oci/config_resources.cpp — linux.resources onto corral's cgroup limits
// (supervisor::CgroupLimits: memory, pids, CPU quota). A limit corral
// cannot enforce is refused; a relative weight, which only matters against
// the other boxes' and never lets a box take more, is ignored with a note.
#include "base/strict_json.hpp"
#include "oci/config_fields.hpp"
#include "oci/config_sections.hpp"

namespace corral::oci {

namespace {

void read_device_rules(const nlohmann::json& list, BundleConfig& out) {
    const auto& a = as_array(list, "linux.resources.devices");
    for (std::size_t i = 0; i < a.size(); ++i) {
        ObjectFields f(a[i], index_path("linux.resources.devices", i), out.notes);
        as_bool(f.require("allow"), f.path_of("allow"));
        if (auto type = f.string("type"); type && *type != "a" && *type != "b" && *type != "c")
            refuse_field(f.path_of("type"), json_quoted(*type) + ": expected a, b or c");
        f.i64("major");
        f.i64("minor");
        f.string("access");
        f.finish();
    }
    if (!a.empty())
        out.notes.push_back({NoteKind::replaced, "linux.resources.devices",
                             "the box's device rules are corral's: its six nodes, no mknod (an allow rule grants no "
                             "other device)"});
}

void read_memory(const nlohmann::json& memory, BundleConfig& out) {
    ObjectFields f(memory, "linux.resources.memory", out.notes);
    const auto limit = f.i64("limit");
    if (limit && *limit > 0) out.limits.memory_bytes = static_cast<std::uint64_t>(*limit);
    if (limit && *limit == 0) refuse_field(f.path_of("limit"), "0: expected a positive number of bytes, or -1 (none)");
    // memory.swap is memory + swap: above the limit (or -1) it asks for swap.
    if (const auto swap = f.i64("swap"); swap && *swap != 0 && (*swap == -1 || !limit || *swap > *limit))
        f.note(NoteKind::reduced, "swap", "swap asked: the box's cgroup has none");
    f.refuse_unless_empty("disableOOMKiller", "the box's processes are the OOM killer's first choice; allowed: false");
    f.ignore_harmless("reservation", "a soft limit: the hard limit is what corral sets");
    f.ignore_harmless("swappiness", "the box has no swap");
    f.ignore_harmless("kernel", "deprecated by the kernel; memory.limit covers kernel memory on cgroup v2");
    f.ignore_harmless("kernelTCP", "deprecated; corral caps socket memory itself");
    f.ignore_harmless("useHierarchy", "always hierarchical on cgroup v2");
    f.ignore_harmless("checkBeforeUpdate", "only for `update`, which corral does not offer");
    f.finish();
}

void read_cpu(const nlohmann::json& cpu, BundleConfig& out) {
    ObjectFields f(cpu, "linux.resources.cpu", out.notes);
    const auto quota = f.i64("quota");
    const auto period = f.u64("period");
    if (quota && *quota > 0) {
        const std::uint64_t p = period.value_or(100000);
        if (p < 1000 || p > 1000000) refuse_field(f.path_of("period"), "expected 1000 to 1000000 microseconds");
        out.limits.cpus = static_cast<double>(*quota) / static_cast<double>(p);
        if (period && *period != 100000)
            f.note(NoteKind::mapped, "period", "quota/period as CPUs: corral's cgroup uses its own period");
    }
    f.ignore_harmless("shares", "a relative CPU weight: corral leaves weights equal; the quota is the bound");
    f.ignore_harmless("burst", "the box gets no burst over its quota");
    f.refuse_unless_empty("realtimeRuntime", "the box gets no real-time CPU time; allowed: absent or 0");
    f.refuse_unless_empty("realtimePeriod", "the box gets no real-time CPU time; allowed: absent or 0");
    f.refuse_unless_empty("cpus", "corral does not pin boxes to CPUs (cpuset); allowed: absent or \"\"");
    f.refuse_unless_empty("mems", "corral does not pin boxes to memory nodes (cpuset); allowed: absent or \"\"");
    f.refuse_unless_empty("idle", "corral does not mark boxes SCHED_IDLE; allowed: absent or 0");
    f.finish();
}

void read_block_io(const nlohmann::json& block_io, BundleConfig& out) {
    ObjectFields f(block_io, "linux.resources.blockIO", out.notes);
    f.ignore_harmless("weight", "a relative I/O weight: corral leaves weights equal");
    f.ignore_harmless("leafWeight", "a relative I/O weight: corral leaves weights equal");
    for (std::string_view key : {"weightDevice", "throttleReadBpsDevice", "throttleWriteBpsDevice",
                                 "throttleReadIOPSDevice", "throttleWriteIOPSDevice"})
        f.refuse_unless_empty(key, "corral does not limit block I/O per device; allowed: absent or []");
    f.finish();
}

void read_hugepages(const nlohmann::json& list, const MappingPolicy& policy, BundleConfig& out) {
    const auto& a = as_array(list, "linux.resources.hugepageLimits");
    for (std::size_t i = 0; i < a.size(); ++i) {
        ObjectFields f(a[i], index_path("linux.resources.hugepageLimits", i), out.notes);
        as_string(f.require("pageSize"), f.path_of("pageSize"));
        as_u64(f.require("limit"), f.path_of("limit"));
        f.finish();
    }
    if (!a.empty())
        reduce_or_refuse(policy, out, "linux.resources.hugepageLimits",
                         "hugetlb limits are not set by corral: the host's hugetlb pool is the bound");
}

}  // namespace

void read_resources(const nlohmann::json& resources, const MappingPolicy& policy, BundleConfig& out) {
    ObjectFields f(resources, "linux.resources", out.notes);
    if (const auto* d = f.find("devices")) read_device_rules(*d, out);
    if (const auto* m = f.find("memory")) read_memory(*m, out);
    if (const auto* c = f.find("cpu")) read_cpu(*c, out);
    if (const auto* p = f.find("pids")) {
        ObjectFields pids(*p, "linux.resources.pids", out.notes);
        const auto limit = pids.i64("limit");
        pids.finish();
        if (limit && *limit > 0) out.limits.pids = static_cast<std::uint64_t>(*limit);
    }
    if (const auto* b = f.find("blockIO")) read_block_io(*b, out);
    if (const auto* h = f.find("hugepageLimits")) read_hugepages(*h, policy, out);
    f.ignore_harmless("network", "the box's network is loopback only; class ids and priorities change nothing");
    f.refuse_unless_empty("rdma", "corral gives the box no RDMA device; allowed: absent");
    if (const auto* u = f.find("unified"); u && !is_empty_value(*u)) {
        if (!u->is_object()) refuse_field(f.path_of("unified"), "expected an object, got " + json_type_name(*u));
        refuse_field("linux.resources.unified[" + json_quoted(u->begin().key()) + "]",
                     "corral sets the box's cgroup files itself (memory, pids, cpu above); allowed: absent or {}");
    }
    f.finish();
}

}  // namespace corral::oci
