#include "rootfs/idmapped_tree.hpp"
#include "rootfs/capped_tmpfs.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/sys_error.hpp"
#include "rootfs/disk_overlap.hpp"
#include "rootfs/hazard_scan.hpp"
#include "rootfs/mount_plan.hpp"

namespace corral::rootfs {
namespace {

void write_map(pid_t pid, const char* file, unsigned long from, unsigned long to) {
    const std::string path = "/proc/" + std::to_string(pid) + "/" + file;
    // "ID-inside-ns ID-outside-ns count": inside is the on-disk ID, outside the box's.
    const std::string line = std::to_string(from) + " " + std::to_string(to) + " 1\n";
    Fd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd.valid()) throw SysError("open", path, errno);
    ssize_t n = write(fd.get(), line.data(), line.size());
    if (n != static_cast<ssize_t>(line.size())) throw SysError("write", path + " <- " + line.substr(0, line.size() - 1), n < 0 ? errno : EIO);
}

// The parked child: killed through its pidfd and reaped, whatever happens.
class ParkedChild {
public:
    ParkedChild(pid_t pid, int pidfd) : pid_(pid), pidfd_(pidfd) {}
    ParkedChild(const ParkedChild&) = delete;
    ParkedChild& operator=(const ParkedChild&) = delete;
    ~ParkedChild() {
        syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
        siginfo_t info{};
        while (waitid(P_PIDFD, static_cast<id_t>(pidfd_.get()), &info, WEXITED) != 0 && errno == EINTR) {
        }
    }
    pid_t pid() const { return pid_; }

private:
    pid_t pid_;
    Fd pidfd_;
};

}  // namespace

