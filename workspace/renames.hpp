// workspace/renames.hpp — renames told from a reviewed workspace's changes.
//
// The box's overlay runs without redirect_dir, so a rename reaches the upper
// layer as a deletion (a whiteout) and an addition (a full copy): the layer
// does not say that one became the other. What can be told from the two
// sides is said, and nothing else: a deleted regular file and an added one
// with the same size and SHA-256 (never empty: every empty file is alike),
// one to one, the same base name preferred, then path order; and a deleted
// directory and an added one whose entries all moved between them and which
// hold nothing else. Only the words change (Change::renamed_from/renamed_to):
// the deletion and the addition are still listed, digested and applied.
#pragma once

#include <vector>

#include "workspace/change.hpp"

namespace corral::workspace {

// Marks the renames among `changes` (sorted by path, as collect_changes
// gives them). Pure: unit-tested without root (tests/workspace/test_change.cpp).
void mark_renames(std::vector<Change>& changes);

}  // namespace corral::workspace
