// base/remove_tree.hpp — removing a directory tree that someone else built.
//
// A tree written by a box (its scratch) or unpacked from a hostile archive
// can be as deep as its author liked: 25 000 nested directories are a few
// hundred KiB of tar. A recursive removal holds an fd (and a stack frame) per
// level and runs out of both; a path-based one hits PATH_MAX. This removal
// walks down and back up holding one directory fd at a time, with one
// (name, device, inode) per level in memory, and checks on every step up that
// ".." is the directory it came from.
#pragma once

#include <string>

namespace corral {

// Removes `name` in `dir_fd` (AT_FDCWD: a path) and, if it is a directory,
// everything below it, never following a symlink. A missing name is fine.
// Throws SysError naming the call and the entry that failed.
void remove_tree_at(int dir_fd, const std::string& name);

}  // namespace corral
