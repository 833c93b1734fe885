// oci/config_linux.cpp — config.json's `linux` section but its resources:
// namespaces (corral's own set, always), device nodes, seccomp, masks and
// the fields corral refuses.
#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "base/strict_json.hpp"
#include "oci/config_fields.hpp"
#include "oci/config_sections.hpp"
#include "rootfs/mount_plan.hpp"

namespace corral::oci {

namespace {

// The namespaces every box has (DESIGN.md "One run, end to end").
constexpr std::array<std::string_view, 6> kBoxNamespaces = {"pid", "network", "mount", "ipc", "uts", "cgroup"};

void read_namespace_entry(const nlohmann::json& entry, const std::string& path, std::set<std::string>& seen,
                          BundleConfig& out) {
    ObjectFields f(entry, path, out.notes);
    const std::string type = as_string(f.require("type"), f.path_of("type"));
    const std::optional<std::string> ns_path = f.string("path");
    f.finish();
    if (!seen.insert(type).second) refuse_field(f.path_of("type"), type + " given twice; give each namespace once");
    const bool joins = ns_path && !ns_path->empty();
    if (type == "user")
        refuse_field(path, "a user namespace: corral does not create one (the box's isolation is its leased UID, "
                           "never root); allowed: no user entry");
    if (type == "time") {
        if (joins) refuse_field(f.path_of("path"), "corral does not join time namespaces; allowed: no path");
        out.notes.push_back({NoteKind::ignored, path, "a time namespace: the box shares the host's clocks"});
        return;
    }
    if (std::find(kBoxNamespaces.begin(), kBoxNamespaces.end(), type) == kBoxNamespaces.end())
        refuse_field(f.path_of("type"), json_quoted(type) + ": not a namespace type (pid, network, mount, ipc, uts, "
                                                            "cgroup, user, time)");
    if (!joins) return;
    if (type == "network") {
        out.notes.push_back({NoteKind::replaced, path,
                             "the network namespace " + json_quoted(*ns_path) +
                                 " is replaced by the box's own, loopback only: its way out is corral's gateway"});
        return;
    }
    if (type == "ipc" || type == "uts") {
        out.notes.push_back({NoteKind::replaced, path,
                             "the " + type + " namespace " + json_quoted(*ns_path) + " is replaced by the box's own"});
        return;
    }
    refuse_field(f.path_of("path"), "joining another " + type + " namespace: corral's verified teardown needs the "
                                                               "box's own; allowed: no path");
}

void read_namespaces(const nlohmann::json& list, BundleConfig& out) {
    const auto& a = as_array(list, "linux.namespaces");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < a.size(); ++i) read_namespace_entry(a[i], index_path("linux.namespaces", i), seen, out);
    for (std::string_view own : kBoxNamespaces)
        if (!seen.count(std::string(own)))
            out.notes.push_back({NoteKind::replaced, "linux.namespaces",
                                 "no " + std::string(own) + " namespace asked (the host's): the box has its own"});
}

// A device node of the config's: one of the box's own six, as the box makes
// it, or refused.
void read_devices(const nlohmann::json& list, BundleConfig& out) {
    const auto& a = as_array(list, "linux.devices");
    for (std::size_t i = 0; i < a.size(); ++i) {
        const std::string path = index_path("linux.devices", i);
        ObjectFields f(a[i], path, out.notes);
        const std::string dev_path = normalise_box_path(as_string(f.require("path"), f.path_of("path")), f.path_of("path"));
        const std::string type = as_string(f.require("type"), f.path_of("type"));
        const auto major = f.i64("major");
        const auto minor = f.i64("minor");
        f.u64("fileMode");
        f.u64("uid");
        f.u64("gid");
        f.finish();
        const auto own = rootfs::box_device_node(dev_path);
        const bool same = own && type == "c" && major && minor && *major == std::int64_t(own->first) &&
                          *minor == std::int64_t(own->second);
        if (!same)
            refuse_field(path, "device " + json_quoted(dev_path) + ": the box has /dev/null, zero, full, random, "
                                                                  "urandom and tty, and no other device");
        out.notes.push_back({NoteKind::replaced, path, dev_path + " is the box's own node"});
    }
}

void read_seccomp(const nlohmann::json& seccomp, BundleConfig& out) {
    ObjectFields f(seccomp, "linux.seccomp", out.notes);
    as_string(f.require("defaultAction"), f.path_of("defaultAction"));
    f.refuse_unless_empty("listenerPath", "corral answers no seccomp notification; allowed: absent");
    f.refuse_unless_empty("listenerMetadata", "corral answers no seccomp notification; allowed: absent");
    if (const auto* s = f.find("syscalls")) {
        const auto& rules = as_array(*s, f.path_of("syscalls"));
        for (std::size_t i = 0; i < rules.size(); ++i)
            if (rules[i].is_object() && rules[i].contains("action") && rules[i]["action"] == "SCMP_ACT_NOTIFY")
                refuse_field(index_path(f.path_of("syscalls"), i) + ".action",
                             "SCMP_ACT_NOTIFY: corral answers no seccomp notification");
    }
    // The rest (architectures, flags, defaultErrnoRet, the rules) is read
    // when it is stacked (oci/runtime/seccomp_profile.hpp).
    for (std::string_view key : {"architectures", "flags", "defaultErrnoRet"}) f.find(key);
    f.finish();
    out.seccomp_profile = seccomp;
    out.notes.push_back({NoteKind::mapped, "linux.seccomp",
                         "corral's own seccomp policy applies, and this profile is stacked after it on every "
                         "command: it can only deny more, never allow what corral denies"});
}

void read_protected_paths(const nlohmann::json& list, std::string_view key, const MappingPolicy& policy,
                          BundleConfig& out) {
    const std::string field = "linux." + std::string(key);
    const auto paths = as_string_array(list, field);
    for (std::size_t i = 0; i < paths.size(); ++i) {
        const std::string p = normalise_box_path(paths[i], index_path(field, i));
        if (!rootfs::box_protects_path(p))
            reduce_or_refuse(policy, out, index_path(field, i),
                             p + " is not masked by corral (the box's UID is unprivileged: root-only files stay "
                                 "unreadable)");
    }
    if (!paths.empty())
        out.notes.push_back({NoteKind::replaced, field, "corral's own /proc masks and its empty /sys apply"});
}

void read_propagation(ObjectFields& f, const MappingPolicy& policy, BundleConfig& out) {
    const auto prop = f.string("rootfsPropagation");
    if (!prop || prop->empty()) return;
    static const std::set<std::string> kPrivate = {"private", "rprivate", "slave", "rslave"};
    static const std::set<std::string> kOther = {"shared", "rshared", "unbindable", "runbindable"};
    if (kOther.count(*prop))
        reduce_or_refuse(policy, out, f.path_of("rootfsPropagation"),
                         *prop + " asked: the box's mounts are private to it");
    else if (!kPrivate.count(*prop))
        refuse_field(f.path_of("rootfsPropagation"),
                     json_quoted(*prop) + ": expected private, rprivate, slave, rslave, shared, rshared, unbindable "
                                          "or runbindable");
}

// The engines ask for the box's own network namespace's sysctls by default
// (podman and containerd's CRI: net.ipv4.ping_group_range,
// net.ipv4.ip_unprivileged_port_start): each would let the box's
// unprivileged processes do more. corral sets none: reduced (refused when
// strict), each named.
void read_sysctl(ObjectFields& f, const MappingPolicy& policy, BundleConfig& out) {
    const nlohmann::json* sysctl = f.find("sysctl");
    if (sysctl == nullptr || sysctl->is_null()) return;
    if (!sysctl->is_object()) refuse_field(f.path_of("sysctl"), "expected an object of NAME: VALUE strings");
    for (const auto& [name, value] : sysctl->items()) {
        const std::string field = f.path_of("sysctl") + "." + name;
        if (!value.is_string()) refuse_field(field, "expected a string");
        reduce_or_refuse(policy, out, field,
                         name + "=" + value.get<std::string>() + " not set: corral sets no sysctl in the box");
    }
}

void refuse_unhonoured_linux_fields(ObjectFields& f) {
    f.refuse_unless_empty("uidMappings", "user namespace mappings: corral does not create user namespaces; "
                                         "allowed: absent");
    f.refuse_unless_empty("gidMappings", "user namespace mappings: corral does not create user namespaces; "
                                         "allowed: absent");
    f.refuse_unless_empty("timeOffsets", "corral does not offset the box's clocks; allowed: absent");
    f.refuse_unless_empty("intelRdt", "corral does not manage Intel RDT; allowed: absent");
    f.refuse_unless_empty("personality", "corral does not change the execution domain; allowed: absent");
    f.refuse_unless_empty("memoryPolicy", "corral sets no NUMA memory policy; allowed: absent");
    f.refuse_unless_empty("netDevices", "the box's network is loopback only; allowed: absent");
}

}  // namespace

