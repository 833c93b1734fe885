// oci/config_mounts.cpp — config.json's `mounts`: binds and tmpfs become
// corral's binds and capped tmpfs; the standard /proc, /sys and /dev entries
// every engine writes are corral's own mounts; anything else is refused
// with its index named.
#include <algorithm>
#include <array>
#include <set>

#include "base/parse.hpp"
#include "base/strict_json.hpp"
#include "base/sys_error.hpp"
#include "oci/config_fields.hpp"
#include "oci/config_sections.hpp"
#include "rootfs/box_path.hpp"
#include "rootfs/mount_plan.hpp"

namespace corral::oci {

namespace {

// The standard entries of an engine's config: corral mounts its own there
// (docs/rootfs.md), so the entry is accepted as asking for what the box has.
struct StandardMount {
    std::string_view destination;
    std::array<std::string_view, 2> types;
};
constexpr std::array<StandardMount, 7> kStandardMounts = {{
    {"/proc", {"proc", ""}},
    {"/dev", {"tmpfs", ""}},
    {"/dev/pts", {"devpts", ""}},
    {"/dev/shm", {"tmpfs", "bind"}},
    {"/dev/mqueue", {"mqueue", ""}},
    {"/sys", {"sysfs", "bind"}},
    {"/sys/fs/cgroup", {"cgroup", "cgroup2"}},
}};

// Files an engine binds in from its own records: corral writes the box's
// own (its hosts and hostname; no resolv.conf servers to ask, since names
// resolve on the host through the gateway).
constexpr std::array<std::string_view, 3> kReplacedEtcFiles = {"/etc/hosts", "/etc/hostname", "/etc/resolv.conf"};

// Mount options that change nothing corral guarantees: access-time
// policies, SELinux relabelling (no SELinux label is set), and the
// propagation corral's mounts have anyway (private, or slave of nothing).
constexpr std::array<std::string_view, 16> kHarmlessOptions = {
    "relatime", "norelatime", "noatime",  "atime",   "strictatime", "nostrictatime", "nodiratime", "diratime",
    "lazytime", "nolazytime", "z",        "Z",       "private",     "rprivate",      "slave",      "rslave"};

template <std::size_t N>
bool listed(const std::array<std::string_view, N>& set, std::string_view s) {
    return std::find(set.begin(), set.end(), s) != set.end();
}

struct RawMount {
    std::string field;
    std::string destination;
    std::string type;
    std::optional<std::string> source;
    std::vector<std::string> options;
};

RawMount read_mount_entry(const nlohmann::json& entry, std::string field, std::vector<ConfigNote>& notes) {
    ObjectFields f(entry, field, notes);
    RawMount m;
    m.field = std::move(field);
    m.destination = normalise_box_path(as_string(f.require("destination"), f.path_of("destination")),
                                       f.path_of("destination"));
    m.type = f.string("type").value_or("");
    m.source = f.string("source");
    if (const auto* o = f.find("options")) m.options = as_string_array(*o, f.path_of("options"));
    f.refuse_unless_empty("uidMappings", "corral maps the box's files itself (ID-mapped binds); allowed: absent");
    f.refuse_unless_empty("gidMappings", "corral maps the box's files itself (ID-mapped binds); allowed: absent");
    f.finish();
    return m;
}

bool is_bind(const RawMount& m) {
    if (m.type == "bind" || m.type == "rbind") return true;
    if (!m.type.empty() && m.type != "none") return false;
    return std::any_of(m.options.begin(), m.options.end(), [](const auto& o) { return o == "bind" || o == "rbind"; });
}

// "size=64m" and the like: the value after '=' when the option is `key=`.
std::optional<std::string> option_value(const std::string& option, std::string_view key) {
    if (option.size() > key.size() && option.compare(0, key.size(), key) == 0 && option[key.size()] == '=')
        return option.substr(key.size() + 1);
    return std::nullopt;
}

std::uint64_t size_option(const std::string& value, const std::string& field) {
    try {
        return parse_size(value);
    } catch (const UsageError& e) {
        refuse_field(field, e.what());
    }
}

// The options every kind of mount may carry, by what corral does with them.
constexpr std::array<std::string_view, 4> kReadOnlyOptions = {"ro", "rro", "rw", "rrw"};
constexpr std::array<std::string_view, 2> kNoexecOptions = {"noexec", "rnoexec"};
// What corral's mounts are anyway (nosuid, nodev) or allow anyway (exec).
constexpr std::array<std::string_view, 6> kGivenOptions = {"nosuid", "rnosuid", "nodev", "rnodev", "exec", "rexec"};
// Asked for, not honoured: corral's mounts are nosuid, nodev and private.
constexpr std::array<std::string_view, 6> kReducedOptions = {"suid", "dev", "shared", "rshared", "unbindable",
                                                             "runbindable"};
constexpr std::array<std::string_view, 2> kBindOptions = {"bind", "rbind"};
// tmpfs's own, with a value (size=64m) or alone (crun's tmpcopyup).
constexpr std::array<std::string_view, 6> kTmpfsOptions = {"size", "mode", "uid", "gid", "nr_inodes", "tmpcopyup"};

// An option every kind of mount may carry; false when it is not one.
bool common_option(const std::string& o, bool& read_only, bool& noexec, std::set<std::string>& reduced) {
    if (listed(kReadOnlyOptions, o)) {
        read_only = o == "ro" || o == "rro";
        return true;
    }
    if (listed(kNoexecOptions, o)) {
        noexec = true;
        return true;
    }
    if (listed(kReducedOptions, o)) {
        reduced.insert(o);
        return true;
    }
    return listed(kGivenOptions, o) || listed(kHarmlessOptions, o);
}

std::string reduction_text(const std::set<std::string>& reduced) {
    std::string text = "options";
    for (const auto& o : reduced) text += " " + o;
    return text + " not honoured: corral's mounts are nosuid, nodev and private";
}

void add_bind(const RawMount& m, std::string_view bundle_dir, const MappingPolicy& policy, BundleConfig& out) {
    if (!m.source) refuse_field(m.field + ".source", "missing; a bind mount needs its host path");
    BindPlan b;
    b.field = m.field;
    b.source = host_path_in_bundle(*m.source, bundle_dir, m.field + ".source");
    b.target = rootfs::check_bind_target("config.json: " + m.field + ".destination", m.destination);
    std::set<std::string> reduced;
    for (std::size_t i = 0; i < m.options.size(); ++i) {
        const std::string& o = m.options[i];
        if (listed(kBindOptions, o) || common_option(o, b.read_only, b.noexec, reduced)) continue;
        refuse_field(index_path(m.field + ".options", i),
                     json_quoted(o) + ": not an option corral honours on a bind (ro, rw, nosuid, nodev, noexec, "
                                      "bind, rbind, the atime and private/slave propagation options)");
    }
    if (!reduced.empty()) reduce_or_refuse(policy, out, m.field + ".options", reduction_text(reduced));
    out.binds.push_back(std::move(b));
}

void add_tmpfs(const RawMount& m, const MappingPolicy& policy, BundleConfig& out) {
    TmpfsPlan t;
    t.field = m.field;
    std::set<std::string> reduced;
    for (std::size_t i = 0; i < m.options.size(); ++i) {
        const std::string& o = m.options[i];
        const std::string path = index_path(m.field + ".options", i);
        if (auto v = option_value(o, "size")) {
            t.size_bytes = size_option(*v, path);
        } else if (auto mode = option_value(o, "mode")) {
            if (mode->empty() || mode->size() > 4 || mode->find_first_not_of("01234567") != std::string::npos)
                refuse_field(path, json_quoted(o) + ": expected mode=OCTAL, e.g. mode=1777");
            t.mode = static_cast<std::uint32_t>(std::stoul(*mode, nullptr, 8));
        } else if (option_value(o, "uid") || option_value(o, "gid")) {
            out.notes.push_back({NoteKind::mapped, path, o + ": the tmpfs is the box's leased UID/GID's"});
        } else if (option_value(o, "nr_inodes") || o == "tmpcopyup") {
            out.notes.push_back({NoteKind::ignored, path, o + ": corral's size cap bounds the tmpfs"});
        } else if (!common_option(o, t.read_only, t.noexec, reduced)) {
            refuse_field(path, json_quoted(o) + ": not an option corral honours on a tmpfs (size=, mode=, uid=, "
                                                "gid=, ro, rw, nosuid, nodev, noexec, the atime options)");
        }
    }
    if (!reduced.empty()) reduce_or_refuse(policy, out, m.field + ".options", reduction_text(reduced));
    if (m.destination == "/tmp") {
        out.tmp_bytes = t.size_bytes;
        out.notes.push_back({NoteKind::replaced, m.field, "/tmp is corral's own capped tmpfs"});
        return;
    }
    t.target = rootfs::check_bind_target("config.json: " + m.field + ".destination", m.destination);
    if (!t.size_bytes)
        out.notes.push_back({NoteKind::mapped, m.field, "no size= given: capped at corral's default tmpfs size"});
    out.tmpfs.push_back(std::move(t));
}

// An entry at /proc, /sys or /dev: one of the standard ones with its usual
// type, or refused. True when it was one of them.
bool take_standard_mount(const RawMount& m, BundleConfig& out, std::vector<std::string>& own) {
    for (const auto& s : kStandardMounts) {
        if (m.destination != s.destination) continue;
        if (!listed(s.types, m.type) || m.type.empty())
            refuse_field(m.field, "type " + json_quoted(m.type) + " at " + m.destination + ": corral mounts its own " +
                                      m.destination + " (" + std::string(s.types[0]) + ") and nothing else there");
        if (m.destination == "/dev/shm")
            for (std::size_t i = 0; i < m.options.size(); ++i)
                if (auto v = option_value(m.options[i], "size"))
                    out.shm_bytes = size_option(*v, index_path(m.field + ".options", i));
        own.push_back(m.destination);
        return true;
    }
    for (std::string_view reserved : {"/proc", "/sys", "/dev"})
        if (rootfs::is_at_or_below(m.destination, reserved))
            refuse_field(m.field, "a mount at " + m.destination + ": " + std::string(reserved) +
                                      " is corral's own and nothing of a config's is mounted in or over it");
    return false;
}

}  // namespace

std::vector<std::string> recognised_mount_options() {
    std::vector<std::string> out;
    auto add = [&out](const auto& set) { out.insert(out.end(), set.begin(), set.end()); };
    add(kBindOptions);
    add(kReadOnlyOptions);
    add(kNoexecOptions);
    add(kGivenOptions);
    add(kReducedOptions);
    add(kHarmlessOptions);
    add(kTmpfsOptions);
    return out;
}

void read_mounts(const nlohmann::json& mounts, std::string_view bundle_dir, const MappingPolicy& policy,
                 BundleConfig& out) {
    const auto& list = as_array(mounts, "mounts");
    std::vector<std::string> own;
    std::set<std::string> destinations;
    for (std::size_t i = 0; i < list.size(); ++i) {
        const RawMount m = read_mount_entry(list[i], index_path("mounts", i), out.notes);
        if (!destinations.insert(m.destination).second)
            refuse_field(m.field + ".destination", m.destination + " is mounted twice; corral mounts each place once");
        if (take_standard_mount(m, out, own)) continue;
        if (listed(kReplacedEtcFiles, m.destination) && is_bind(m)) {
            out.notes.push_back({NoteKind::replaced, m.field, m.destination + " is corral's own file"});
            continue;
        }
        if (is_bind(m))
            add_bind(m, bundle_dir, policy, out);
        else if (m.type == "tmpfs")
            add_tmpfs(m, policy, out);
        else
            refuse_field(m.field + ".type", json_quoted(m.type) + " at " + m.destination +
                                                ": corral mounts a config's binds and tmpfs only");
    }
    if (own.empty()) return;
    std::string text;
    for (const auto& d : own) text += (text.empty() ? "" : ", ") + d;
    out.notes.push_back({NoteKind::replaced, "mounts", text + ": corral's own mounts"});
}

}  // namespace corral::oci
