// rootfs/apply_plan.cpp — applying a MountPlan in the sandbox's init, and pivoting into it.
//
// Runs between clone3 and execve: no exceptions, no allocation, no logging.
// Paths in the box are resolved with openat2(RESOLVE_IN_ROOT) relative to the
// new root, and mounts target the resolved object through /proc/self/fd/N, so
// a symlink planted in an image ("/etc -> /host/etc") is followed inside the
// image, never out of it.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "rootfs/mount_plan.hpp"

namespace corral::rootfs {
namespace {

struct Failed {
    int err;
    FailedCall call;
};
using Result = std::optional<Failed>;

Result fail(FailedCall call) { return Failed{errno, call}; }

// A raw fd closed at scope exit (base's Fd is fine here too, but this keeps
// the child path free of anything but syscalls).
struct ScopedFd {
    int fd = -1;
    ScopedFd() = default;
    explicit ScopedFd(int f) : fd(f) {}
    ScopedFd(const ScopedFd&) = delete;
    ScopedFd& operator=(const ScopedFd&) = delete;
    ~ScopedFd() {
        if (fd >= 0) close(fd);
    }
};

int open_in_root(int root_fd, const char* path, int flags, mode_t mode = 0) {
    struct open_how how {};
    how.flags = static_cast<unsigned long long>(flags | O_CLOEXEC);
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    int fd;
    do {
        fd = static_cast<int>(syscall(SYS_openat2, root_fd, path, &how, sizeof how));
    } while (fd < 0 && (errno == EINTR || errno == EAGAIN));
    return fd;
}

// Opens `target` for use as a path: below the root if in_root, else on the host.
int open_target(const MountOp& op, int root_fd, int flags) {
    if (op.in_root) return open_in_root(root_fd, op.target.c_str(), flags);
    return open(op.target.c_str(), flags | O_CLOEXEC);
}

struct FdPath {
    char text[40];
    explicit FdPath(int fd) { std::snprintf(text, sizeof text, "/proc/self/fd/%d", fd); }
};

// Splits "/a/b/c" into a parent fd (resolved in the root) and the last name.
struct ParentAndName {
    ScopedFd parent;
    const char* name = nullptr;
    char buf[PATH_MAX];
};

bool open_parent(const MountOp& op, int root_fd, ParentAndName& out) {
    const char* target = op.target.c_str();
    const char* slash = std::strrchr(target, '/');
    if (!slash || slash[1] == '\0' || op.target.size() >= sizeof out.buf) {
        errno = EINVAL;
        return false;
    }
    out.name = slash + 1;
    const std::size_t parent_len = slash == target ? 1 : static_cast<std::size_t>(slash - target);
    std::memcpy(out.buf, target, parent_len);
    out.buf[parent_len] = '\0';
    int fd = op.in_root ? open_in_root(root_fd, out.buf, O_PATH | O_DIRECTORY)
                        : open(out.buf, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return false;
    out.parent.fd = fd;
    return true;
}

bool write_all(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        ssize_t n = write(fd, data, size);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

Result set_owner_and_mode(int fd, const MountOp& op) {
    if (fchown(fd, op.uid, op.gid) != 0) return fail(FailedCall::chown);
    if (fchmod(fd, op.mode) != 0) return fail(FailedCall::chmod);
    return std::nullopt;
}

Result make_dir(const MountOp& op, int root_fd) {
    ParentAndName pn;
    if (!open_parent(op, root_fd, pn)) return fail(FailedCall::open);
    if (mkdirat(pn.parent.fd, pn.name, op.mode) != 0 && errno != EEXIST) return fail(FailedCall::mkdir);
    if (!op.set_owner) return std::nullopt;
    ScopedFd dir(op.in_root ? open_in_root(root_fd, op.target.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
                            : openat(pn.parent.fd, pn.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (dir.fd < 0) return fail(FailedCall::open);
    return set_owner_and_mode(dir.fd, op);
}

Result make_file(const MountOp& op, int root_fd) {
    ScopedFd existing(open_target(op, root_fd, O_PATH));
    if (existing.fd >= 0) return std::nullopt;
    if (errno != ENOENT) return fail(FailedCall::open);
    ScopedFd created(op.in_root ? open_in_root(root_fd, op.target.c_str(), O_WRONLY | O_CREAT | O_EXCL, op.mode)
                                : open(op.target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, op.mode));
    if (created.fd < 0) return fail(FailedCall::open);
    return std::nullopt;
}

Result make_node(const MountOp& op, int root_fd) {
    ParentAndName pn;
    if (!open_parent(op, root_fd, pn)) return fail(FailedCall::open);
    if (mknodat(pn.parent.fd, pn.name, S_IFCHR | op.mode, op.rdev) != 0) return fail(FailedCall::mknod);
    return std::nullopt;
}

Result make_symlink(const MountOp& op, int root_fd) {
    ParentAndName pn;
    if (!open_parent(op, root_fd, pn)) return fail(FailedCall::open);
    if (symlinkat(op.source.c_str(), pn.parent.fd, pn.name) != 0) return fail(FailedCall::symlink);
    return std::nullopt;
}

Result write_file(const MountOp& op, int root_fd) {
    if (op.replace) {
        // The image's file may be a link (Ubuntu's resolv.conf into /run):
        // removed in the overlay, never followed.
        ParentAndName pn;
        if (!open_parent(op, root_fd, pn)) {
            // The image's /etc is a link to nowhere in the image: nothing to replace.
            if ((errno == ENOENT || errno == ENOTDIR) && op.optional) return std::nullopt;
            return fail(FailedCall::open);
        }
        if (unlinkat(pn.parent.fd, pn.name, 0) != 0 && errno != ENOENT) return fail(FailedCall::unlink);
        ScopedFd fd(openat(pn.parent.fd, pn.name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, op.mode));
        if (fd.fd < 0) return fail(FailedCall::open);
        if (!write_all(fd.fd, op.data.data(), op.data.size())) return fail(FailedCall::write);
        return std::nullopt;
    }
    const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW;
    ScopedFd fd(op.in_root ? open_in_root(root_fd, op.target.c_str(), flags, op.mode)
                           : open(op.target.c_str(), flags | O_CLOEXEC, op.mode));
    if (fd.fd < 0) return fail(FailedCall::open);
    if (!write_all(fd.fd, op.data.data(), op.data.size())) return fail(FailedCall::write);
    if (op.set_owner) return set_owner_and_mode(fd.fd, op);
    return std::nullopt;
}

Result append_file(const MountOp& op, int root_fd) {
    // An image may link /etc/passwd elsewhere in itself: followed, but only inside the root.
    ScopedFd fd(open_target(op, root_fd, O_RDWR | O_APPEND));
    if (fd.fd < 0) {
        if (errno == ENOENT && op.optional) return std::nullopt;
        return fail(FailedCall::open);
    }
    struct stat st {};
    if (fstat(fd.fd, &st) != 0) return fail(FailedCall::stat);
    if (!S_ISREG(st.st_mode)) {
        errno = EINVAL;
        return fail(FailedCall::open);
    }
    if (st.st_size > 0) {
        char last = '\n';
        if (pread(fd.fd, &last, 1, st.st_size - 1) != 1) return fail(FailedCall::write);
        if (last != '\n' && !write_all(fd.fd, "\n", 1)) return fail(FailedCall::write);
    }
    if (!write_all(fd.fd, op.data.data(), op.data.size())) return fail(FailedCall::write);
    return std::nullopt;
}

Result do_mount(const MountOp& op, int root_fd) {
    if (!op.in_root) {
        const char* source = op.source.empty() ? nullptr : op.source.c_str();
        const char* fstype = op.fstype.empty() ? nullptr : op.fstype.c_str();
        const char* data = op.data.empty() ? nullptr : op.data.c_str();
        if (mount(source, op.target.c_str(), fstype, op.flags, data) != 0) return fail(FailedCall::mount);
        return std::nullopt;
    }
    ScopedFd target(open_in_root(root_fd, op.target.c_str(), O_PATH));
    if (target.fd < 0) {
        if (errno == ENOENT && op.optional) return std::nullopt;
        return fail(FailedCall::open);
    }
    // A new file system always goes on a directory: mount on "." after
    // fchdir to it, not on /proc/self/fd/N, because the box's /proc is itself
    // mounted this way (by the invocation, when no /proc exists yet).
    // apply_mount_plan moves the cwd back to the root afterwards.
    if (fchdir(target.fd) != 0) return fail(FailedCall::chdir);
    if (mount(op.source.c_str(), ".", op.fstype.c_str(), op.flags, op.data.empty() ? nullptr : op.data.c_str()) != 0)
        return fail(FailedCall::mount);
    return std::nullopt;
}

Result bind(const MountOp& op, int root_fd) {
    ScopedFd target(open_target(op, root_fd, O_PATH));
    if (target.fd < 0) {
        if (errno == ENOENT && op.optional) return std::nullopt;
        return fail(FailedCall::open);
    }
    FdPath at(target.fd);
    // An empty source binds the target onto itself (to give it its own flags).
    const char* source = op.source.empty() ? at.text : op.source.c_str();
    if (mount(source, at.text, nullptr, MS_BIND, nullptr) != 0) {
        if (errno == ENOENT && op.optional) return std::nullopt;
        return fail(FailedCall::mount);
    }
    return std::nullopt;
}

Result remount(const MountOp& op, int root_fd) {
    // Opened after the bind, so the fd names the new mount, not what it covers.
    ScopedFd target(open_target(op, root_fd, O_PATH));
    if (target.fd < 0) {
        if (errno == ENOENT && op.optional) return std::nullopt;
        return fail(FailedCall::open);
    }
    FdPath at(target.fd);
    if (mount(nullptr, at.text, nullptr, MS_BIND | MS_REMOUNT | op.flags, nullptr) != 0) return fail(FailedCall::mount);
    return std::nullopt;
}

Result attach_tree(const MountOp& op, int root_fd) {
    ScopedFd target(open_target(op, root_fd, O_PATH));
    if (target.fd < 0) return fail(FailedCall::open);
    if (op.tree_fd < 0) {
        errno = EBADF;  // prepare_idmapped_trees() was not called
        return fail(FailedCall::move_mount);
    }
    if (move_mount(op.tree_fd, "", target.fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
        return fail(FailedCall::move_mount);
    return std::nullopt;
}

// One "lowerdir+" per layer, with the new mount API: no length limit
// (Linux 6.8+). `lacks_append` says the kernel has no "lowerdir+": 6.5-6.7
// refuse the key at its fsconfig; before 6.5 overlayfs takes its options as
// one page of text, so the key is accepted (until the page is full: EINVAL
// at a later layer) and the create fails with EINVAL.
// The reviewed workspace's overlay: no feature that would let the upper
// layer be anything but the changes themselves (docs/workspace.md).
constexpr const char* kReviewOptions[][2] = {{"redirect_dir", "off"}, {"metacopy", "off"}, {"index", "off"}};

Result mount_overlay_appending(const MountOp& op, int target_fd, bool& lacks_append) {
    lacks_append = false;
    ScopedFd fs(fsopen("overlay", FSOPEN_CLOEXEC));
    if (fs.fd < 0) return fail(FailedCall::fsopen);
    if (fsconfig(fs.fd, FSCONFIG_SET_STRING, "source", op.review ? "corral-workspace" : "corral-image", 0) != 0)
        return fail(FailedCall::fsconfig);
    for (const auto& kv : kReviewOptions)
        if (op.review && fsconfig(fs.fd, FSCONFIG_SET_STRING, kv[0], kv[1], 0) != 0) return fail(FailedCall::fsconfig);
    for (const auto& lower : op.lowers) {
        if (fsconfig(fs.fd, FSCONFIG_SET_STRING, "lowerdir+", lower.c_str(), 0) == 0) continue;
        lacks_append = errno == EINVAL;
        return fail(FailedCall::fsconfig);
    }
    if (fsconfig(fs.fd, FSCONFIG_SET_STRING, "upperdir", op.source.c_str(), 0) != 0) return fail(FailedCall::fsconfig);
    if (fsconfig(fs.fd, FSCONFIG_SET_STRING, "workdir", op.data.c_str(), 0) != 0) return fail(FailedCall::fsconfig);
    if (fsconfig(fs.fd, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
        lacks_append = errno == EINVAL;
        return fail(FailedCall::fsconfig);
    }
    unsigned attrs = 0;
    if (op.flags & MS_NOSUID) attrs |= MOUNT_ATTR_NOSUID;
    if (op.flags & MS_NODEV) attrs |= MOUNT_ATTR_NODEV;
    ScopedFd mnt(fsmount(fs.fd, FSMOUNT_CLOEXEC, attrs));
    if (mnt.fd < 0) return fail(FailedCall::fsmount);
    if (move_mount(mnt.fd, "", target_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
        return fail(FailedCall::move_mount);
    return std::nullopt;
}

// For kernels without "lowerdir+": mount(2) with one "lowerdir=" option,
// which must fit in a page (fsconfig's strings stop at 256 bytes: two
// layers). Each layer is named by an fd opened on it, /proc/self/fd/N
// (~17 bytes instead of its ~100-byte path), so kMaxImageLayers fit; the
// overlay resolves the names at the mount, and the fds are closed after it.
Result mount_overlay_by_option(const MountOp& op, int target_fd) {
    struct Fds {
        int fd[kMaxImageLayers];
        std::size_t n = 0;
        ~Fds() {
            while (n) close(fd[--n]);
        }
    } fds;
    if (op.lowers.size() > kMaxImageLayers) {
        errno = E2BIG;
        return fail(FailedCall::mount);
    }
    char option[kMaxLowerdirOption + 1];
    std::size_t used = 0;
    auto put = [&](const char* text, std::size_t len) {
        if (used + len > kMaxLowerdirOption) return false;
        std::memcpy(option + used, text, len);
        used += len;
        return true;
    };
    bool fits = put("lowerdir=", 9);
    for (const auto& lower : op.lowers) {
        const int fd = open(lower.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) return fail(FailedCall::open);
        fds.fd[fds.n++] = fd;
        char name[32];
        const int len = std::snprintf(name, sizeof name, "%s/proc/self/fd/%d", fds.n > 1 ? ":" : "", fd);
        fits = fits && put(name, static_cast<std::size_t>(len));
    }
    fits = fits && put(",upperdir=", 10) && put(op.source.data(), op.source.size()) && put(",workdir=", 9) &&
           put(op.data.data(), op.data.size());
    for (const auto& kv : kReviewOptions)
        fits = fits && (!op.review || (put(",", 1) && put(kv[0], std::strlen(kv[0])) && put("=", 1) &&
                                       put(kv[1], std::strlen(kv[1]))));
    if (!fits) {
        errno = E2BIG;
        return fail(FailedCall::mount);
    }
    option[used] = '\0';
    FdPath at(target_fd);
    if (mount(op.review ? "corral-workspace" : "corral-image", at.text, "overlay", op.flags, option) != 0)
        return fail(FailedCall::mount);
    return std::nullopt;
}

// The overlay of an image's layers (or of the reviewed workspace): appended
// one by one where the kernel can, else in one option (both give the same mount).
Result mount_overlay(const MountOp& op, int root_fd) {
    ScopedFd target(open_target(op, root_fd, O_PATH | O_DIRECTORY));
    if (target.fd < 0) return fail(FailedCall::open);
    bool lacks_append = false;
    Result r = mount_overlay_appending(op, target.fd, lacks_append);
    if (!r || !lacks_append) return r;
    return mount_overlay_by_option(op, target.fd);
}

Result apply_op(const MountOp& op, int root_fd) {
    switch (op.kind) {
        case MountKind::MakeDir: return make_dir(op, root_fd);
        case MountKind::MakeFile: return make_file(op, root_fd);
        case MountKind::MakeNode: return make_node(op, root_fd);
        case MountKind::Symlink: return make_symlink(op, root_fd);
        case MountKind::WriteFile: return write_file(op, root_fd);
        case MountKind::AppendFile: return append_file(op, root_fd);
        case MountKind::Mount: return do_mount(op, root_fd);
        case MountKind::Bind: return bind(op, root_fd);
        case MountKind::Remount: return remount(op, root_fd);
        case MountKind::AttachTree: return attach_tree(op, root_fd);
        case MountKind::Overlay: return mount_overlay(op, root_fd);
    }
    errno = EINVAL;
    return fail(FailedCall::mount);
}

}  // namespace

std::optional<MountFailure> apply_mount_plan(const MountPlan& plan) noexcept {
    // Modes in the plan are exact; the caller's umask must not narrow them.
    const mode_t old_umask = umask(0);
    int root_fd = -1;
    std::optional<MountFailure> failure;
    for (std::size_t i = 0; i < plan.ops.size() && !failure; ++i) {
        const MountOp& op = plan.ops[i];
        if (op.in_root && root_fd < 0) {
            // The first op inside the box runs after the root mount exists.
            root_fd = open(plan.new_root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
            if (root_fd < 0) {
                failure = MountFailure{i, errno, FailedCall::open};
                break;
            }
        }
        if (auto r = apply_op(op, root_fd)) failure = MountFailure{i, r->err, r->call};
    }
    // do_mount changed the cwd into a directory that is now covered by a mount.
    if (root_fd >= 0 && fchdir(root_fd) != 0 && !failure)
        failure = MountFailure{plan.ops.size(), errno, FailedCall::chdir};
    if (root_fd >= 0) close(root_fd);
    umask(old_umask);
    return failure;
}

std::optional<MountFailure> enter_rootfs(const MountPlan& plan) noexcept {
    const std::size_t step = plan.ops.size();
    ScopedFd old_root(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (old_root.fd < 0) return MountFailure{step, errno, FailedCall::open};
    ScopedFd new_root(open(plan.new_root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (new_root.fd < 0) return MountFailure{step, errno, FailedCall::open};
    if (fchdir(new_root.fd) != 0) return MountFailure{step, errno, FailedCall::chdir};
    // pivot_root(".", ".") stacks the old root on top of the new one, so no
    // put_old directory is needed (the new root may be read-only).
    if (syscall(SYS_pivot_root, ".", ".") != 0) return MountFailure{step, errno, FailedCall::pivot_root};
    // The kernel does not promise what "." is after pivot_root: go to the old root explicitly.
    if (fchdir(old_root.fd) != 0) return MountFailure{step, errno, FailedCall::chdir};
    if (umount2(".", MNT_DETACH) != 0) return MountFailure{step, errno, FailedCall::umount};
    if (chdir("/") != 0) return MountFailure{step, errno, FailedCall::chdir};
    return std::nullopt;
}

}  // namespace corral::rootfs
