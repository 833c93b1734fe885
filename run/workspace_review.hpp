// run/workspace_review.hpp — a run's reviewed workspace (--review,
// docs/workspace.md) around the box: its upper layer made and the start
// fence taken before the plan is final; the layer copied into the run dir
// once the box is torn down.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/fd.hpp"
#include "workspace/review_record.hpp"
#include "workspace/review_upper.hpp"

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

// Once the box exists (review.upper set): review.json names this process
// and the fd it holds the layer's tmpfs by, with the agent's IDs, so `corral
// diff` can read the changes so far while the box runs (docs/workspace.md
// "While it runs"). Throws SysError.
void publish_live_upper(WorkspaceReview& review, uid_t agent_uid, gid_t agent_gid);

// A running review's layer, opened for reading (never written): the tmpfs
// through its supervisor's fd (/proc/PID/fd/N), that supervisor checked
// alive (its start time and boot, so a reused PID is not taken for it)
// before and after the open, and the fd checked to be a tmpfs. `dir` is its
// upper/ through this process's own fd; `ids` reads the agent's IDs as DIR's
// owner's. nullopt when the record names no live layer or its supervisor is
// gone. Throws SysError naming the call.
struct LiveLayer {
    Fd fd;
    std::string dir;
    workspace::IdTranslation ids;
};
std::optional<LiveLayer> open_live_upper(const workspace::ReviewRecord& record);

// After the teardown: the layer copied to RUN_DIR/workspace/upper with the
// agent's IDs as the owner's, review.json "ready" (or "failed", with why).
// Returns the lines to tell the operator.
std::vector<std::string> finish_review(WorkspaceReview& review, uid_t agent_uid, gid_t agent_gid);

}  // namespace corral::run
