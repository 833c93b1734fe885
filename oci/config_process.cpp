// oci/config_process.cpp — config.json's `process`: what runs, as whom (the
// box's leased UID, whatever the config asks), with which limits, and the
// privileges it asks for measured against corral's (none).
#include <algorithm>
#include <array>
#include <set>

#include "oci/config_fields.hpp"
#include "oci/config_sections.hpp"

namespace corral::oci {

namespace {

// Every capability name the kernel knows (up to CAP_CHECKPOINT_RESTORE, 6.x).
constexpr std::array<std::string_view, 41> kKnownCapabilities = {
    "CAP_CHOWN",          "CAP_DAC_OVERRIDE",   "CAP_DAC_READ_SEARCH", "CAP_FOWNER",       "CAP_FSETID",
    "CAP_KILL",           "CAP_SETGID",         "CAP_SETUID",          "CAP_SETPCAP",      "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN",      "CAP_NET_RAW",      "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",      "CAP_SYS_MODULE",     "CAP_SYS_RAWIO",       "CAP_SYS_CHROOT",   "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",      "CAP_SYS_ADMIN",      "CAP_SYS_BOOT",        "CAP_SYS_NICE",     "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",       "CAP_SYS_TTY_CONFIG", "CAP_MKNOD",           "CAP_LEASE",        "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",  "CAP_SETFCAP",        "CAP_MAC_OVERRIDE",    "CAP_MAC_ADMIN",    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",     "CAP_BLOCK_SUSPEND",  "CAP_AUDIT_READ",      "CAP_PERFMON",      "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE"};

// The set podman, containerd and Docker give a container by default. A
// config asking for these is reduced to none (every engine's config asks
// for them, and the box's process is an unprivileged UID with no
// capability in any set); anything beyond them is refused.
constexpr std::array<std::string_view, 14> kEngineDefaultCapabilities = {
    "CAP_AUDIT_WRITE", "CAP_CHOWN",  "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID",  "CAP_KILL",  "CAP_MKNOD",
    "CAP_NET_BIND_SERVICE", "CAP_NET_RAW", "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID",
    "CAP_SYS_CHROOT"};

constexpr std::array<std::string_view, 16> kRlimitTypes = {
    "RLIMIT_AS",     "RLIMIT_CORE",   "RLIMIT_CPU",    "RLIMIT_DATA",   "RLIMIT_FSIZE",      "RLIMIT_LOCKS",
    "RLIMIT_MEMLOCK", "RLIMIT_MSGQUEUE", "RLIMIT_NICE", "RLIMIT_NOFILE", "RLIMIT_NPROC",      "RLIMIT_RSS",
    "RLIMIT_RTPRIO", "RLIMIT_RTTIME", "RLIMIT_SIGPENDING", "RLIMIT_STACK"};

template <std::size_t N>
bool among(const std::array<std::string_view, N>& set, std::string_view name) {
    return std::find(set.begin(), set.end(), name) != set.end();
}

void read_capabilities(const nlohmann::json& caps, const MappingPolicy& policy, BundleConfig& out) {
    ObjectFields f(caps, "process.capabilities", out.notes);
    std::set<std::string> reduced;
    for (std::string_view set : {"bounding", "effective", "inheritable", "permitted", "ambient"}) {
        const nlohmann::json* list = f.find(set);
        if (!list) continue;
        const std::string path = f.path_of(set);
        const auto names = as_string_array(*list, path);
        for (std::size_t i = 0; i < names.size(); ++i) {
            if (!among(kKnownCapabilities, names[i]))
                refuse_field(index_path(path, i), json_quoted(names[i]) + ": not a capability name (CAP_CHOWN, ...)");
            if (!among(kEngineDefaultCapabilities, names[i]))
                refuse_field(index_path(path, i), names[i] + ": corral gives the box no capability and refuses to "
                                                             "give this one; allowed: the engines' default set "
                                                             "(CAP_CHOWN, CAP_KILL, ...), which corral reduces to none");
            reduced.insert(names[i]);
        }
    }
    f.finish();
    if (reduced.empty()) return;
    std::string text = "asked for";
    for (const auto& c : reduced) text += " " + c;
    reduce_or_refuse(policy, out, "process.capabilities", text + ": the box's processes have no capability in any set");
}

void read_rlimits(const nlohmann::json& list, BundleConfig& out) {
    const auto& a = as_array(list, "process.rlimits");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const std::string path = index_path("process.rlimits", i);
        ObjectFields f(a[i], path, out.notes);
        Rlimit r;
        r.type = as_string(f.require("type"), f.path_of("type"));
        r.soft = as_u64(f.require("soft"), f.path_of("soft"));
        r.hard = as_u64(f.require("hard"), f.path_of("hard"));
        f.finish();
        if (!among(kRlimitTypes, r.type))
            refuse_field(f.path_of("type"), json_quoted(r.type) + ": not a Linux resource limit (RLIMIT_NOFILE, ...)");
        if (!seen.insert(r.type).second) refuse_field(f.path_of("type"), r.type + " given twice; give it once");
        if (r.soft > r.hard) refuse_field(path, r.type + ": soft " + std::to_string(r.soft) + " above hard " +
                                                    std::to_string(r.hard));
        if (r.type == "RLIMIT_NOFILE") {
            // corral's --nofile sets soft = hard: the box gets the soft value for both.
            out.process.open_files = r.soft;
            if (r.hard != r.soft)
                out.notes.push_back({NoteKind::reduced, path, "RLIMIT_NOFILE hard " + std::to_string(r.hard) +
                                                                  " lowered to the soft " + std::to_string(r.soft)});
            continue;
        }
        out.process.rlimits.push_back(std::move(r));
    }
}

void read_user(const nlohmann::json& user, BundleConfig& out) {
    ObjectFields f(user, "process.user", out.notes);
    out.process.asked_uid = as_u32(f.require("uid"), f.path_of("uid"));
    out.process.asked_gid = as_u32(f.require("gid"), f.path_of("gid"));
    if (const auto* m = f.find("umask")) out.process.umask = as_u32(*m, f.path_of("umask"));
    if (out.process.umask && *out.process.umask > 0777) refuse_field(f.path_of("umask"), "expected 0 to 0777 (511)");
    if (const auto* g = f.find("additionalGids")) {
        std::vector<std::uint32_t> gids;
        for (std::size_t i = 0; i < as_array(*g, f.path_of("additionalGids")).size(); ++i)
            gids.push_back(as_u32((*g)[i], index_path(f.path_of("additionalGids"), i)));
        if (!gids.empty())
            out.notes.push_back({NoteKind::reduced, f.path_of("additionalGids"),
                                 "the box's processes have the leased GID alone, no supplementary group"});
    }
    f.ignore_harmless("username", "a Windows field; Linux ignores it");
    f.finish();
    out.notes.push_back({NoteKind::mapped, "process.user",
                         "asked for uid " + std::to_string(out.process.asked_uid) + " gid " +
                             std::to_string(out.process.asked_gid) +
                             ": the box runs as its leased UID/GID, never as root"});
}

void read_env(const nlohmann::json& list, BundleConfig& out) {
    const auto vars = as_string_array(list, "process.env");
    for (std::size_t i = 0; i < vars.size(); ++i) {
        const auto eq = vars[i].find('=');
        if (eq == std::string::npos || eq == 0)
            refuse_field(index_path("process.env", i), json_quoted(vars[i]) + ": expected NAME=VALUE");
        out.process.env.emplace_back(vars[i].substr(0, eq), vars[i].substr(eq + 1));
    }
}

void read_console_size(const nlohmann::json& size, BundleConfig& out) {
    ObjectFields f(size, "process.consoleSize", out.notes);
    const std::uint32_t height = as_u32(f.require("height"), f.path_of("height"));
    const std::uint32_t width = as_u32(f.require("width"), f.path_of("width"));
    f.finish();
    out.process.console_size = std::make_pair(height, width);
}

// What the process asks of the kernel beyond its command: corral's own
// answer (no_new_privs always, the highest OOM score, no LSM profile of the
// config's) is recorded where the config asked for something else.
void read_process_privileges(ObjectFields& f) {
    if (auto nnp = f.boolean("noNewPrivileges"); nnp && !*nnp)
        f.note(NoteKind::mapped, "noNewPrivileges", "false asked: corral always sets no_new_privs");
    if (auto score = f.i64("oomScoreAdj")) {
        if (*score < -1000 || *score > 1000) refuse_field(f.path_of("oomScoreAdj"), "expected -1000 to 1000");
        if (*score != 1000)
            f.note(NoteKind::mapped, "oomScoreAdj",
                   std::to_string(*score) + " asked: the box's processes are the first chosen (1000)");
    }
    if (auto profile = f.string("apparmorProfile"); profile && !profile->empty())
        f.note(NoteKind::replaced, "apparmorProfile",
               json_quoted(*profile) + " not applied: the box is confined by corral's own layers (leased UID, no "
                                       "capability, seccomp, namespaces)");
    if (auto label = f.string("selinuxLabel"); label && !label->empty())
        f.note(NoteKind::replaced, "selinuxLabel", json_quoted(*label) + " not applied (corral sets no SELinux label)");
    f.refuse_unless_empty("ioPriority", "corral does not set I/O priorities; allowed: absent");
    f.refuse_unless_empty("scheduler", "corral does not set scheduling policies; allowed: absent");
    f.refuse_unless_empty("execCPUAffinity", "corral does not pin CPUs; allowed: absent");
}

}  // namespace

std::vector<std::string> accepted_capabilities() {
    return {kEngineDefaultCapabilities.begin(), kEngineDefaultCapabilities.end()};
}

void read_process(const nlohmann::json& process, const MappingPolicy& policy, BundleConfig& out) {
    ObjectFields f(process, "process", out.notes);
    out.process.args = as_string_array(f.require("args"), "process.args");
    if (out.process.args.empty() || out.process.args[0].empty())
        refuse_field("process.args", "empty; expected the command and its arguments");
    f.refuse_unless_empty("commandLine", "a Windows field; allowed: absent");
    out.process.cwd = normalise_box_path(as_string(f.require("cwd"), "process.cwd"), "process.cwd");
    if (const auto* env = f.find("env")) read_env(*env, out);
    out.process.terminal = f.boolean("terminal").value_or(false);
    if (const auto* size = f.find("consoleSize")) read_console_size(*size, out);
    if (const auto* user = f.find("user")) read_user(*user, out);
    if (const auto* rl = f.find("rlimits")) read_rlimits(*rl, out);
    if (const auto* caps = f.find("capabilities")) read_capabilities(*caps, policy, out);
    read_process_privileges(f);
    f.finish();
}

}  // namespace corral::oci
