// oci/bundle_config.hpp — an OCI bundle's config.json (runtime spec 1.0 to
// 1.2) read strictly and mapped onto what corral runs (issue 34,
// docs/oci-runtime.md "config.json, field by field").
//
// Pure: the caller reads BUNDLE/config.json and hands its text here with the
// bundle's absolute path; nothing touches the file system. The result is
// what the OCI front turns into corral's run request, plus notes for the run
// record: every place where the box differs from what the config asked
// (mapped, reduced, replaced) or where a field changes nothing (ignored).
//
// Refused (UsageError "config.json: PATH: why; what corral allows"):
// invalid JSON, a value of the wrong type, a spec field corral cannot
// honour (a user namespace with mappings, a mount over /proc, a capability
// beyond the engines' default set, a device node, hooks, ...). A property
// the spec does not know is ignored with a note, as the spec's
// extensibility rule asks; an ociVersion corral does not know is refused,
// so a later spec's fields cannot slip through as unknown.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace corral::oci {

// What corral did with a field the config asked for.
enum class NoteKind {
    mapped,    // honoured in corral's terms (root in the box → the box's leased UID)
    reduced,   // granted less than asked (the engines' default capabilities → none)
    replaced,  // corral's own instead (the engine's network namespace → corral's loopback-only one)
    ignored,   // changes nothing in corral's box (a CPU weight, an unknown property)
};
std::string_view to_string(NoteKind kind);

struct ConfigNote {
    NoteKind kind = NoteKind::mapped;
    std::string field;  // the JSON path: "process.user.uid", "linux.namespaces[2]"
    std::string text;   // one sentence: what was asked, what the box gets
};

// How strictly to map. Configurable only towards less: strict turns every
// reduction (a capability dropped, a propagation made private) into a refusal.
struct MappingPolicy {
    bool strict = false;
};

struct Rlimit {
    std::string type;  // "RLIMIT_NOFILE"
    std::uint64_t soft = 0;
    std::uint64_t hard = 0;
};

struct ProcessPlan {
    std::vector<std::string> args;                            // non-empty
    std::vector<std::pair<std::string, std::string>> env;     // "K=V" split, in order (a later K wins)
    std::string cwd = "/";                                    // absolute, normalised
    bool terminal = false;                                    // the box's pty (--console-socket gets its master)
    std::optional<std::pair<std::uint32_t, std::uint32_t>> console_size;  // height, width
    // What the config asked for; the box runs as its leased UID/GID whatever
    // these say (a note records the mapping).
    std::uint32_t asked_uid = 0;
    std::uint32_t asked_gid = 0;
    std::optional<std::uint32_t> umask;
    // RLIMIT_NOFILE: corral's --nofile (soft = hard). The others are set by
    // the box's init as given (soft ≤ hard checked here).
    std::optional<std::uint64_t> open_files;
    std::vector<Rlimit> rlimits;
};

// A host file or directory shown in the box (corral's --bind/--ro-bind).
struct BindPlan {
    std::string source;  // absolute host path (a relative one is taken against the bundle)
    std::string target;  // absolute, normalised box path
    bool read_only = false;
    bool noexec = false;
    std::string field;   // "mounts[4]"
};

// A capped tmpfs in the box. corral caps every tmpfs: one without size= gets
// corral's default cap (a note says so).
struct TmpfsPlan {
    std::string target;
    std::optional<std::uint64_t> size_bytes;
    std::optional<std::uint32_t> mode;
    bool read_only = false;
    bool noexec = false;
    std::string field;
};

// linux.resources in corral's cgroup limits (supervisor::CgroupLimits).
struct LimitsPlan {
    std::optional<std::uint64_t> memory_bytes;  // memory.limit (swap stays closed)
    std::optional<std::uint64_t> pids;          // pids.limit > 0
    std::optional<double> cpus;                 // cpu.quota / cpu.period
};

struct BundleConfig {
    std::string oci_version;
    ProcessPlan process;
    std::string root_path;                      // absolute host path of the box's root
    bool root_readonly = false;
    std::vector<BindPlan> binds;                // in the config's order
    std::vector<TmpfsPlan> tmpfs;               // other than /tmp and /dev/shm
    std::optional<std::uint64_t> tmp_bytes;     // a tmpfs at /tmp: corral's /tmp, this size
    std::optional<std::uint64_t> shm_bytes;     // /dev/shm's size=, corral's /dev/shm
    std::string hostname;                       // empty: corral's default (checked by the front with the run's rule)
    LimitsPlan limits;
    // linux.seccomp, kept whole: corral's own filter always applies; the
    // front may stack this one after it (a second filter can only deny more).
    std::optional<nlohmann::json> seccomp_profile;
    std::map<std::string, std::string> annotations;
    std::optional<std::string> worker;          // annotation io.corral.worker (a worker name)
    std::optional<std::string> config_dir;      // annotation io.corral.config (an absolute directory)
    std::vector<ConfigNote> notes;
};

inline constexpr std::string_view kWorkerAnnotation = "io.corral.worker";
inline constexpr std::string_view kConfigAnnotation = "io.corral.config";

// The largest config.json read (the runtime's own files are a few KiB;
// Kubernetes' are tens).
inline constexpr std::size_t kMaxConfigBytes = 1u << 20;

// `bundle_dir` is absolute and normalised (the front makes it so). Throws
// UsageError naming the field.
BundleConfig read_bundle_config(std::string_view bundle_dir, std::string_view config_text,
                                const MappingPolicy& policy = {});

// `exec --process FILE`: one process object, as config.json's `process`,
// read by the same reader (what create refuses, exec refuses); the messages
// name its fields as config.json's. Throws UsageError.
ProcessPlan read_process_json(std::string_view text, const MappingPolicy& policy = {});

}  // namespace corral::oci
