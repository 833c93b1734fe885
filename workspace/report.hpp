// workspace/report.hpp — a reviewed workspace's changes in words: the
// listing (every deletion included), the flags, unified diffs of text files,
// sizes and digests of the others, and the diff's digest that `corral apply
// --expect` binds an apply to.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workspace/change.hpp"

namespace corral::workspace {

// "sha256:<hex>" over every change's path, kind and both sides'
// node_signature, in path order: the same changes give the same digest, and
// any difference a review shows (bytes, mode, owner, link text, xattrs, a
// deletion) changes it.
std::string diff_digest(const std::vector<Change>& changes);

// The flags of a change as words ("exec-bit", "git-internal", "ignored", ...).
std::vector<std::string> flag_words(const Change& c);

// Whether `path` is one of `selected` or lies below one ({}: every path).
bool selected(const std::string& path, const std::vector<std::string>& selected);

struct ReportSides {
    std::string upper_dir;       // the reviewed layer
    std::string workspace_dir;   // the host's DIR
};

// One change as text: its line ("M  src/a.c  [exec-bit]", a rename's
// "  (renamed from|to PATH)" after it), then for a regular file a unified
// diff (text) or sizes and digests (binary, or over 1 MiB; a rename's
// "same content"), and the old and new link text of a symlink.
std::string change_text(const Change& c, const ReportSides& sides);
// The --stat line of one change.
std::string change_stat_line(const Change& c);
nlohmann::json change_json(const Change& c, const ReportSides& sides, bool with_diff);

}  // namespace corral::workspace
