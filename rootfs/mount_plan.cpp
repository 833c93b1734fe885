// rootfs/mount_plan.cpp — the ordered plan of the box's mounts (its options
// are checked by spec_checks.cpp; the plan is described by plan_describe.cpp).
//
// The order of the plan is the contract (checked by tests/rootfs): propagation
// made private first, then scratch, then the root mount, then every directory
// before anything is mounted on or below it, every Bind followed by the
// Remount that sets its flags, and (host mode) the root made read-only last.
#include "rootfs/mount_plan.hpp"

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "base/sys_error.hpp"
#include "rootfs/host_paths.hpp"
#include "rootfs/minimal_etc.hpp"
#include "rootfs/box_path.hpp"
#include "rootfs/spec_checks.hpp"

namespace corral::rootfs {

namespace {

// Every mount the box sees carries nosuid and nodev; read-only ones add MS_RDONLY.
constexpr unsigned long kSafe = MS_NOSUID | MS_NODEV;
constexpr unsigned long kReadOnly = MS_RDONLY | kSafe;
// Device nodes (bound from the host) and devpts must allow device access, so
// they are the only mounts without nodev; they get noexec instead.
constexpr unsigned long kDeviceNode = MS_NOSUID | MS_NOEXEC;

// The box's device nodes, by their fixed Linux device numbers (devices.txt):
// created with mknod on /dev's tmpfs rather than bind-mounted from the host,
// six mknods instead of eighteen mounts and files on every run's critical path.
struct DeviceNode {
    std::string_view name;
    unsigned major, minor;
};
constexpr std::array<DeviceNode, 6> kDeviceNodes = {{{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7},
                                                     {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}}};
// Like Docker: the kernel knobs and triggers under /proc stay visible but read-only.
constexpr std::array<std::string_view, 5> kProcReadOnly = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"};
// Also like Docker: files that show host-wide kernel state (other processes' timers
// and names, keys, memory) are covered by an unreadable node, whole directories
// of hardware knobs by an empty read-only tmpfs. Absent ones are skipped.
constexpr std::array<std::string_view, 6> kProcMaskedFiles = {"/proc/kcore", "/proc/keys", "/proc/timer_list",
                                                              "/proc/sched_debug", "/proc/latency_stats", "/proc/timer_stats"};
constexpr std::array<std::string_view, 3> kProcMaskedDirs = {"/proc/acpi", "/proc/scsi", "/proc/asound"};
// The top-level library/program directories of the host; on merged-/usr hosts these are symlinks.
constexpr std::array<std::string_view, 6> kHostTopDirs = {"bin", "sbin", "lib", "lib32", "lib64", "libx32"};

std::string parent_of(const std::string& p) {
    auto slash = p.rfind('/');
    return slash == 0 ? std::string("/") : p.substr(0, slash);
}

enum class PathKind { missing, directory, symlink, other };

PathKind host_path_kind(const std::string& p) {
    struct stat st {};
    if (lstat(p.c_str(), &st) != 0) return PathKind::missing;
    if (S_ISLNK(st.st_mode)) return PathKind::symlink;
    if (S_ISDIR(st.st_mode)) return PathKind::directory;
    return PathKind::other;
}

// A directory, or a symlink to one (a bind follows the link on the host side).
bool host_is_directory(const std::string& p) {
    struct stat st {};
    return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string read_link(const std::string& p) {
    std::array<char, PATH_MAX> buf{};
    ssize_t n = readlink(p.c_str(), buf.data(), buf.size() - 1);
    if (n < 0) throw SysError("readlink", p, errno);
    return std::string(buf.data(), static_cast<std::size_t>(n));
}

// A remount that drops a restriction the source mount has would widen access
// (and fails for locked mounts in a user namespace): keep the source's noexec
// and read-only (a workspace on a read-only bind stays read-only in the box).
unsigned long restrictions_of(const std::string& host_path) {
    struct statvfs sv {};
    if (statvfs(host_path.c_str(), &sv) != 0) return 0;
    return ((sv.f_flag & ST_NOEXEC) ? MS_NOEXEC : 0) | ((sv.f_flag & ST_RDONLY) ? MS_RDONLY : 0);
}


// Builds the op list; each helper appends ops in the order they must run.
class Planner {
public:
    explicit Planner(MountPlan& plan) : plan_(plan) {}

    void host_dir(const std::string& path, mode_t mode) {
        MountOp op{.kind = MountKind::MakeDir, .target = path, .in_root = false, .mode = mode};
        plan_.ops.push_back(op);
    }
    void host_dir_owned(const std::string& path, mode_t mode, uid_t uid, gid_t gid) {
        MountOp op{.kind = MountKind::MakeDir, .target = path, .in_root = false, .mode = mode,
                   .set_owner = true, .uid = uid, .gid = gid};
        plan_.ops.push_back(op);
    }
    void host_mount(const std::string& source, const std::string& target, const std::string& fstype,
                    unsigned long flags, const std::string& data) {
        MountOp op{.kind = MountKind::Mount, .source = source, .target = target, .in_root = false,
                   .fstype = fstype, .flags = flags, .data = data};
        plan_.ops.push_back(op);
    }
    void host_file(const std::string& path, const std::string& content, mode_t mode) {
        MountOp op{.kind = MountKind::WriteFile, .target = path, .in_root = false, .data = content, .mode = mode};
        plan_.ops.push_back(op);
    }

    void dir(const std::string& box_path, mode_t mode = 0755) {
        plan_.ops.push_back(MountOp{.kind = MountKind::MakeDir, .target = box_path, .mode = mode});
    }
    void dir_owned(const std::string& box_path, mode_t mode, uid_t uid, gid_t gid) {
        plan_.ops.push_back(MountOp{.kind = MountKind::MakeDir, .target = box_path, .mode = mode,
                                    .set_owner = true, .uid = uid, .gid = gid});
    }
    void file(const std::string& box_path, const std::string& content, mode_t mode = 0644) {
        plan_.ops.push_back(MountOp{.kind = MountKind::WriteFile, .target = box_path, .data = content, .mode = mode});
    }
    // The image's own file (or link) at box_path is replaced in the overlay;
    // skipped when its directory does not resolve inside the image (an
    // image's /etc linked out of it).
    void replace_file(const std::string& box_path, const std::string& content, mode_t mode = 0644) {
        plan_.ops.push_back(MountOp{.kind = MountKind::WriteFile, .target = box_path, .data = content, .mode = mode,
                                    .optional = true, .replace = true});
    }
    void append(const std::string& box_path, const std::string& content) {
        plan_.ops.push_back(MountOp{.kind = MountKind::AppendFile, .target = box_path, .data = content, .optional = true});
    }
    void symlink(const std::string& box_path, const std::string& link_text) {
        plan_.ops.push_back(MountOp{.kind = MountKind::Symlink, .source = link_text, .target = box_path});
    }
    void mount(const std::string& source, const std::string& box_path, const std::string& fstype,
               unsigned long flags, const std::string& data) {
        plan_.ops.push_back(MountOp{.kind = MountKind::Mount, .source = source, .target = box_path,
                                    .fstype = fstype, .flags = flags, .data = data});
    }
    // A mount skipped when its target does not exist (parts of /proc depend on the kernel's config).
    void optional_mount(const std::string& source, const std::string& box_path, const std::string& fstype,
                        unsigned long flags, const std::string& data) {
        plan_.ops.push_back(MountOp{.kind = MountKind::Mount, .source = source, .target = box_path,
                                    .fstype = fstype, .flags = flags, .data = data, .optional = true});
    }
    // A bind is always followed by the remount that gives it its flags: mount(2)
    // ignores every flag but MS_REC on the bind itself.
    void bind(const std::string& host_source, const std::string& box_path, unsigned long flags, bool optional = false) {
        plan_.ops.push_back(MountOp{.kind = MountKind::Bind, .source = host_source, .target = box_path,
                                    .flags = flags, .optional = optional});
        plan_.ops.push_back(MountOp{.kind = MountKind::Remount, .target = box_path, .flags = flags, .optional = optional});
    }
    // Like bind(), but the source's on-disk owner and group show in the box as
    // the agent's (an ID-mapped mount made before the clone: prepare_idmapped_trees).
    void bind_owned_by_agent(const std::string& option, const std::string& host_source, const std::string& box_path,
                             unsigned long flags, uid_t disk_uid, gid_t disk_gid, uid_t agent_uid, gid_t agent_gid) {
        plan_.ops.push_back(MountOp{.kind = MountKind::AttachTree, .source = host_source, .target = box_path,
                                    .flags = flags, .uid = agent_uid, .gid = agent_gid, .disk_uid = disk_uid,
                                    .disk_gid = disk_gid, .option = option});
        plan_.ops.push_back(MountOp{.kind = MountKind::Remount, .target = box_path, .flags = flags});
    }
    void mount_point_file(const std::string& box_path, mode_t mode = 0644) {
        plan_.ops.push_back(MountOp{.kind = MountKind::MakeFile, .target = box_path, .mode = mode});
    }
    void node(const std::string& box_path, mode_t mode, dev_t rdev) {
        plan_.ops.push_back(MountOp{.kind = MountKind::MakeNode, .target = box_path, .mode = mode, .rdev = rdev});
    }
    void remount(const std::string& box_path, unsigned long flags) {
        plan_.ops.push_back(MountOp{.kind = MountKind::Remount, .target = box_path, .flags = flags});
    }

    // A host directory shown read-only at the same path in the box.
    void host_ro_dir(const std::string& path) {
        dir(path);
        bind(path, path, kReadOnly | restrictions_of(path));
    }
    // A host file shown read-only at the same path in the box.
    void host_ro_file(const std::string& path) {
        mount_point_file(path);
        bind(path, path, kReadOnly | restrictions_of(path));
    }

private:
    MountPlan& plan_;
};

void plan_scratch(Planner& p, const RootfsSpec& spec) {
    // Ancestors of scratch (/run/corral, /run/corral/scratch) are created root-only if missing.
    std::vector<std::string> ancestors;
    for (std::string a = parent_of(spec.scratch_dir); a != "/"; a = parent_of(a)) ancestors.insert(ancestors.begin(), a);
    for (const auto& a : ancestors) p.host_dir(a, 0700);
    p.host_dir(spec.scratch_dir, 0700);
    // The tmpfs exists only in the sandbox's mount namespace: the host sees an
    // empty directory, and everything below vanishes with the namespace.
    p.host_mount("corral-scratch", spec.scratch_dir, "tmpfs", kSafe,
                 "mode=0700,size=" + std::to_string(spec.scratch_size_bytes));
    p.host_dir(spec.scratch_dir + "/root", 0755);
}

void plan_host_root(Planner& p, const RootfsSpec& spec, const std::string& new_root) {
    // A small fresh tmpfs holds the mount points, the links and the generated
    // /etc; it is made read-only once everything is in place.
    p.host_mount("corral-root", new_root, "tmpfs", kSafe, "mode=0755,size=4m");

    for (auto name : kHostTopDirs) {
        std::string path = "/" + std::string(name);
        switch (host_path_kind(path)) {
            case PathKind::symlink: p.symlink(path, read_link(path)); break;  // merged /usr: bin -> usr/bin
            case PathKind::directory: p.host_ro_dir(path); break;
            default: break;
        }
    }
    if (host_path_kind("/usr") != PathKind::directory)
        throw UsageError("--rootfs host: the host has no /usr directory to show; use --rootfs DIR");
    p.host_ro_dir("/usr");

    p.dir("/etc");
    p.file("/etc/passwd", passwd_file(spec));
    p.file("/etc/group", group_file(spec));
    p.file("/etc/hosts", hosts_file(spec));
    p.file("/etc/resolv.conf", resolv_conf());
    p.file("/etc/nsswitch.conf", nsswitch_conf());
    p.file("/etc/hostname", hostname_file(spec));
    // Links into /usr cost nothing and are safe to copy as-is.
    for (const char* link : {"/etc/os-release", "/etc/localtime"})
        if (host_path_kind(link) == PathKind::symlink) p.symlink(link, read_link(link));
    // The dynamic loader's cache finds libraries outside the default paths (/usr/local/lib).
    if (host_path_kind("/etc/ld.so.cache") == PathKind::other) p.host_ro_file("/etc/ld.so.cache");
    // Debian's alternatives are symlinks only (awk, editor, ...), no secrets.
    if (host_is_directory("/etc/alternatives")) p.host_ro_dir("/etc/alternatives");
    // The CA trust store, so TLS clients work. /etc/ssl/private is never shown.
    if (host_is_directory("/etc/ssl/certs")) {
        p.dir("/etc/ssl");
        p.host_ro_dir("/etc/ssl/certs");
    }
    if (host_is_directory("/etc/ca-certificates")) p.host_ro_dir("/etc/ca-certificates");

    // The agent's home lives on scratch (capped, gone with the run).
    if (!spec.home_dir) p.host_dir_owned(spec.scratch_dir + "/home", 0700, spec.agent_uid, spec.agent_gid);
    p.dir("/home");
    p.dir(agent_home(spec), 0700);
    p.bind(spec.home_dir.value_or(spec.scratch_dir + "/home"), agent_home(spec), kSafe);

    p.dir("/root", 0700);
    p.dir("/var");
    p.symlink("/var/tmp", "/tmp");
    p.dir("/sys", 0555);  // empty: no host /sys in the box
}

void plan_image_accounts_and_etc(Planner& p, const RootfsSpec& spec);

// --review: DIR's ID-mapped copy is the lower layer, a tmpfs of the
// scratch size (made by prepare_idmapped_trees) holds the upper and work directories, both attached
// on scratch (gone with the box's mount namespace), and the overlay of them is
// /workspace. The upper's root is the agent's with DIR's mode, as the bind's
// root would show; what the agent writes lands in the tmpfs, never in DIR.
void plan_review_workspace(MountPlan& plan, const RootfsSpec& spec, const struct stat& dir_st) {
    Planner p(plan);
    const std::string lower = spec.scratch_dir + "/ws-lower", layer = spec.scratch_dir + "/ws-upper";
    p.host_dir(lower, 0700);
    plan.ops.push_back(MountOp{.kind = MountKind::AttachTree, .source = *spec.workspace, .target = lower,
                               .in_root = false, .flags = kSafe, .uid = spec.agent_uid, .gid = spec.agent_gid,
                               .disk_uid = dir_st.st_uid, .disk_gid = dir_st.st_gid, .option = "--workspace"});
    p.host_dir(layer, 0700);
    plan.ops.push_back(MountOp{.kind = MountKind::AttachTree, .source = "the review's upper layer", .target = layer,
                               .in_root = false, .data = std::to_string(spec.scratch_size_bytes), .idmapped = false,
                               .option = "--review"});
    p.host_dir_owned(layer + "/upper", dir_st.st_mode & 07777, spec.agent_uid, spec.agent_gid);
    p.host_dir(layer + "/work", 0700);
    p.dir("/workspace");
    // Writes go to the upper layer, so a read-only DIR is no reason for a
    // read-only /workspace; a noexec one stays noexec.
    const unsigned long flags = kSafe | (restrictions_of(*spec.workspace) & MS_NOEXEC);
    MountOp op{.kind = MountKind::Overlay, .source = layer + "/upper", .target = "/workspace", .fstype = "overlay",
               .flags = flags, .data = layer + "/work", .review = true};
    op.lowers = {lower};
    plan.ops.push_back(std::move(op));
    p.remount("/workspace", flags);
}

void plan_image_root(Planner& p, const RootfsSpec& spec, const std::string& image_real, const std::string& new_root) {
    struct stat st {};
    if (stat(image_real.c_str(), &st) != 0) throw SysError("stat", image_real, errno);
    // The merged root takes its owner and mode from the upper directory: copy the image's.
    p.host_dir_owned(spec.scratch_dir + "/upper", st.st_mode & 07777, st.st_uid, st.st_gid);
    p.host_dir(spec.scratch_dir + "/work", 0700);
    p.host_mount("corral-image", new_root, "overlay", kSafe,
                 "lowerdir=" + image_real + ",upperdir=" + spec.scratch_dir + "/upper,workdir=" + spec.scratch_dir + "/work");
    plan_image_accounts_and_etc(p, spec);
}

// image:NAME: its layers are the overlay's lower layers, as stored.
void plan_layered_root(Planner& p, const RootfsSpec& spec, MountPlan& plan) {
    // The merged root's owner and mode are the upper directory's: root's, 0755,
    // whatever a layer says of its own root (an unpacked bundle's 0700 root
    // would lock the agent out of /).
    p.host_dir_owned(spec.scratch_dir + "/upper", 0755, 0, 0);
    p.host_dir(spec.scratch_dir + "/work", 0700);
    MountOp op{.kind = MountKind::Overlay, .source = spec.scratch_dir + "/upper", .target = plan.new_root,
               .in_root = false, .fstype = "overlay", .flags = kSafe, .data = spec.scratch_dir + "/work"};
    op.lowers.assign(spec.image_layers.rbegin(), spec.image_layers.rend());
    plan.ops.push_back(std::move(op));
    plan_image_accounts_and_etc(p, spec);
}

// Both image modes: the agent's account, the box's own network files and
// the working directory (an image's WorkingDir, an OCI process's cwd), made
// in the overlay when the image lacks it.
void plan_image_accounts_and_etc(Planner& p, const RootfsSpec& spec) {
    if (!spec.image_working_dir.empty()) {
        std::vector<std::string> dirs;
        for (std::string a = spec.image_working_dir; a != "/"; a = parent_of(a)) dirs.insert(dirs.begin(), a);
        for (const auto& d : dirs) p.dir(d);
    }
    // An image's /etc/hosts lacks the box's name (or localhost), its
    // /etc/hostname names the machine the image was built on and its
    // resolv.conf the build host's DNS: the box gets host mode's files,
    // written in the overlay (the image is untouched).
    p.dir("/etc");
    p.replace_file("/etc/hosts", hosts_file(spec));
    p.replace_file("/etc/hostname", hostname_file(spec));
    p.replace_file("/etc/resolv.conf", resolv_conf());
    // The agent gets an account in the image's own files (copied up; the image is untouched).
    p.append("/etc/passwd", agent_passwd_line(spec));
    p.append("/etc/group", agent_group_line(spec));
    p.dir("/home");
    p.dir_owned(agent_home(spec), 0700, spec.agent_uid, spec.agent_gid);
    if (spec.home_dir) p.bind(*spec.home_dir, agent_home(spec), kSafe);
}

void plan_proc(Planner& p) {
    p.dir("/proc", 0555);
    // Mounted by the sandbox's init inside its PID namespace: shows only the box's processes.
    p.mount("proc", "/proc", "proc", kSafe | MS_NOEXEC, "");
    for (auto path : kProcReadOnly) p.bind("", std::string(path), kReadOnly | MS_NOEXEC, /*optional=*/true);
    // /dev/null on a nodev mount: any open fails with EACCES.
    for (auto path : kProcMaskedFiles) p.bind("/dev/null", std::string(path), kReadOnly | MS_NOEXEC, /*optional=*/true);
    for (auto path : kProcMaskedDirs)
        p.optional_mount("corral-masked", std::string(path), "tmpfs", kReadOnly | MS_NOEXEC, "size=4k,mode=0555");
}

void plan_dev(Planner& p, const RootfsSpec& spec) {
    p.dir("/dev");
    // The one data mount without nodev: it holds exactly these six nodes, made
    // by corral's init, and is read-only before anything of the box runs (the
    // agent has no CAP_MKNOD either). Like runc's /dev outside user namespaces.
    p.mount("corral-dev", "/dev", "tmpfs", kDeviceNode, "mode=0755,size=64k");
    for (const auto& d : kDeviceNodes) p.node("/dev/" + std::string(d.name), 0666, makedev(d.major, d.minor));
    p.dir("/dev/pts");
    // A private devpts instance: the box cannot reach the host's terminals.
    // Its ptys still come out of the host-wide pool (kernel.pty.max, less the
    // reserve of the host's own instance): `max` keeps one box from taking
    // them all from the host's other boxes.
    p.mount("devpts", "/dev/pts", "devpts", kDeviceNode,
            "newinstance,ptmxmode=0666,mode=0620,max=" + std::to_string(kBoxPtyMax));
    p.symlink("/dev/ptmx", "pts/ptmx");
    p.dir("/dev/shm", 01777);
    p.mount("corral-shm", "/dev/shm", "tmpfs", kSafe | MS_NOEXEC, "mode=1777,size=" + std::to_string(spec.shm_size_bytes));
    p.symlink("/dev/fd", "/proc/self/fd");
    p.symlink("/dev/stdin", "/proc/self/fd/0");
    p.symlink("/dev/stdout", "/proc/self/fd/1");
    p.symlink("/dev/stderr", "/proc/self/fd/2");
    p.remount("/dev", MS_RDONLY | kDeviceNode);
}

// /sys holds only the box's own cgroups, read-only: a small tmpfs at /sys
// (nothing else of sysfs), then either the v2 cgroup at /sys/fs/cgroup or,
// on a v1/hybrid host, a tmpfs there with one directory per hierarchy, as the
// host lays them out. Each bind's root is the run's own cgroup directory, so
// `..` from it stays in the box's tree; read-only and noexec, on top of the
// agent having no capability and the files being root's.
void plan_cgroup_views(Planner& p, const RootfsSpec& spec) {
    if (spec.cgroup_views.empty()) return;
    constexpr unsigned long kView = kReadOnly | MS_NOEXEC;
    p.dir("/sys", 0555);
    p.mount("corral-sys", "/sys", "tmpfs", kSafe | MS_NOEXEC, "mode=0755,size=16k");
    p.dir("/sys/fs");
    p.dir("/sys/fs/cgroup");
    const bool v2_only = spec.cgroup_views.size() == 1 && spec.cgroup_views.front().box_dir.empty();
    if (!v2_only) p.mount("corral-cgroup", "/sys/fs/cgroup", "tmpfs", kSafe | MS_NOEXEC, "mode=0755,size=16k");
    for (const auto& v : spec.cgroup_views) {
        const std::string target = v.box_dir.empty() ? "/sys/fs/cgroup" : "/sys/fs/cgroup/" + v.box_dir;
        if (!v.box_dir.empty()) p.dir(target);
        p.bind(v.host_dir, target, kView);
    }
    if (!v2_only) p.remount("/sys/fs/cgroup", kView);
    p.remount("/sys", kView);
}

void plan_extra_files(Planner& p, const RootfsSpec& spec) {
    if (spec.extra_files.empty()) return;
    p.host_dir(spec.scratch_dir + "/files", 0755);
    for (std::size_t i = 0; i < spec.extra_files.size(); ++i) {
        const auto& f = spec.extra_files[i];
        std::string staged = spec.scratch_dir + "/files/" + std::to_string(i);
        p.host_file(staged, f.content, f.mode);
        std::vector<std::string> parents;
        for (std::string a = parent_of(f.path_in_box); a != "/"; a = parent_of(a)) parents.insert(parents.begin(), a);
        for (const auto& a : parents) p.dir(a);
        p.mount_point_file(f.path_in_box, f.mode);
        p.bind(staged, f.path_in_box, kReadOnly);
    }
}

void plan_box_tmpfs(Planner& p, const RootfsSpec& spec) {
    for (const auto& t : spec.tmpfs) {
        std::vector<std::string> chain;
        for (std::string a = t.target; a != "/"; a = parent_of(a)) chain.insert(chain.begin(), a);
        for (const auto& a : chain) p.dir(a);
        char data[96];
        std::snprintf(data, sizeof data, "mode=%o,size=%llu,uid=%u,gid=%u", static_cast<unsigned>(t.mode),
                      static_cast<unsigned long long>(t.size_bytes), spec.agent_uid, spec.agent_gid);
        p.mount("corral-tmpfs", t.target, "tmpfs",
                kSafe | (t.noexec ? MS_NOEXEC : 0) | (t.read_only ? MS_RDONLY : 0), data);
    }
}

// Ancestors first: a bind target's parents may not exist in the box yet.
void plan_binds(Planner& p, const RootfsSpec& spec) {
    for (const auto& b : spec.binds) {
        struct stat st {};
        if (stat(b.source.c_str(), &st) != 0) throw UsageError(b.option + " " + b.source + ": cannot access: " + errno_text(errno));
        // A file's mount point is a file: its parents are directories.
        const bool one_file = S_ISREG(st.st_mode);
        std::vector<std::string> chain;
        for (std::string a = one_file ? parent_of(b.target) : b.target; a != "/"; a = parent_of(a))
            chain.insert(chain.begin(), a);
        for (const auto& a : chain) p.dir(a);
        if (one_file) p.mount_point_file(b.target);
        p.bind_owned_by_agent(b.option, b.source, b.target,
                              kSafe | restrictions_of(b.source) | (b.read_only ? MS_RDONLY : 0) | (b.noexec ? MS_NOEXEC : 0),
                              st.st_uid, st.st_gid, spec.agent_uid, spec.agent_gid);
    }
}

// DIR: an absolute directory only root can redirect, not "/", its real path
// fit for overlayfs's option and outside scratch. Returns that real path.
std::string check_image_dir(const std::string& dir, const RootfsSpec& spec) {
    if (dir.empty() || dir.front() != '/')
        throw UsageError("--rootfs " + dir + ": expected \"host\" or an absolute path to a directory");
    require_directory("--rootfs", dir);
    // The overlay's lower layer is mounted by path: the path must be one
    // no one but root can redirect (host_paths.hpp).
    require_root_only_tree("--rootfs", dir);
    char* real = realpath(dir.c_str(), nullptr);
    if (!real) throw UsageError("--rootfs " + dir + ": cannot resolve: " + errno_text(errno));
    std::string image_real = real;
    std::free(real);
    if (image_real == "/")
        throw UsageError("--rootfs " + dir + ": the host's root directory cannot be an image; use --rootfs host");
    if (image_real.find_first_of(",:\\") != std::string::npos)
        throw UsageError("--rootfs " + dir + ": overlayfs cannot take a path containing ',', ':' or '\\' (resolved to " +
                         image_real + "); move or rename the image directory");
    if (is_at_or_below(spec.scratch_dir, image_real))
        throw UsageError("--rootfs " + dir + ": contains corral's scratch directory " + spec.scratch_dir +
                         "; use an image directory outside it");
    return image_real;
}

}  // namespace

MountPlan plan_rootfs(const RootfsSpec& spec) {
    if (!is_normalized_absolute(spec.scratch_dir) || spec.scratch_dir == "/")
        throw UsageError("scratch directory \"" + spec.scratch_dir + "\": expected a normalized absolute path like /run/corral/scratch/<run-id>");
    validate_names(spec);
    validate_sizes(spec);
    validate_extra_files(spec);

    const bool host_mode = std::holds_alternative<names::HostRootfs>(spec.source);
    const bool layered = std::holds_alternative<names::ImageRootfs>(spec.source);
    std::string image_real;
    if (layered) validate_layers(spec);
    else if (const auto* dir = std::get_if<names::DirRootfs>(&spec.source)) {
        image_real = check_image_dir(dir->path, spec);
        validate_working_dir(spec);
    }
    if (spec.workspace) check_host_source("--workspace", *spec.workspace, spec, host_mode, image_real);
    check_binds(spec, host_mode, image_real);
    check_box_tmpfs(spec);

    MountPlan plan;
    plan.protected_dirs = spec.protected_dirs;
    plan.scratch_dir = spec.scratch_dir;
    plan.new_root = spec.scratch_dir + "/root";
    Planner p(plan);
    // Nothing this namespace mounts may propagate back to the host (or in from it).
    plan.ops.push_back(MountOp{.kind = MountKind::Mount, .target = "/", .in_root = false, .flags = MS_REC | MS_PRIVATE});
    plan_scratch(p, spec);
    if (host_mode) plan_host_root(p, spec, plan.new_root);
    else if (layered) plan_layered_root(p, spec, plan);
    else plan_image_root(p, spec, image_real, plan.new_root);
    plan_proc(p);
    plan_dev(p, spec);
    plan_cgroup_views(p, spec);
    p.dir("/tmp", 01777);
    p.mount("corral-tmp", "/tmp", "tmpfs", kSafe, "mode=1777,size=" + std::to_string(spec.tmp_size_bytes));
    if (spec.workspace) {
        // The agent works as the workspace's owner: what it writes lands on
        // disk as the owner's, never as the run's leased UID.
        struct stat st {};
        if (stat(spec.workspace->c_str(), &st) != 0) throw UsageError("--workspace " + *spec.workspace + ": cannot access: " + errno_text(errno));
        if (spec.review) {
            plan_review_workspace(plan, spec, st);
        } else {
            p.dir("/workspace");
            p.bind_owned_by_agent("--workspace", *spec.workspace, "/workspace", kSafe | restrictions_of(*spec.workspace),
                                  st.st_uid, st.st_gid, spec.agent_uid, spec.agent_gid);
        }
    } else if (host_mode) {
        // The command still starts in /workspace: an empty directory of the
        // agent's on scratch (the root tmpfs itself becomes read-only).
        p.host_dir_owned(spec.scratch_dir + "/workspace", 0755, spec.agent_uid, spec.agent_gid);
        p.dir("/workspace");
        p.bind(spec.scratch_dir + "/workspace", "/workspace", kSafe);
    } else {
        // In the overlay: created in (or copied up to) the upper layer, owned by the agent.
        p.dir_owned("/workspace", 0755, spec.agent_uid, spec.agent_gid);
    }
    plan_box_tmpfs(p, spec);
    plan_binds(p, spec);
    plan_extra_files(p, spec);
    // The generated root holds only mount points, links and /etc: nothing in it
    // needs to change once the box runs. (An image root stays writable: writes
    // go to the overlay's upper layer on scratch.)
    if (host_mode) p.remount("/", kReadOnly);
    return plan;
}

std::vector<std::string> image_lookup_dirs(const RootfsSpec& spec) {
    if (std::holds_alternative<names::HostRootfs>(spec.source)) return {};
    if (const auto* dir = std::get_if<names::DirRootfs>(&spec.source)) return {dir->path};
    return {spec.image_layers.rbegin(), spec.image_layers.rend()};
}

std::vector<std::string> host_rootfs_dirs() {
    std::vector<std::string> dirs = {"/usr"};
    for (auto name : kHostTopDirs)
        if (host_path_kind("/" + std::string(name)) == PathKind::directory) dirs.push_back("/" + std::string(name));
    return dirs;
}

// Moves the plan's /proc mounts (the proc mount and its masks) out of the
// init's plan into their own, re-rooted at "/": the invocation's PID 1 applies
// them after pivot_root, so the box's only /proc is the one of the nested PID
// namespace (a /proc mounted by the init would show other PIDs than getpid()
// returns in there, and would cost its mounts twice). The /proc directory
// itself stays in the init's plan: the root may be read-only by then.
MountPlan take_proc_mounts(MountPlan& plan) {
    MountPlan p;
    p.new_root = "/";
    p.scratch_dir = plan.scratch_dir;
    auto is_proc_mount = [](const MountOp& op) {
        bool under_proc = op.target == "/proc" || op.target.starts_with("/proc/");
        bool mounts = op.kind == MountKind::Mount || op.kind == MountKind::Bind ||
                      op.kind == MountKind::Remount;
        return op.in_root && under_proc && mounts;
    };
    std::vector<MountOp> kept;
    kept.reserve(plan.ops.size());
    for (auto& op : plan.ops) (is_proc_mount(op) ? p.ops : kept).push_back(std::move(op));
    plan.ops = std::move(kept);
    return p;
}

bool box_protects_path(std::string_view path) {
    if (is_at_or_below(path, "/sys")) return true;
    for (auto p : kProcReadOnly)
        if (is_at_or_below(path, p)) return true;
    for (auto p : kProcMaskedDirs)
        if (is_at_or_below(path, p)) return true;
    return std::find(kProcMaskedFiles.begin(), kProcMaskedFiles.end(), path) != kProcMaskedFiles.end();
}

std::optional<std::pair<unsigned, unsigned>> box_device_node(std::string_view path) {
    for (const auto& d : kDeviceNodes)
        if (path == "/dev/" + std::string(d.name)) return std::make_pair(d.major, d.minor);
    return std::nullopt;
}

}  // namespace corral::rootfs
