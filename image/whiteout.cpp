#include "image/whiteout.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>

#include "base/sys_error.hpp"
#include "image/manifest.hpp"

namespace corral::image {

Whiteout classify_whiteout(std::string_view name) {
    if (name == kOpaqueMarker) return {WhiteoutKind::opaque, {}};
    if (name.substr(0, kWhiteoutPrefix.size()) != kWhiteoutPrefix) return {};
    std::string_view target = name.substr(kWhiteoutPrefix.size());
    if (target.substr(0, kWhiteoutPrefix.size()) == kWhiteoutPrefix)
        throw ImageError("whiteout \"" + std::string(name) +
                         "\": names starting with .wh..wh. are reserved (only .wh..wh..opq is defined)");
    if (target.empty() || target == "." || target == "..")
        throw ImageError("whiteout \"" + std::string(name) + "\": deletes no name");
    return {WhiteoutKind::deletion, std::string(target)};
}

void make_deletion(int dir_fd, const std::string& name, const std::string& where) {
    if (mknodat(dir_fd, name.c_str(), S_IFCHR | 0000, makedev(0, 0)) != 0) throw SysError("mknodat(0:0)", where, errno);
}

void make_opaque(int dir_fd, const std::string& where) {
    if (fsetxattr(dir_fd, kOpaqueXattr, "y", 1, 0) != 0) throw SysError(std::string("fsetxattr(") + kOpaqueXattr + ")", where, errno);
}

}  // namespace corral::image
