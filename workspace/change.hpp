// workspace/change.hpp — one change of a reviewed workspace, and the pure
// rule that tells what differs (unit-tested without root:
// tests/workspace/test_change.cpp).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace corral::workspace {

enum class NodeType { regular, directory, symlink, fifo, socket, char_device, block_device };

// A file as one side has it: the host's DIR now ("before"), or the reviewed
// result ("after": the upper layer's entry, or the host's where the upper has none).
struct Node {
    NodeType type = NodeType::regular;
    mode_t mode = 0;              // permission bits (07777)
    uid_t uid = 0;
    gid_t gid = 0;
    std::uint64_t size = 0;
    std::string sha256;           // regular files: the content's digest (64 hex)
    std::string target;           // symlinks: the link text
    dev_t rdev = 0;               // devices
    std::map<std::string, std::string> xattrs;  // user.* only: the ones an unprivileged writer can set
    std::uint64_t nlink = 1;
    std::int64_t ctime_sec = 0;   // the host side's: compared with the fence
    std::int64_t ctime_nsec = 0;
};

enum class ChangeKind { added, modified, deleted, type_changed };

struct Change {
    std::string path;             // relative to DIR, '/'-separated, never "" or with ".."
    ChangeKind kind = ChangeKind::modified;
    std::optional<Node> before;   // nullopt: not on the host
    std::optional<Node> after;    // nullopt: deleted
    bool content = false;         // a regular file's bytes differ
    bool mode = false;
    bool owner = false;
    bool target = false;          // a symlink's text
    bool xattrs = false;
    bool exec_bit = false;        // an executable bit set or cleared (or a new executable)
    bool git_internal = false;    // under .git/ (hooks, config: code that runs outside any diff's view)
    bool ignored = false;         // a path the host repository's ignore rules hide
    bool special = false;         // a FIFO, socket or device: listed, never applied
    bool hard_link = false;       // the box made several links to it: applied as separate files
    bool host_changed = false;    // the host's copy changed since the run started: apply refuses it
    // A rename as far as it can be told (mark_renames): this deleted path's
    // content now lives at renamed_to, or this added path's came from
    // renamed_from. Words only: the change is still a deletion and an
    // addition, applied and digested as such.
    std::string renamed_from;
    std::string renamed_to;
};

const char* to_string(NodeType type);
const char* to_string(ChangeKind kind);

// Whether a host file whose ctime is ctime_sec.ctime_nsec may have changed
// since the fence (ns since the epoch). Conservative both ways a file
// system's timestamps can be coarse: a ctime of whole seconds (nsec 0: a
// second-granular file system) counts from the fence's own second on; a
// finer one from kFenceMarginNs before the fence (granularities up to it).
// A change just before the start may be called one; one after it never missed
// (unless the clock is stepped back).
inline constexpr std::int64_t kFenceMarginNs = 20'000'000;
bool changed_since(std::int64_t ctime_sec, std::int64_t ctime_nsec, std::int64_t fence_ns);

// What differs between the host's `before` and the reviewed `after` (either
// may be missing: added, deleted); nullopt when nothing a review shows does
// (times alone, or a file the box opened for writing and left as it was).
// host_changed: changed_since(before's ctime, fence_ns).
std::optional<Change> classify(const std::string& path, const std::optional<Node>& before,
                               const std::optional<Node>& after, std::int64_t fence_ns);

// Whether a path is inside a .git directory (or is one).
bool is_git_internal(const std::string& path);

// A canonical one-line description of one side ("-" for none), the unit the
// diff's digest is made of: type, mode, owner, size and digest, link text,
// device number, xattrs.
std::string node_signature(const std::optional<Node>& node);

}  // namespace corral::workspace
