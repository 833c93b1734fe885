// workspace/unified_diff.hpp — a unified diff (3 lines of context, GNU
// diff -u's format) of two texts, in process: a diff of a hundred changed
// files must not cost a hundred processes (docs/benchmarks.md "Reviewed
// workspace"). Myers' O(ND) algorithm; a pair further apart than
// `max_edits` lines is left to the caller (report.cpp runs diff -u then).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace corral::workspace {

// "" when the texts are equal; nullopt when more than max_edits lines would
// be deleted or inserted. A last line without a newline is marked as diff
// marks it ("\ No newline at end of file").
std::optional<std::string> unified_diff_text(std::string_view before, std::string_view after,
                                             const std::string& label_before, const std::string& label_after,
                                             std::size_t max_edits = 1000);

}  // namespace corral::workspace
