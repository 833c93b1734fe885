// workspace/git_ignored.hpp — which changed paths the host repository's
// ignore rules hide (an ignored file escapes `git status` and `git diff`:
// a review must name it).
#pragma once

#include <vector>

#include "workspace/change.hpp"
#include "workspace/review_record.hpp"

namespace corral::workspace {

// Sets Change::ignored for each path `git check-ignore` names, asked in DIR
// as DIR's owner (the host's rules, not the ones the box may have written).
// Returns why nothing was asked ("" when it was): no git, or DIR is no repository.
std::string mark_ignored(std::vector<Change>& changes, const ReviewRecord& record);

}  // namespace corral::workspace
