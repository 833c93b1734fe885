// workspace/apply.hpp — a reviewed workspace's changes written into DIR.
//
// As DIR's owner, never as root: a child drops to the owner's UID and GID
// (no supplementary groups) before it touches DIR, so the kernel's own
// permission checks hold and everything written is the owner's. Every path
// is resolved below DIR's fd with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
// RESOLVE_NO_XDEV: a symlink (or a mount) on the way refuses that change,
// never follows it out of DIR. Each file is written to a temporary name
// beside it and renamed over the old one, so a reader sees the old file or
// the new one. A change is refused (a conflict) when the host's copy changed
// since the run started (its ctime at or after the fence), appeared or went
// since the diff; the others are still applied, and the outcome names each.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "workspace/change.hpp"
#include "workspace/review_record.hpp"

namespace corral::workspace {

struct ApplyOutcome {
    std::vector<std::string> applied;                           // in the order written
    std::vector<std::pair<std::string, std::string>> refused;   // path, why
};

// The changes `only` selects (every one when empty): the paths named and
// everything below them, with the new directories above them that they need.
std::vector<Change> changes_to_apply(const std::vector<Change>& all, const std::vector<std::string>& only);

// Applies `changes` from upper_dir into record.workspace (deletions deepest
// first, then the rest parents first). Throws SysError when the child cannot
// be started or DIR is no longer the directory the run reviewed (its owner changed).
ApplyOutcome apply_changes(const std::vector<Change>& changes, const std::string& upper_dir,
                           const ReviewRecord& record);

}  // namespace corral::workspace
