// base/regular_file.hpp — reading a small file that someone other than root
// may have put in place, as root, without being led elsewhere.
//
// Root reading a path a user or a box could have prepared (a prompt file in a
// workspace, a CA bundle inside an image) must not follow a planted symlink to
// a root-only file, block forever on a FIFO, or read /dev/zero without end.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace corral {

enum class PathWalk {
    no_symlinks,   // no symlink anywhere on the path (openat2 RESOLVE_NO_SYMLINKS)
    in_root,       // path resolved with `root` as "/" (RESOLVE_IN_ROOT): an image's own view
};

struct RegularFileRead {
    std::string what;                  // for messages, e.g. "--prompt-file"
    std::string path;                  // absolute, or relative to the cwd (no_symlinks) / to root (in_root)
    PathWalk walk = PathWalk::no_symlinks;
    std::string root;                  // in_root only: the directory that is "/"
    std::size_t max_bytes = 4u << 20;
};

// The whole file, or nullopt if it does not exist. Opened non-blocking, never
// through a symlink outside the chosen walk, never as a magic link; throws
// UsageError naming `what` and the path when it is a symlink (no_symlinks), not
// a regular file, or larger than max_bytes; SysError for other failures.
std::optional<std::string> read_regular_file(const RegularFileRead& request);

struct ResolvedRegularFile {
    std::string text;
    std::string path;   // where the file really is, every link resolved: relative to `root` (as "/") for
                        // in_root, else absolute
};

// read_regular_file, and also where the file really is: for a file named
// through links (an image's /etc/ssl/cert.pem -> certs/ca-certificates.crt)
// the caller learns which file to replace.
std::optional<ResolvedRegularFile> read_regular_file_resolved(const RegularFileRead& request);

// Whether the path names a regular file, walked the same way, without reading
// it (an executable of hundreds of MiB); max_bytes is not applied.
bool is_regular_file_at(const RegularFileRead& request);

}  // namespace corral
