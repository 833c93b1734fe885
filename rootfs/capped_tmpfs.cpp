#include "rootfs/capped_tmpfs.hpp"

#include <sys/mount.h>

#include <cerrno>
#include <string>

#include "base/sys_error.hpp"

namespace corral::rootfs {

Fd make_capped_tmpfs(std::uint64_t size_bytes) {
    Fd fs(fsopen("tmpfs", FSOPEN_CLOEXEC));
    if (!fs.valid()) throw SysError("fsopen", "tmpfs", errno);
    const std::string size = std::to_string(size_bytes);
    check_sys(fsconfig(fs.get(), FSCONFIG_SET_STRING, "source", "corral-review", 0), "fsconfig", "source");
    check_sys(fsconfig(fs.get(), FSCONFIG_SET_STRING, "size", size.c_str(), 0), "fsconfig", "size=" + size);
    check_sys(fsconfig(fs.get(), FSCONFIG_SET_STRING, "mode", "0700", 0), "fsconfig", "mode=0700");
    check_sys(fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0), "fsconfig", "tmpfs create");
    Fd mnt(fsmount(fs.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
    if (!mnt.valid()) throw SysError("fsmount", "tmpfs", errno);
    return mnt;
}

}  // namespace corral::rootfs