Fd user_namespace_mapping(const OwnerMapping& mapping) {
    // The child waits for EOF on this pipe: it ends when we are done with it,
    // or when we die (the write end is ours alone), never left parked.
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw SysError("pipe2", "ID-mapping child", errno);
    Fd park_r(pipe_fds[0]);
    Fd park_w(pipe_fds[1]);
    int pidfd = -1;
    clone_args args{};
    args.flags = CLONE_NEWUSER | CLONE_PIDFD;
    args.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
    args.exit_signal = SIGCHLD;
    long pid = syscall(SYS_clone3, &args, sizeof args);
    if (pid < 0) throw SysError("clone3", "CLONE_NEWUSER|CLONE_PIDFD (the workspace's ID mapping)", errno);
    if (pid == 0) {
        // Raw child of a possibly multi-threaded parent: only system calls.
        syscall(SYS_close, park_w.get());
        char c;
        syscall(SYS_read, park_r.get(), &c, 1);
        syscall(SYS_exit_group, 0);
    }
    ParkedChild child(static_cast<pid_t>(pid), pidfd);
    // The writer is root in the parent namespace, so neither map needs
    // setgroups to be denied first, and any outside ID may be named.
    write_map(child.pid(), "uid_map", mapping.disk_uid, mapping.box_uid);
    write_map(child.pid(), "gid_map", mapping.disk_gid, mapping.box_gid);
    const std::string ns_path = "/proc/" + std::to_string(child.pid()) + "/ns/user";
    Fd ns(open(ns_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns.valid()) throw SysError("open", ns_path, errno);
    return ns;
}

namespace {

// The workspace, opened once and checked on that fd: nothing in its path is
// a symlink (one left by an earlier run's agent could point anywhere), it is
// not a kernel pseudo file system, not "/", and neither inside nor around
// a protected directory (compared by inode: aliases and renames cannot hide it).
// One open of `path` (relative to `at`) that follows no symlink on the way:
// the fd, or a UsageError naming the link, or SysError.
Fd open_without_symlinks(int at, const std::string& path, std::uint64_t flags, const std::string& option,
                         const std::string& source) {
    struct open_how how {};
    how.flags = flags;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    int fd = static_cast<int>(syscall(SYS_openat2, at, path.c_str(), &how, sizeof how));
    if (fd < 0) {
        int err = errno;
        if (err == ELOOP) {
            char* real = realpath(source.c_str(), nullptr);
            std::string resolved = real ? real : "?";
            std::free(real);
            throw UsageError(option + " " + source + ": its path goes through a symbolic link (it resolves to " +
                             resolved + "); pass a path without symlinks, so no link planted by a sandbox can "
                             "redirect it");
        }
        throw SysError("openat2", source + ", RESOLVE_NO_SYMLINKS", err);
    }
    return Fd(fd);
}

// A kernel pseudo file system (proc, sysfs, cgroup, ...) is no source.
void refuse_pseudo_fs(int fd, const std::string& option, const std::string& source) {
    struct statfs sfs {};
    if (fstatfs(fd, &sfs) != 0) throw SysError("fstatfs", source, errno);
    static constexpr long kPseudo[] = {PROC_SUPER_MAGIC,   SYSFS_MAGIC,      CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC,
                                       DEVPTS_SUPER_MAGIC, DEBUGFS_MAGIC,    TRACEFS_MAGIC,      SECURITYFS_MAGIC,
                                       BPF_FS_MAGIC,       SELINUX_MAGIC,    SMACK_MAGIC,        PSTOREFS_MAGIC,
                                       EFIVARFS_MAGIC,     NSFS_MAGIC,       BINFMTFS_MAGIC,     0x62656570 /* configfs */,
                                       0x65735543 /* fusectl */};
    for (long magic : kPseudo)
        if (static_cast<long>(sfs.f_type) == magic)
            throw UsageError(option + " " + source + ": is on a kernel pseudo file system (f_type 0x" +
                             [&] { char b[20]; std::snprintf(b, sizeof b, "%lx", magic); return std::string(b); }() +
                             "); use a directory of a real file system");
}

Fd open_workspace(const std::string& option, const std::string& source, const std::vector<std::string>& protected_dirs) {
    Fd dir = open_without_symlinks(AT_FDCWD, source, O_PATH | O_DIRECTORY | O_CLOEXEC, option, source);
    refuse_pseudo_fs(dir.get(), option, source);
    struct stat st {};
    if (fstat(dir.get(), &st) != 0) throw SysError("fstat", source, errno);
    struct stat root {};
    if (stat("/", &root) == 0 && same_inode(st, root))
        throw UsageError(option + " " + source + ": is the host's root directory; use a project directory");
    for (const auto& p : protected_dirs) {
        Fd pfd(open(p.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!pfd.valid()) continue;  // does not exist: nothing to protect
        if (disk_overlap(dir.get(), pfd.get()) != DiskOverlap::none)
            throw UsageError(option + " " + source + ": overlaps " + p +
                             " (corral's records and the host's /proc, /sys and /dev are off limits to the box); use a directory outside it");
    }
    return dir;
}

// A single file (--bind/--ro-bind SRC): its directory opened without
// symlinks, the file in it (not a symlink), a regular file on a real file
// system, not in or below any of `protected_dirs`, and no set-ID or
// file-capability file the agent could rewrite. *dir gets its directory.
Fd open_bind_file(const std::string& option, const std::string& source, const std::vector<std::string>& protected_dirs,
                  Fd* dir, std::string* name) {
    const auto slash = source.rfind('/');
    const std::string parent = slash == 0 ? "/" : source.substr(0, slash);
    *name = source.substr(slash + 1);
    *dir = open_without_symlinks(AT_FDCWD, parent, O_PATH | O_DIRECTORY | O_CLOEXEC, option, source);
    Fd file = open_without_symlinks(dir->get(), *name, O_PATH | O_NOFOLLOW | O_CLOEXEC, option, source);
    struct stat st {};
    if (fstat(file.get(), &st) != 0) throw SysError("fstat", source, errno);
    if (!S_ISREG(st.st_mode))
        throw UsageError(option + " " + source + ": is neither a directory nor a regular file; allowed: one of them");
    refuse_pseudo_fs(file.get(), option, source);
    for (const auto& p : protected_dirs) {
        Fd pfd(open(p.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!pfd.valid()) continue;
        const DiskOverlap o = disk_overlap(dir->get(), pfd.get());
        if (o == DiskOverlap::same || o == DiskOverlap::inside)
            throw UsageError(option + " " + source + ": lies in " + p +
                             " (corral's records and the host's /proc, /sys and /dev are off limits to the box); use a file outside it");
    }
    return file;
}

IdmappedTree refused(IdmapRefusal why, std::string detail, Fd tree) {
    IdmappedTree out;
    out.tree = std::move(tree);
    out.refusal = why;
    out.detail = std::move(detail);
    return out;
}

bool means_unsupported(int err) { return err == EINVAL || err == EOPNOTSUPP || err == ENOSYS || err == EPERM; }

// The copy's propagation, and nothing else: for the trees attached as is.
void make_private(int tree_fd, const std::string& source) {
    mount_attr attr{};
    attr.propagation = MS_PRIVATE;
    if (mount_setattr(tree_fd, "", AT_EMPTY_PATH, &attr, sizeof attr) != 0)
        throw SysError("mount_setattr", source + ", propagation MS_PRIVATE", errno);
}

}  // namespace

namespace {
// Attached as is, the agent writes only what "others" may.
constexpr AgentWrites kOthersOnly{static_cast<uid_t>(-1), static_cast<gid_t>(-1)};
AgentWrites owner_of(const struct stat& st) { return AgentWrites{st.st_uid, st.st_gid}; }
}  // namespace

IdmappedTree idmapped_tree(const std::string& option, const std::string& source, OwnerMapping& mapping,
                           const std::vector<std::string>& protected_dirs) {
    // One open of DIR: the checks, the owner, the copy and the scan all come
    // from this fd, so nothing can be swapped between them. A bind's SRC may
    // be a regular file instead (checked on its own fd and its directory's).
    struct stat given {};
    const bool one_file = option != "--workspace" && stat(source.c_str(), &given) == 0 && !S_ISDIR(given.st_mode);
    Fd file_dir;
    std::string file_name;
    Fd dir = one_file ? open_bind_file(option, source, protected_dirs, &file_dir, &file_name)
                      : open_workspace(option, source, protected_dirs);
    struct stat st {};
    if (fstat(dir.get(), &st) != 0) throw SysError("fstat", source, errno);
    mapping.disk_uid = st.st_uid;
    mapping.disk_gid = st.st_gid;
    // The copy is what the box gets, ID-mapped or not (never a second lookup of the path).
    Fd tree(open_tree(dir.get(), "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
    if (!tree.valid()) throw SysError("open_tree", source + ", OPEN_TREE_CLONE", errno);
    const bool as_is = st.st_uid == 0 || st.st_gid == 0;
    if (one_file) {
        // The file is the whole tree: the agent writes it as its owner, or as "others" when attached as is.
        if (const char* hazard = hazard_of(file_dir.get(), file_name.c_str(), st, as_is ? kOthersOnly : owner_of(st)))
            throw UsageError(option + " " + source + ": " + hazard);
    }
    if (as_is) {
        // Attached as is: the agent is only "others" here.
        if (!one_file) refuse_hazards(tree.get(), kOthersOnly, source, option);
        make_private(tree.get(), source);
        return refused(IdmapRefusal::owned_by_root,
                       "its owner or group is root (" + std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid) +
                           "); mapping root to the agent would make the agent root over everything in it",
                       std::move(tree));
    }
    if (!one_file) refuse_hazards(tree.get(), owner_of(st), source, option);
    Fd userns;
    try {
        userns = user_namespace_mapping(mapping);
    } catch (const SysError& e) {
        // No user namespaces here (user.max_user_namespaces=0, a container's seccomp).
        make_private(tree.get(), source);
        return refused(IdmapRefusal::unsupported, std::string("no user namespace for the mapping: ") + e.what(),
                       std::move(tree));
    }
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_IDMAP;
    attr.userns_fd = static_cast<std::uint64_t>(userns.get());
    // The copy keeps the source's peer group: made private here, or host
    // mounts under DIR would propagate into the box (and the box's out).
    attr.propagation = MS_PRIVATE;
    if (mount_setattr(tree.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
        int err = errno;
        if (!means_unsupported(err)) throw SysError("mount_setattr", source + ", MOUNT_ATTR_IDMAP", err);
        make_private(tree.get(), source);
        // EPERM: the source mount is itself ID-mapped (or its super block
        // belongs to another user namespace); otherwise the file system cannot.
        return refused(IdmapRefusal::unsupported,
                       (err == EPERM ? std::string("its mount cannot be ID-mapped again (already ID-mapped, or owned by "
                                                   "another user namespace): ")
                                     : std::string("its file system cannot be ID-mapped: ")) +
                           "mount_setattr(MOUNT_ATTR_IDMAP): " + errno_text(err),
                       std::move(tree));
    }
    // The mount keeps its own reference to the namespace; ours closes here.
    IdmappedTree out;
    out.tree = std::move(tree);
    return out;
}

PreparedTrees prepare_idmapped_trees(MountPlan& plan) {
    PreparedTrees prepared;
    for (std::size_t i = 0; i < plan.ops.size(); ++i) {
        MountOp& op = plan.ops[i];
        if (op.kind != MountKind::AttachTree) continue;
        if (op.option == "--review") {
            prepared.review_upper = make_capped_tmpfs(std::stoull(op.data));
            op.tree_fd = prepared.review_upper.get();
            continue;
        }
        const std::string what = op.target + " (" + op.source + ")";
        OwnerMapping mapping{.disk_uid = op.disk_uid, .disk_gid = op.disk_gid, .box_uid = op.uid, .box_gid = op.gid};
        IdmappedTree t = idmapped_tree(op.option.empty() ? std::string("--workspace") : op.option, op.source, mapping,
                                       plan.protected_dirs);
        op.disk_uid = mapping.disk_uid;
        op.disk_gid = mapping.disk_gid;
        // The remount after the attach keeps what the source's mount restricts
        // (read-only, noexec), read from the copy itself, not from the path.
        struct statvfs sv {};
        if (fstatvfs(t.tree.get(), &sv) != 0) throw SysError("fstatvfs", op.source, errno);
        const unsigned long keep = ((sv.f_flag & ST_RDONLY) ? MS_RDONLY : 0) | ((sv.f_flag & ST_NOEXEC) ? MS_NOEXEC : 0);
        op.flags |= keep;
        if (i + 1 < plan.ops.size() && plan.ops[i + 1].kind == MountKind::Remount && plan.ops[i + 1].target == op.target)
            plan.ops[i + 1].flags |= keep;
        op.tree_fd = t.tree.get();
        prepared.trees.push_back(std::move(t.tree));
        if (t.refusal == IdmapRefusal::none) {
            prepared.idmapped.push_back(what + ": on-disk " + std::to_string(op.disk_uid) + ":" +
                                        std::to_string(op.disk_gid) + " shown as " + std::to_string(op.uid) + ":" +
                                        std::to_string(op.gid));
            continue;
        }
        // Not a weaker sandbox, only a less useful one: the copy keeps every
        // restriction and the agent writes only where its UID may.
        op.idmapped = false;
        const bool mapped_mount = t.detail.find("cannot be ID-mapped again") != std::string::npos;
        // A root-owned source: the fix is the operator's, one command.
        const std::string fix = t.refusal != IdmapRefusal::owned_by_root ? ""
            : "; to let the agent write it, give it to an unprivileged user: chown -R USER:GROUP " + op.source +
                  " (any owner but root; the box shows that owner as the agent, and what the agent writes stays that "
                  "owner's)";
        prepared.fallbacks.push_back(
            what + ": not ID-mapped: " + t.detail + "; bound as is, so the agent (UID " + std::to_string(op.uid) + ") " +
            (mapped_mount ? std::string("cannot create or change files whose owner the source mount does not map")
                          : "can write only where the directory's permissions allow that UID") + fix);
    }
    return prepared;
}

}  // namespace corral::rootfs
