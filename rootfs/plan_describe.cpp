// rootfs/plan_describe.cpp — a mount plan's ops and failures in words (mount_plan.hpp).
#include "rootfs/mount_plan.hpp"

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <string>

#include "base/sys_error.hpp"

namespace corral::rootfs {

namespace {

std::string flag_names(unsigned long flags) {
    static constexpr std::pair<unsigned long, const char*> names[] = {
        {MS_RDONLY, "MS_RDONLY"}, {MS_NOSUID, "MS_NOSUID"}, {MS_NODEV, "MS_NODEV"}, {MS_NOEXEC, "MS_NOEXEC"},
        {MS_REMOUNT, "MS_REMOUNT"}, {MS_BIND, "MS_BIND"}, {MS_REC, "MS_REC"}, {MS_PRIVATE, "MS_PRIVATE"},
    };
    std::string out;
    for (auto [bit, name] : names) {
        if (flags & bit) {
            if (!out.empty()) out += "|";
            out += name;
            flags &= ~bit;
        }
    }
    if (flags) {
        if (!out.empty()) out += "|";
        char buf[32];
        std::snprintf(buf, sizeof buf, "0x%lx", flags);
        out += buf;
    }
    return out.empty() ? "0" : out;
}

std::string octal(mode_t mode) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0%o", static_cast<unsigned>(mode));
    return buf;
}

}  // namespace

std::string describe(const MountOp& op) {
    const std::string where = op.in_root ? "box:" + op.target : op.target;
    switch (op.kind) {
        case MountKind::MakeDir:
            return "mkdir(" + where + ", " + octal(op.mode) +
                   (op.set_owner ? ", owner " + std::to_string(op.uid) + ":" + std::to_string(op.gid) : std::string()) + ")";
        case MountKind::MakeFile: return "create mount point file(" + where + ", " + octal(op.mode) + ")";
        case MountKind::MakeNode:
            return "mknod(" + where + ", char " + std::to_string(major(op.rdev)) + ":" + std::to_string(minor(op.rdev)) +
                   ", " + octal(op.mode) + ")";
        case MountKind::Symlink: return "symlink(" + where + " -> " + op.source + ")";
        case MountKind::WriteFile:
            return std::string(op.replace ? "replace file(" : "write file(") + where + ", " + octal(op.mode) + ")";
        case MountKind::Overlay:
            return "overlay(" + std::to_string(op.lowers.size()) + " lower layers" +
                   (op.lowers.empty() ? std::string() : ", top " + op.lowers.front()) + ", upper " + op.source +
                   " -> " + where +
                   (op.review ? ", redirect_dir=off, metacopy=off, index=off: the reviewed workspace's overlay; "
                                "--review needs a DIR overlayfs takes as a lower layer)"
                              : std::string(")"));
        case MountKind::AppendFile: return "append to file(" + where + ")";
        case MountKind::Mount:
            if (op.flags & MS_PRIVATE) return "mount(" + where + ", " + flag_names(op.flags) + ")";
            return "mount(" + op.source + " -> " + where + ", " + op.fstype + ", " + flag_names(op.flags) +
                   (op.data.empty() ? std::string() : ", \"" + op.data + "\"") + ")";
        case MountKind::Bind:
            return "mount(" + (op.source.empty() ? where : op.source) + " -> " + where + ", MS_BIND)";
        case MountKind::Remount: return "mount(" + where + ", " + flag_names(MS_BIND | MS_REMOUNT | op.flags) + ")";
        case MountKind::AttachTree:
            if (!op.idmapped) return "move_mount(" + op.source + " -> " + where + ", a copy of its mount, not ID-mapped)";
            return "move_mount(" + op.source + " -> " + where + ", ID-mapped: on-disk " + std::to_string(op.disk_uid) +
                   ":" + std::to_string(op.disk_gid) + " as " + std::to_string(op.uid) + ":" + std::to_string(op.gid) + ")";
    }
    return "unknown rootfs step";
}

const char* call_name(FailedCall call) noexcept {
    switch (call) {
        case FailedCall::open: return "open";
        case FailedCall::mkdir: return "mkdir";
        case FailedCall::mknod: return "mknod";
        case FailedCall::symlink: return "symlink";
        case FailedCall::write: return "write";
        case FailedCall::chown: return "chown";
        case FailedCall::chmod: return "chmod";
        case FailedCall::stat: return "stat";
        case FailedCall::mount: return "mount";
        case FailedCall::pivot_root: return "pivot_root";
        case FailedCall::umount: return "umount2";
        case FailedCall::chdir: return "chdir";
        case FailedCall::move_mount: return "move_mount";
        case FailedCall::fsopen: return "fsopen";
        case FailedCall::fsconfig: return "fsconfig";
        case FailedCall::fsmount: return "fsmount";
        case FailedCall::unlink: return "unlinkat";
    }
    return "?";
}

std::string describe_failure(const MountPlan& plan, const MountFailure& failure) {
    std::string step = failure.op_index < plan.ops.size() ? describe(plan.ops[failure.op_index])
                                                          : "pivot_root into " + plan.new_root;
    return "rootfs setup: " + step + " failed in " + call_name(failure.call) + ": " + errno_text(failure.err);
}

}  // namespace corral::rootfs
