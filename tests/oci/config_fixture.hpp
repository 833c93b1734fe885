// tests/oci: config.json fixtures. `runc spec`'s default config (runc 1.1.5,
// Debian 12) is the base every test changes one field of.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "oci/bundle_config.hpp"

namespace corral::oci::testing {

inline nlohmann::json runc_spec_config() {
    return nlohmann::json::parse(R"({"ociVersion": "1.0.2-dev", "process": {"terminal": true, "user": {"uid": 0, "gid": 0},
 "args": ["sh"], "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"],
 "cwd": "/", "capabilities": {"bounding": ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
 "effective": ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
 "permitted": ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"],
 "ambient": ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"]},
 "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}], "noNewPrivileges": true},
 "root": {"path": "rootfs", "readonly": true}, "hostname": "runc",
 "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
  {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
  {"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
  {"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
  {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]},
  {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
  {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup", "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]}],
 "linux": {"resources": {"devices": [{"allow": false, "access": "rwm"}]},
  "namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}],
  "maskedPaths": ["/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
                  "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"],
  "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]}})");
}

inline BundleConfig read_config(const nlohmann::json& j, MappingPolicy policy = {}) {
    return read_bundle_config("/srv/bundle", j.dump(), policy);
}

// The error read_config throws, or "" when it reads the config.
inline std::string refusal_of(const nlohmann::json& j, MappingPolicy policy = {}) {
    try {
        read_config(j, policy);
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

inline bool has_note(const BundleConfig& c, NoteKind kind, const std::string& field) {
    for (const auto& n : c.notes)
        if (n.kind == kind && n.field == field) return true;
    return false;
}

}  // namespace corral::oci::testing
