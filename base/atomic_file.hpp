// base/atomic_file.hpp — the one way corral replaces a whole file.
//
// A reader (another corral command, a crash-restarted daemon) sees either the
// old file or the new one, never a mix or a truncated one: the content goes to
// a fresh temporary file beside the target, which is renamed over it. How much
// of that survives a power loss is each call site's choice, named at the call.
#pragma once

#include <string>
#include <string_view>
#include <sys/types.h>

namespace corral {

enum class Durability {
    // Atomic rename only: after a crash the file may be the old one or (on
    // some file systems) empty, never truncated. For records rewritten often
    // whose loss costs nothing (run.json without --sync-record).
    visible,
    // The content is fsynced before the rename: after a crash the file is the
    // old one or the whole new one. The rename itself may be lost.
    content_synced,
    // content_synced, and the directory is fsynced after the rename: once the
    // call returns, the new file survives a crash.
    durable,
};

struct AtomicFileWrite {
    std::string dir;           // the directory that holds the file
    std::string name;          // the file's name in dir (no '/')
    mode_t mode = 0600;        // exactly this mode, whatever the umask
    Durability durability;     // no default: every call site says what it needs
};

// Replaces dir/name with `content`. The temporary file is dir/.name.XXXXXX
// (created exclusively, never through a symlink) and is removed on failure.
// Throws SysError naming the failed call and the path.
void write_file_atomically(const AtomicFileWrite& target, std::string_view content);

// The same target split from a path: "a/b/c" -> {dir "a/b", name "c"};
// "c" -> {dir ".", name "c"}.
AtomicFileWrite atomic_target(const std::string& path, mode_t mode, Durability durability);

}  // namespace corral