std::vector<std::string> box_namespace_types() { return {kBoxNamespaces.begin(), kBoxNamespaces.end()}; }

void read_linux(const nlohmann::json& linux_section, const MappingPolicy& policy, BundleConfig& out) {
    ObjectFields f(linux_section, "linux", out.notes);
    if (const auto* ns = f.find("namespaces")) read_namespaces(*ns, out);
    refuse_unhonoured_linux_fields(f);
    read_sysctl(f, policy, out);
    if (const auto* d = f.find("devices")) read_devices(*d, out);
    if (auto cg = f.string("cgroupsPath"); cg && !cg->empty())
        f.note(NoteKind::replaced, "cgroupsPath", json_quoted(*cg) + ": the box's cgroup is corral's own");
    if (const auto* r = f.find("resources")) read_resources(*r, policy, out);
    read_propagation(f, policy, out);
    if (const auto* s = f.find("seccomp"); s && !s->is_null()) read_seccomp(*s, out);
    if (const auto* m = f.find("maskedPaths")) read_protected_paths(*m, "maskedPaths", policy, out);
    if (const auto* r = f.find("readonlyPaths")) read_protected_paths(*r, "readonlyPaths", policy, out);
    if (auto label = f.string("mountLabel"); label && !label->empty())
        f.note(NoteKind::replaced, "mountLabel", json_quoted(*label) + " not applied (corral sets no SELinux label)");
    f.finish();
}

}  // namespace corral::oci
