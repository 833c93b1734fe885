#include "workspace/dir_entries.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/sys_error.hpp"

namespace corral::workspace {

std::vector<std::string> dir_entries(int dir_fd, const std::string& what) {
    std::vector<std::string> names;
    if (dir_fd < 0) return names;
    const int dup_fd = dup(dir_fd);
    if (dup_fd < 0) throw SysError("dup", what, errno);
    DIR* d = fdopendir(dup_fd);
    if (d == nullptr) {
        close(dup_fd);
        throw SysError("fdopendir", what, errno);
    }
    rewinddir(d);  // a duplicate shares the offset of an fd read before
    while (const dirent* e = readdir(d))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
    closedir(d);
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace corral::workspace
