// rootfs/disk_overlap.hpp — whether two host directories overlap, judged on
// disk, not by the text of their paths.
//
// Paths compared as text miss every alias: a symlink, a ".." after one, the
// same tree mounted somewhere else (a bind mount of it, of an ancestor or of
// a subdirectory). What a box may see or write is decided on the directories
// themselves, open on fds: by device and inode, walking ".." from each one
// (across mount points, as the kernel resolves ".."), and by where each lies
// in its file system (its mount's root in /proc/self/mountinfo plus its path
// in the mount), which finds a bind mount of a subdirectory that the walk up
// from the mount cannot.
#pragma once

#include <sys/stat.h>

namespace corral::rootfs {

// Same device and inode.
bool same_inode(const struct stat& a, const struct stat& b);

// Whether the directory open at `fd` is `dir` or lies below it: `dir` (by
// device and inode) is fd's directory or one of its ancestors, walking ".."
// from fd. Throws SysError.
bool is_at_or_below_on_disk(int fd, const struct stat& dir);

enum class DiskOverlap {
    none,
    same,      // one directory
    inside,    // the first lies below the second
    contains,  // the second lies below the first
};

// How the directories open at `a` and `b` relate on disk: either walk, or
// their places in one file system. Throws SysError when a directory's place
// cannot be read (fail closed: "cannot tell" is never "apart").
DiskOverlap disk_overlap(int a, int b);

// "is", "lies inside", "contains", "" for none: the relation in a sentence.
const char* disk_overlap_words(DiskOverlap o);

}  // namespace corral::rootfs
