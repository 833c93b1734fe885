// workspace/review_journal.hpp — what the run's journal says of a review's
// end: the payloads of its workspace_apply and workspace_discard records
// (journal/journal.hpp; written after the run's terminal record by
// tools/cmd_workspace.cpp). docs/journal.md "After the run".
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "workspace/review_record.hpp"

namespace corral::workspace {

// Who acts: the real and effective UIDs, and the kernel's audit login UID
// (/proc/self/loginuid: the user who logged in, kept across sudo and su;
// null when unset or unreadable).
nlohmann::json invoker();

struct ApplyFacts {
    std::string diff_digest;                  // of the diff the apply was made from
    std::optional<std::string> expect;        // --expect, when given (then equal to diff_digest)
    std::vector<std::string> only;            // --only's paths
    std::vector<std::string> applied;
    std::vector<std::pair<std::string, std::string>> refused;  // path, why
};
// {"workspace", "diff_digest", "expect", "only", "applied", "refused":
// [{"path", "why"}], "written_as": {"uid", "gid"} (DIR's owner), "by": invoker()}.
// Paths as a terminal shows them (base/terminal_text.hpp: a one-to-one
// escape, so a box-made name that is not UTF-8 is still recorded exactly).
nlohmann::json apply_payload(const ReviewRecord& record, const ApplyFacts& facts);

// {"workspace", "diff_digest" (null when the diff could not be read:
// "diff_error" says why), "changes", "by": invoker()}.
nlohmann::json discard_payload(const ReviewRecord& record, const std::optional<std::string>& diff_digest,
                               std::size_t changes, const std::string& diff_error);

}  // namespace corral::workspace
