// workspace/dir_entries.hpp — the names in a directory held by fd, the one
// listing the layer's copy-out and the diff's walk share.
#pragma once

#include <string>
#include <vector>

namespace corral::workspace {

// Every name in dir_fd but "." and "..", sorted; none for dir_fd -1. Reads
// through a duplicate of the fd from its start, so the caller's fd is left
// for openat. Throws SysError naming the call and `what`.
std::vector<std::string> dir_entries(int dir_fd, const std::string& what);

}  // namespace corral::workspace
