// run/workspace_review.hpp — a run's reviewed workspace (--review,
// docs/workspace.md) around the box: its upper layer made and the start
// fence taken before the plan is final; the layer copied into the run dir
// once the box is torn down.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/fd.hpp"
#include "workspace/review_record.hpp"

namespace corral::run {

struct WorkspaceReview {
    Fd upper;                        // the detached tmpfs the box's overlay writes into, once the box exists
    workspace::ReviewRecord record;  // RUN_DIR/workspace/review.json
    std::string run_dir;
};

// Refuses a workspace that cannot be reviewed (UsageError), records DIR's
// owner, the fence and the layer's cap (the launch makes the layer, one per
// attempt, and hands it back: BoxFacts::review_upper), and writes
// review.json ("running"). Throws SysError naming the call.
WorkspaceReview begin_review(const std::string& workspace_dir, std::uint64_t size_bytes, const std::string& run_dir);

// After the teardown: the layer copied to RUN_DIR/workspace/upper with the
// agent's IDs as the owner's, review.json "ready" (or "failed", with why).
// Returns the lines to tell the operator.
std::vector<std::string> finish_review(WorkspaceReview& review, uid_t agent_uid, gid_t agent_gid);

}  // namespace corral::run
