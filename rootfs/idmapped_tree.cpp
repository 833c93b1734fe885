#include "rootfs/idmapped_tree.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "base/sys_error.hpp"
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
    int pidfd = -1;
    clone_args args{};
    args.flags = CLONE_NEWUSER | CLONE_PIDFD;
    args.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
    args.exit_signal = SIGCHLD;
    long pid = syscall(SYS_clone3, &args, sizeof args);
    if (pid < 0) throw SysError("clone3", "CLONE_NEWUSER|CLONE_PIDFD (the workspace's ID mapping)", errno);
    if (pid == 0) {
        // Raw child of a possibly multi-threaded parent: only system calls.
        for (;;) syscall(SYS_pause);
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

IdmappedTree idmapped_tree(const std::string& source, const OwnerMapping& mapping) {
    IdmappedTree out;
    Fd tree(open_tree(AT_FDCWD, source.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
    if (!tree.valid()) {
        int err = errno;
        if (err == ENOSYS) {
            out.refusal = IdmapRefusal::unsupported;
            out.detail = "open_tree(" + source + ", OPEN_TREE_CLONE): " + errno_text(err);
            return out;
        }
        throw SysError("open_tree", source + ", OPEN_TREE_CLONE", err);
    }
    Fd userns = user_namespace_mapping(mapping);
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_IDMAP;
    attr.userns_fd = static_cast<std::uint64_t>(userns.get());
    if (mount_setattr(tree.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
        int err = errno;
        if (err == EINVAL || err == EOPNOTSUPP || err == ENOSYS) {
            out.refusal = IdmapRefusal::unsupported;
            out.detail = "mount_setattr(" + source + ", MOUNT_ATTR_IDMAP): " + errno_text(err);
            return out;
        }
        throw SysError("mount_setattr", source + ", MOUNT_ATTR_IDMAP", err);
    }
    // The mount keeps its own reference to the namespace; ours closes here.
    out.tree = std::move(tree);
    return out;
}

PreparedTrees prepare_idmapped_trees(MountPlan& plan) {
    PreparedTrees prepared;
    for (MountOp& op : plan.ops) {
        if (op.kind != MountKind::AttachTree) continue;
        const std::string what = op.target + " (" + op.source + ")";
        IdmappedTree t = idmapped_tree(op.source, {.disk_uid = op.disk_uid, .disk_gid = op.disk_gid,
                                                   .box_uid = op.uid, .box_gid = op.gid});
        if (t.refusal == IdmapRefusal::none) {
            op.tree_fd = t.tree.get();
            prepared.trees.push_back(std::move(t.tree));
            prepared.idmapped.push_back(what + ": on-disk " + std::to_string(op.disk_uid) + ":" +
                                        std::to_string(op.disk_gid) + " shown as " + std::to_string(op.uid) + ":" +
                                        std::to_string(op.gid));
            continue;
        }
        // Not a weaker sandbox, only a less useful one: the plain bind keeps
        // every restriction and the agent writes only where its UID may.
        op.kind = MountKind::Bind;
        prepared.fallbacks.push_back(what + ": its file system cannot be ID-mapped (" + t.detail +
                                     "); bound as is, so the agent (UID " + std::to_string(op.uid) +
                                     ") can write only where the directory's permissions allow that UID");
    }
    return prepared;
}

}  // namespace corral::rootfs
