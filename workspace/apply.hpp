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

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "workspace/change.hpp"
#include "workspace/review_record.hpp"

namespace corral::workspace {

struct ApplyOutcome {
    std::vector<std::string> applied;                           // in the order written
    std::vector<std::pair<std::string, std::string>> refused;   // path, why
    std::map<std::string, AppliedStamp> stamps;                 // each written path's ctime after the write
};

// Where the reviewed copies are read from.
enum class ReviewedCopies {
    // RUN_DIR/workspace/upper: the layer copied out at the end, its files
    // DIR's owner's; the child opens each one itself.
    copied_out,
    // The live layer of a session that still runs (`--while-running`): its
    // files are the agent's UID's, which the owner may not read (a 0600
    // file), so root opens each one (below the layer, no link followed)
    // before the child drops to the owner, and hands it the descriptors.
    live,
};

// The changes `only` selects (every one when empty): the paths named and
// everything below them, with the new directories above them that they need.
std::vector<Change> changes_to_apply(const std::vector<Change>& all, const std::vector<std::string>& only);

// Applies `changes` from upper_dir into record.workspace (deletions deepest
// first, then the rest parents first). Throws SysError when the child cannot
// be started or DIR is no longer the directory the run reviewed (its owner changed).
// record.applied_stamps: a host entry whose ctime is its stamp is the
// review's own earlier apply, not a host change.
ApplyOutcome apply_changes(const std::vector<Change>& changes, const std::string& upper_dir,
                           const ReviewRecord& record, ReviewedCopies copies = ReviewedCopies::copied_out);

// Clears host_changed where the host's ctime is the one an earlier apply of
// this review left (record.applied_stamps): after `corral apply
// --while-running`, the host copy of an applied file changed since the
// fence, by the review itself. Any later change of it, by the host or
// another apply, moves its ctime and is a conflict again.
void accept_own_applies(std::vector<Change>& changes, const ReviewRecord& record);

}  // namespace corral::workspace
